"""``sessions attach``: hand the terminal to a work item's tmux session.

``tmux attach-session`` replaces this process through an injectable ``execvp``; a
closed session is attached to read-only. Inside tmux (``$TMUX``) on the agent's server
the client is switched instead (a read-only look nests a client in this pane); on
another server, or with no terminal, it says which command to run where.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from the_loop.commands.common import Context, describe_root, load_context, note, work_item_parent
from the_loop.commands.render import Result
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.dispatch.process import DispatchError, describe
from the_loop.dispatch.tmux import TmuxRunner, client_socket
from the_loop.errors import TheLoopError, UsageError
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import CLOSED, Session

#: ``os.execvp``-like: replaces the process (a test passes a recorder).
Exec = Callable[[str, list[str]], Any]


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``attach``."""
    parser = actions.add_parser(
        "attach",
        parents=[*parents, work_item_parent()],
        help="attach the terminal to a work item's tmux session",
        description="Run `tmux attach-session` on the work item's session (read-only when "
        "the session is closed); inside tmux, switch this client to it. A pull request "
        "with a tmux session of its own is attached to directly.",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="attach read-only (tmux attach-session -r)"
    )
    parser.set_defaults(func=run_attach)


def stdio_is_a_terminal() -> bool:
    """Whether stdin and stdout are both terminals, as ``tmux attach-session`` needs."""
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


def run_attach(
    args: argparse.Namespace,
    execvp: Exec = os.execvp,
    *,
    environ: Mapping[str, str] = os.environ,
    has_terminal: Callable[[], bool] = stdio_is_a_terminal,
) -> Result:
    """Replace this process with ``tmux attach-session`` on the work item's session, or,
    inside tmux on the agent's server, switch the client to it.

    Read-only when asked or when the session is closed. ``TheLoopError`` (exit 1) when
    there is no record (naming the state root searched), no tmux target, the tmux session
    is gone, or the switch failed; ``UsageError`` (exit 2) when there is no terminal or
    the shell is inside another tmux server.
    """
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    session = _attachable(context, stores, ref)

    dispatcher = open_dispatcher(context, stores)
    state = dispatcher.liveness(session)
    if state == "absent":
        raise TheLoopError(
            f"{ref.ref}: tmux session {session.tmux_target} is gone; "
            "`the-loop sessions start` starts a new one"
        )
    if state == "unknown":
        raise TheLoopError(f"{ref.ref}: tmux did not answer about {session.tmux_target}")
    read_only = bool(args.read_only) or session.status == CLOSED
    if read_only and not args.read_only:
        note(f"{ref.ref}: the session is closed: attaching read-only")
    argv = dispatcher.attach_argv(session, read_only=read_only)
    client = environ.get("TMUX", "")
    if client:
        argv = _from_inside_tmux(ref, dispatcher.tmux, session.tmux_target, client, read_only)
        if not argv:
            switched = f"{ref.ref}: switched this tmux client to {session.tmux_target}"
            return Result(text=lambda: [switched])
    if not has_terminal():
        raise UsageError(
            f"{ref.ref}: attaching needs a terminal, and stdin or stdout is not one: "
            f"run `{describe(argv)}` from a terminal"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        execvp(argv[0], argv)
    except OSError as error:
        raise TheLoopError(f"cannot run {argv[0]}: {error.strerror or error}") from error
    return Result()


def _from_inside_tmux(
    ref: WorkItemRef, tmux: TmuxRunner, target: str, client: str, read_only: bool
) -> list[str]:
    """From inside tmux (``$TMUX`` is ``client``): switch the client to ``target`` and return
    ``[]``, or, for a read-only look, the argv of a read-only client nested in this pane
    (a client switched read-only would stay read-only wherever it goes next).

    ``UsageError`` when the client belongs to another tmux server; ``TheLoopError`` when
    tmux refuses the switch.
    """
    command = describe(tmux.attach_argv(target, read_only))
    if not tmux.serves(target, client):
        raise UsageError(
            f"{ref.ref}: this shell is inside another tmux server ({client_socket(client)}) "
            f"than the agent's, so its client cannot be switched there: run `{command}` "
            f"outside tmux, or nest it here with `env -u TMUX {command}`"
        )
    if read_only:
        return tmux.attach_argv(target, read_only, nested=True)
    try:
        tmux.switch_client(target)
    except DispatchError as error:
        raise TheLoopError(
            f"{ref.ref}: could not switch a tmux client to {target} ({error}): "
            f"run `{command}` from a terminal"
        ) from error
    return []


def _attachable(context: Context, stores: Stores, ref: WorkItemRef) -> Session:
    """The record (or a PR's own endpoint) to attach to; ``TheLoopError`` when none has tmux."""
    session = stores.registry.find_by_work_item(ref, include_closed=True)
    if session is None:
        owner = stores.registry.record_owning(ref)
        endpoint = owner.endpoint_for(ref) if owner is not None else None
        session = endpoint if endpoint is not None and endpoint.tmux_target else owner
    if session is None:
        raise TheLoopError(
            f"{ref.ref} has no session record in {describe_root(context)}; run it where the "
            "work item's .the-loop/ is, or name that state root with --state-root"
        )
    if not session.tmux_target:
        raise TheLoopError(
            f"{session.ref}: its {session.harness or 'agent'} session has no tmux session "
            "(registered by hand?): attach to it where it runs"
        )
    return session
