"""``sessions register | link-pr | list | attach``: read and write session records.

``list`` only reads the stores (one read per local record and one per portable
record) and asks tmux once for every session's state (``sessions/listing.py``): it
never builds the dispatcher. ``attach`` hands the terminal to ``tmux attach-session``
through an injectable ``execvp``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    describe_root,
    format_parent,
    load_context,
    note,
    path_argument,
    warn,
    work_item_parent,
    work_item_type,
)
from the_loop.commands.render import Result, table_lines
from the_loop.commands.sessions.listing import listed_rows, tmux_states, transcripts
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.dispatch.harnesses import HARNESSES
from the_loop.errors import TheLoopError, UsageError, describe_error
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import CLOSED, STATUSES, Session

if TYPE_CHECKING:
    from the_loop.repofile.file import WorkItemStateFile

LIST_HEADERS = [
    "WORK ITEM",
    "HARNESS",
    "SESSION ID",
    "TMUX",
    "STATUS",
    "CONTROL",
    "LAST EVENT",
    "AGENT",
    "CHECKOUT",
]
_NUMBER = re.compile(r"#?([0-9]+)\Z")
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]*\Z")

#: ``os.execvp``-like: replaces the process (a test passes a recorder).
Exec = Callable[[str, list[str]], Any]


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``register``, ``link-pr``, ``list`` and ``attach``."""
    _add_register(actions, parents)
    _add_link_pr(actions, parents)
    _add_list(actions, parents)
    _add_attach(actions, parents)


def _add_register(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = actions.add_parser(
        "register",
        parents=[*parents, work_item_parent(), format_parent()],
        help="record a session that was started by hand",
        description="Record an agent session started outside the-loop, so the other actions "
        "know it. A second live session for the same work item is refused without --force.",
    )
    parser.add_argument("--harness", choices=HARNESSES, required=True, help="the agent harness")
    parser.add_argument(
        "--harness-session-id",
        metavar="ID",
        type=session_id_type,
        required=True,
        help="the harness's own session id (what `claude --resume ID` takes)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        type=path_argument,
        help="where the session runs (default: the current one)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace a live session record of the work item"
    )
    parser.set_defaults(func=run_register)


def _add_link_pr(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = actions.add_parser(
        "link-pr",
        parents=[*parents, work_item_parent(), format_parent()],
        help="record a pull request as delivering a work item",
        description="Link a pull request to the work item's session record, its work-item "
        "state file and its portable record. Linking twice changes nothing.",
    )
    parser.add_argument(
        "--pull-request",
        metavar="REF|N",
        type=pull_request_type,
        required=True,
        help="the pull request: a ref, or N / #N for a number in the work item's repository",
    )
    parser.set_defaults(func=run_link_pr)


def _add_list(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = actions.add_parser(
        "list",
        parents=[*parents, format_parent(table=True)],
        help="list the session records on this machine",
        description="One row per session record, with its agent's state (one tmux call: "
        "running, exited, gone, or unknown when tmux does not answer) and its checkout. "
        "No git.",
    )
    parser.add_argument("--status", choices=STATUSES, help="only records in this status")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list retained transcripts: loop-* tmux sessions no record names",
    )
    parser.set_defaults(func=run_list)


def _add_attach(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
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


def session_id_type(text: str) -> str:
    """argparse ``type=`` for a harness session id: one printable token, not an option."""
    if not _SESSION_ID.match(text):
        raise argparse.ArgumentTypeError(
            f"invalid session id {text!r}: letters, digits and . _ : @ + = -, "
            "starting with a letter or digit"
        )
    return text


def pull_request_type(text: str) -> WorkItemRef | int:
    """argparse ``type=`` for ``--pull-request``: a ref, or a number (``N`` or ``#N``)."""
    match = _NUMBER.match(text)
    if match is None:
        return work_item_type(text)
    number = int(match.group(1))
    if number <= 0:
        raise argparse.ArgumentTypeError(f"invalid pull request number {text!r}: must be positive")
    return number


# -- register ----------------------------------------------------------------


def run_register(args: argparse.Namespace) -> Result:
    """Write a session record for a session started by hand."""
    ref: WorkItemRef = args.work_item
    cwd = _session_dir(args.cwd)
    context = load_context(args)
    _warn_when_harness_missing(context.config, args.harness)
    stores = open_stores(context)
    previous = stores.registry.find_by_work_item(ref) if args.force else None
    session = Session(ref, args.harness, args.harness_session_id, cwd=str(cwd))
    stores.registry.register(session, force=args.force)
    if previous is not None and previous.tmux_target:
        warn(
            f"{ref.ref}: replaced a live session whose tmux session {previous.tmux_target} "
            "may still be running; end it with tmux if it is"
        )
    line = f"{ref.ref}: registered {args.harness} session {args.harness_session_id} in {cwd}"
    item = {"ref": ref.ref, "outcome": "registered", "session": session.to_dict()}
    return Result(items=(item,), text=lambda: (line,))


def _session_dir(given: Path | None) -> Path:
    path = Path(os.path.abspath(given if given is not None else Path.cwd()))
    if not path.is_dir():
        raise UsageError(f"--cwd {given}: not a directory")
    return path


def _warn_when_harness_missing(config: Any, harness: str) -> None:
    from the_loop.dispatch.harnesses import harnesses_from_config

    adapter = harnesses_from_config(config).get(harness)
    if adapter is not None and not adapter.available():
        warn(f"the {harness} binary {adapter.binary!r} is not on PATH; registering anyway")


# -- link-pr -----------------------------------------------------------------


def run_link_pr(args: argparse.Namespace) -> Result:
    """Link a pull request to the work item: registry, portable record, state file.

    An unreadable state file fails before anything is written; a later failure
    names the records already linked and the one that was not.
    """
    owner: WorkItemRef = args.work_item
    given: WorkItemRef | int = args.pull_request
    pr = owner.with_number(given) if isinstance(given, int) else given
    if pr == owner:
        raise UsageError(f"{pr.ref} cannot be linked to itself")
    stores = open_stores(load_context(args))
    before = stores.registry.find_by_work_item(owner, include_closed=True)
    if before is None:
        raise _no_record(owner)
    state_file = _state_file_of(before)
    if state_file is not None:
        state_file.load()  # unreadable: fails here, with nothing written
    _link_everywhere(stores, owner, pr, state_file)
    outcome = "already linked" if before.owns(pr) else "linked"
    line = f"{owner.ref}: {outcome} pull request {pr.ref}"
    item = {"ref": owner.ref, "outcome": outcome, "pullRequest": pr.ref}
    return Result(items=(item,), text=lambda: (line,))


def _no_record(owner: WorkItemRef) -> TheLoopError:
    return TheLoopError(
        f"{owner.ref} has no session record on this machine; start or register one first"
    )


def _link_everywhere(
    stores: Stores, owner: WorkItemRef, pr: WorkItemRef, state_file: WorkItemStateFile | None
) -> None:
    """Registry, then portable ledger, then state file; a failure names what was applied."""
    from the_loop.portable.poll import PollState

    applied: list[str] = []
    step = "the session record"
    try:
        if stores.registry.link_pull_request(owner, pr) is None:
            raise _no_record(owner)
        applied.append(step)
        step = "the portable record"
        PollState(stores.store, registry=stores.registry).own(pr, owner)
        applied.append(step)
        if state_file is not None:
            step = f"the work item state file {state_file.path}"
            state_file.link_pr(pr)
    except (TheLoopError, OSError, ValueError) as error:
        if not applied:
            raise
        raise TheLoopError(
            f"{owner.ref}: linked pull request {pr.ref} in {' and '.join(applied)} only; "
            f"not in {step}: {describe_error(error)}"
        ) from error


def _state_file_of(record: Session) -> WorkItemStateFile | None:
    """The work-item state file in the record's checkout, when the checkout has one."""
    if not record.cwd:
        return None
    from the_loop.repofile.file import WorkItemStateFile

    state_file = WorkItemStateFile(Path(record.cwd), record.work_item, on_warning=warn)
    return state_file if state_file.exists() else None


# -- list --------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> Result:
    """Every session record (optionally of one status), one item each; with ``--all`` the
    retained transcripts no record names after them.

    With none, the table prints nothing and JSON has no items. The items are
    encoded one by one as the renderer writes them.
    """
    context = load_context(args)
    stores = open_stores(context)
    with reading_every_record(stores):
        sessions = stores.registry.list_sessions(args.status)
        commands = [_last_command(stores, session) for session in sessions]
    states = tmux_states(context.config)
    rows = listed_rows(sessions, commands, states)
    if args.all and args.status is None:
        rows += transcripts(sessions, states)
    if not rows:
        note(f"no sessions in {describe_root(context)}")

    def text() -> list[str]:
        cells = [row.cells() for row in rows]
        return table_lines(LIST_HEADERS, cells) if cells else []

    return Result(items=(row.document() for row in rows), text=text)


@contextlib.contextmanager
def reading_every_record(stores: Stores) -> Generator[None]:
    """Snapshots of both stores (each file listed and parsed once) for a bulk read.

    The cyclic collector is paused meanwhile, and what was read is frozen out of its
    sight afterwards (``gc.freeze``): the records are kept until they are printed,
    so every collection would walk them again for nothing.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        with stores.registry.snapshot(), stores.store.snapshot():
            yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def _last_command(stores: Stores, session: Session) -> str | None:
    entry = stores.control.get(session.work_item)
    return entry.command if entry is not None else None


# -- attach ------------------------------------------------------------------


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
