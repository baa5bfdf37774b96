"""``the-loop poll [--once] | poll status | poll stop``: watch GitHub and close the loop.

One cycle (``--once``) or the daemon (a cycle every ``polling.intervalSeconds`` from
cycle start, the config re-read each cycle) under an exclusive ``flock`` on
``<root>/poll.pid``. The cycle itself is :func:`the_loop.polling.cycle.run_cycle`.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

from the_loop.commands.common import Context, format_parent, load_context, state_dir_parent, warn
from the_loop.commands.render import Result
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.dispatch.daemons import PollerLock, poller_holder
from the_loop.errors import EXIT_FAILED, EXIT_OK, TheLoopError, UsageError
from the_loop.fsio import read_json, write_json
from the_loop.github_backoff import Backoff

STOP_TIMEOUT_SECONDS = 30.0
#: Test-only: the delivery step at which the poller kills itself (the crash proof).
CRASH_AT_VARIABLE = "THE_LOOP_POLL_CRASH_AT"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``poll`` and its ``status`` and ``stop`` actions."""
    parents = [state_dir_parent(), format_parent()]
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "poll",
        parents=parents,
        help="watch GitHub: run keyword commands, deliver comments, close finished sessions",
        description="Poll the configured repositories: run the control keywords of authorized "
        "people, paste every other new comment into the live agent's pane exactly once, and "
        "close sessions whose ticket closed. Without --once, a cycle every "
        "polling.intervalSeconds until SIGTERM or SIGINT.",
    )
    parser.add_argument("--once", action="store_true", help="run one cycle and exit")
    parser.set_defaults(func=run_poll, action=None)
    actions = parser.add_subparsers(dest="action", metavar="<action>")
    status = actions.add_parser(
        "status", parents=parents, help="say whether a poller runs, and its last cycle"
    )
    status.set_defaults(func=run_status)
    stop = actions.add_parser("stop", parents=parents, help="stop the running poller")
    stop.set_defaults(func=run_stop)
    return parser


def run_poll(args: argparse.Namespace) -> Result:
    """One cycle with ``--once``; else the daemon until a signal (exit 0)."""
    context = load_context(args)
    _check_config(context)
    with _holding(context):
        if args.once:
            report, _ = _one_cycle(context)
            return _report_result(report)
        return _daemon(args)


def _check_config(context: Context) -> None:
    """Exit 2 with nothing to watch; warn when nobody may command."""
    from the_loop.commands.poll_ports import poll_settings

    settings = poll_settings(context.config)
    if not settings.repositories:
        raise UsageError("polling.repositories is empty: there is nothing to poll")
    if settings.policy.authorized.nobody:
        warn("routing.authorizedUsers is empty: no comment can command a session")


@contextmanager
def _holding(context: Context) -> Generator[PollerLock]:
    lock = PollerLock(context.layout.poll_pidfile)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def _one_cycle(context: Context, backoff: Backoff | None = None) -> tuple[dict[str, Any], Backoff]:
    from the_loop.commands.poll_cycle import one_cycle

    report, after = one_cycle(context, checkpoint=_crash_hook(), backoff=backoff)
    write_json(context.layout.local_dir / "poll-status.json", report)
    return report, after


def _crash_hook() -> Any:
    step = os.environ.get(CRASH_AT_VARIABLE, "")

    def checkpoint(at: str) -> None:
        if step and at == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def _report_result(report: dict[str, Any]) -> Result:
    failed: list[str] = report["failed"]
    lines = (
        f"poll: {report['requests']} requests ({report['not_modified']} not modified), "
        f"{report['delivered']} delivered, {report['commands']} commands, "
        f"{report['settled']} settled, {len(failed)} failed; "
        f"rate remaining {report['rate_remaining']}; {report['duration']:.2f}s",
    )
    return Result(
        items=(report,),
        text=lambda: lines,
        errors=tuple(failed),
        exit_code=EXIT_FAILED if failed else EXIT_OK,
    )


def _daemon(args: argparse.Namespace) -> Result:
    """A cycle every interval from cycle start; SIGTERM/SIGINT end it after the cycle."""
    from the_loop.commands.poll_ports import interval_seconds

    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()

    previous = [signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)]
    cycles = 0
    backoff: Backoff | None = None
    try:
        context = load_context(args)
        _stores(context).events.emit(
            "poll.started", interval_seconds=interval_seconds(context.config)
        )
        while not stopping.is_set():
            started = time.monotonic()
            context = load_context(args)  # the config is re-read every cycle
            wait = interval_seconds(context.config)
            try:
                report, backoff = _one_cycle(context, backoff)
                wait = float(report["next_cycle_in"])
            except TheLoopError as error:
                warn(f"poll: the cycle failed: {error}")
            cycles += 1
            stopping.wait(max(wait - (time.monotonic() - started), 0.0))
        _stores(context).events.emit("poll.stopped", cycles=cycles)
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    return Result(
        items=({"cycles": cycles},), text=lambda: (f"poll: stopped after {cycles} cycles",)
    )


def _stores(context: Context) -> Stores:
    return open_stores(context, source="poll")


def run_status(args: argparse.Namespace) -> Result:
    """Running or not (by the lock), its pid, and the last cycle's report."""
    context = load_context(args)
    pid = poller_holder(context.layout.poll_pidfile)
    try:
        last = read_json(context.layout.local_dir / "poll-status.json")
    except (OSError, ValueError):
        last = None
    item = {"running": pid is not None, "pid": pid, "lastCycle": last}
    line = f"poll: running (pid {pid})" if pid is not None else "poll: not running"
    return Result(items=(item,), text=lambda: (line,))


def run_stop(args: argparse.Namespace) -> Result:
    """Signal the lock's holder and wait for the lock; exit 1 after the timeout."""
    context = load_context(args)
    path = context.layout.poll_pidfile
    pid = poller_holder(path)
    if pid is None:
        return Result(items=({"stopped": False, "pid": None},), text=lambda: ("poll: not running",))
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while poller_holder(path) is not None:
        if time.monotonic() > deadline:
            raise TheLoopError(f"the poller (pid {pid}) still holds {path} after the timeout")
        time.sleep(0.1)
    return Result(
        items=({"stopped": True, "pid": pid},), text=lambda: (f"poll: stopped pid {pid}",)
    )


__all__ = ["add_parser", "open_dispatcher"]
