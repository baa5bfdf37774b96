"""``sessions attach``: hand the terminal to a work item's tmux session.

``tmux attach-session`` replaces this process through an injectable ``execvp``;
a closed session is attached to read-only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from the_loop.commands.common import load_context, note, work_item_parent
from the_loop.commands.render import Result
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.errors import TheLoopError
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
        "the session is closed). A pull request with a tmux session of its own is attached "
        "to directly.",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="attach read-only (tmux attach-session -r)"
    )
    parser.set_defaults(func=run_attach)


def run_attach(args: argparse.Namespace, execvp: Exec = os.execvp) -> Result:
    """Replace this process with ``tmux attach-session`` on the work item's session.

    Read-only when asked or when the session is closed. ``TheLoopError`` (exit 1)
    when there is no record, no tmux target, or the tmux session is gone.
    """
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    session = _attachable(stores, ref)

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
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        execvp(argv[0], argv)
    except OSError as error:
        raise TheLoopError(f"cannot run {argv[0]}: {error.strerror or error}") from error
    return Result()


def _attachable(stores: Stores, ref: WorkItemRef) -> Session:
    """The record (or a PR's own endpoint) to attach to; ``TheLoopError`` when none has tmux."""
    session = stores.registry.find_by_work_item(ref, include_closed=True)
    if session is None:
        owner = stores.registry.record_owning(ref)
        endpoint = owner.endpoint_for(ref) if owner is not None else None
        session = endpoint if endpoint is not None and endpoint.tmux_target else owner
    if session is None:
        raise TheLoopError(f"{ref.ref} has no session record on this machine")
    if not session.tmux_target:
        raise TheLoopError(
            f"{session.ref}: its {session.harness or 'agent'} session has no tmux session "
            "(registered by hand?): attach to it where it runs"
        )
    return session
