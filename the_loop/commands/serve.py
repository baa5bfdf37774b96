"""``the-loop serve [--host H] [--port P] [--expose] | serve status | serve stop``: the
local API (read-only, closed to everyone but the operator), in the foreground.

The server (:class:`the_loop.api.server.ApiServer`, imported here alone) runs under an
exclusive ``flock`` on ``<root>/locks/daemons/serve.lock``; its token is
``local/api-token`` (made once, mode 0600); decision 027 says why and what it refuses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

from the_loop.commands.common import Context, format_parent, load_context, warn
from the_loop.commands.render import Result, progress
from the_loop.errors import UsageError

STOP_TIMEOUT_SECONDS = 30.0
STATUS_NAME = "serve-status.json"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``serve`` and its ``status`` and ``stop`` actions."""
    parents = [format_parent()]
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        parents=parents,
        help="serve the local read-only API to the operator (a token on every route)",
        description="Serve the local API on api.host:api.port (default 127.0.0.1:8788) in the "
        "foreground until SIGTERM or SIGINT. Every route takes the token in local/api-token "
        "(made once, mode 0600) as Authorization: Bearer; a Host other than the loopback names "
        "and the bound host is refused (421); no answer carries a CORS header.",
    )
    parser.add_argument("--host", metavar="ADDRESS", help="listen on ADDRESS (default api.host)")
    parser.add_argument(
        "--port",
        metavar="N",
        type=_port,
        help="listen on port N; 0 picks a free one (default api.port)",
    )
    parser.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        help="also answer requests whose Host is NAME (a name clients use for an exposed "
        "server); repeatable",
    )
    parser.add_argument(
        "--expose",
        action="store_true",
        help="allow an address beyond loopback: anyone who can reach it and holds the token "
        "reads every session and event of this state root",
    )
    parser.set_defaults(func=run_serve, action=None)
    actions = parser.add_subparsers(dest="action", metavar="<action>")
    status = actions.add_parser(
        "status", parents=parents, help="say whether a server runs, and where"
    )
    status.set_defaults(func=run_status)
    stop = actions.add_parser("stop", parents=parents, help="stop the running server")
    stop.set_defaults(func=run_stop)
    link = actions.add_parser(
        "link",
        parents=parents,
        help="print a new link that opens the board (once, within ten minutes)",
    )
    link.set_defaults(func=run_link)
    return parser


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text!r}")
    return int(text)


def run_serve(args: argparse.Namespace) -> Result:
    """The server until SIGTERM or SIGINT (exit 0)."""
    from the_loop.api.gate import is_loopback

    context = load_context(args)
    config = context.config
    host = args.host or config.get_str("api.host")
    port = args.port if args.port is not None else int(config.get_float("api.port"))
    if not is_loopback(host) and not args.expose:
        raise UsageError(
            f"serve: refusing to listen on {host}, beyond loopback: anyone who reaches it with "
            "the token reads this state root; give --expose to mean it"
        )
    from the_loop.dispatch.daemons import DaemonLock, server_files

    lock = DaemonLock(server_files(context.layout))
    lock.acquire()
    try:
        return _serve(context, args, host, port)
    finally:
        lock.release()


def _serve(context: Context, args: argparse.Namespace, host: str, port: int) -> Result:
    from the_loop.api.gate import allowed_hosts, is_loopback
    from the_loop.api.routes import Served, route
    from the_loop.api.server import ApiServer
    from the_loop.api.token import Codes, api_token, mint_code
    from the_loop.api.views import Views
    from the_loop.commands.crash import report_bug
    from the_loop.commands.sessions.records import held_by_others
    from the_loop.eventlog.log import EventLog, utc_timestamp

    layout = context.layout
    token = api_token(layout.api_token, make=True)
    views = Views(context, lambda: held_by_others(context))
    served = Served(
        context,
        _global_flags(args, context),
        lambda: daemons(context),
        Codes(token),
        token,
        views,
        _config_why(args, context),
    )
    server = ApiServer(
        lambda target: route(served, target),
        token=token,
        hosts=allowed_hosts(host, args.allow_host or ()),
        host=host,
        port=port,
        on_bug=lambda error: warn(f"serve: {report_bug(error, args, sys.argv[1:])}"),
    )
    bound_host, bound_port = server.bind()
    url = f"http://{_url_host(bound_host)}:{bound_port}"
    events = EventLog(layout.event_log, source="serve")
    exposed = not is_loopback(bound_host)
    events.emit(
        "serve.started",
        "warning" if exposed else "info",
        host=bound_host,
        port=bound_port,
        exposed=exposed,
    )
    if exposed:
        warn(
            f"serve: listening beyond loopback on {url} (--expose): guard the token in "
            f"{layout.api_token}"
        )
    status: dict[str, object] = {
        "pid": os.getpid(),
        "url": url,
        "startedAt": utc_timestamp(),
        "stoppedAt": None,
    }
    _write_status(context, status)

    def ready() -> None:  # once SIGTERM is handled and the listener accepts
        progress(
            f"serve: listening on {url} (pid {os.getpid()}); the token is in {layout.api_token}"
        )
        link = f"{url}/login?code={mint_code(token)}"
        progress(f"serve: open the board (once, within ten minutes): {link}")

    server.on_ready = ready
    try:
        server.serve(handle_signals=True)
    finally:
        _write_status(context, {**status, "stoppedAt": utc_timestamp()})
    events.emit("serve.stopped", signal=server.signal_name, answered=server.answered)
    item = {"stopped": True, "signal": server.signal_name, "url": url, "answered": server.answered}
    return Result(items=(item,), text=lambda: (f"serve: stopped ({server.answered} answered)",))


def _config_why(args: argparse.Namespace, context: Context) -> str:
    """How the config file in use was found, in words (the search order of cli.md)."""
    source = context.config.source
    if source is None:
        return "no config file was found: every setting is its default"
    if getattr(args, "config", None):
        return "named by --config"
    if os.environ.get("THE_LOOP_CLI_CONFIG"):
        return "named by $THE_LOOP_CLI_CONFIG"
    if source.parent.parent == Path.home():
        return "the home's ~/.the-loop/cli-config.yaml"
    return "the nearest .the-loop/cli-config.yaml at or above the working directory"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _global_flags(args: argparse.Namespace, context: Context) -> list[str]:
    """The flags a command read of the API is given: this server's config and root."""
    flags = ["--state-root", str(context.layout.root)]
    source = context.config.source
    if getattr(args, "config", None) and source is not None:
        flags = ["--config", str(source), *flags]
    return flags


def daemons(context: Context) -> list[dict[str, object]]:
    """Each daemon of the state root: its name, whether it runs and its pid."""
    from the_loop.dispatch.daemons import daemon_pid, poller_files, receiver_files, server_files

    layout = context.layout
    found: list[dict[str, object]] = []
    for files in (poller_files(layout), receiver_files(layout), server_files(layout)):
        pid = daemon_pid(files)
        found.append({"name": files.name, "running": pid is not None, "pid": pid})
    return found


def _write_status(context: Context, status: dict[str, object]) -> None:
    from the_loop.fsio import write_json

    write_json(context.layout.local_dir / STATUS_NAME, status)


def run_status(args: argparse.Namespace) -> Result:
    """Running or not (by the lock), its pid and the address it serves."""
    from the_loop.dispatch.daemons import daemon_pid, server_files
    from the_loop.fsio import read_bytes

    context = load_context(args)
    pid = daemon_pid(server_files(context.layout))
    raw = read_bytes(context.layout.local_dir / STATUS_NAME)
    try:
        status: object = json.loads(raw) if raw is not None else None
    except ValueError:
        status = None
    said = cast(dict[str, object], status) if isinstance(status, dict) else {}
    url = said.get("url") if said.get("pid") == pid else None
    item = {"running": pid is not None, "pid": pid, "url": url}
    if pid is None:
        text = ("serve: not running",)
    else:
        text = (f"serve: running (pid {pid})" + (f" on {url}" if url else ""),)
    return Result(items=(item,), text=lambda: text)


def run_stop(args: argparse.Namespace) -> Result:
    """Signal the lock's holder and wait for the lock; exit 1 after the timeout."""
    from the_loop.dispatch.daemons import server_files, stop_holder

    context = load_context(args)
    pid = stop_holder(server_files(context.layout), timeout=STOP_TIMEOUT_SECONDS)
    if pid is None:
        return Result(
            items=({"stopped": False, "pid": None},), text=lambda: ("serve: not running",)
        )
    text = (f"serve: stopped pid {pid}",)
    return Result(items=({"stopped": True, "pid": pid},), text=lambda: text)


def run_link(args: argparse.Namespace) -> Result:
    """A new single-use link to the running server's board (exit 1 when none runs)."""
    from the_loop.api.token import api_token, mint_code
    from the_loop.errors import TheLoopError

    status = run_status(args)
    [item] = list(status.items)
    url = item.get("url")
    if not item.get("running") or not isinstance(url, str):
        raise TheLoopError("serve: not running (start it with `the-loop serve`)")
    link = f"{url}/login?code={mint_code(api_token(load_context(args).layout.api_token))}"
    return Result(items=({"link": link, "expiresInSeconds": 600},), text=lambda: (link,))
