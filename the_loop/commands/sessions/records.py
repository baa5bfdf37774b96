"""``sessions register | list``: write and read session records.

``list`` only reads the stores (one read per local record and one per portable
record) and asks tmux once for every session's state (``sessions/listing.py``): it
never builds the dispatcher. ``link-pr`` and ``attach`` have modules of their own,
registered here between ``register`` and ``list`` and after ``list``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    Context,
    describe_root,
    format_parent,
    load_context,
    note,
    path_argument,
    warn,
    work_item_parent,
)
from the_loop.commands.render import Result, table_lines
from the_loop.commands.sessions import attach, link_pr, spending
from the_loop.commands.sessions.listing import (
    held_elsewhere,
    lane_phase,
    listed_rows,
    tmux_states,
    transcripts,
    with_agent_states,
)
from the_loop.commands.stores import Stores, open_stores
from the_loop.dispatch.harnesses import HARNESSES

if TYPE_CHECKING:
    from the_loop.agent.state import AgentState
from the_loop.errors import TheLoopError, UsageError
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import STATUSES, Session

LIST_HEADERS = [
    "WORK ITEM",
    "HARNESS",
    "SESSION ID",
    "TMUX",
    "STATUS",
    "SPENT",
    "CONTROL",
    "LAST EVENT",
    "PHASE",
    "AGENT",
    "CHECKOUT",
]
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]*\Z")


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``register``, ``link-pr``, ``list`` and ``attach``."""
    _add_register(actions, parents)
    link_pr.add_parsers(actions, parents)
    _add_list(actions, parents)
    spending.add_parsers(actions, parents)
    attach.add_parsers(actions, parents)


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


def session_id_type(text: str) -> str:
    """argparse ``type=`` for a harness session id: one printable token, not an option."""
    if not _SESSION_ID.match(text):
        raise argparse.ArgumentTypeError(
            f"invalid session id {text!r}: letters, digits and . _ : @ + = -, "
            "starting with a letter or digit"
        )
    return text


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


# -- list --------------------------------------------------------------------


def _ledger(stores: Stores, ref: str) -> dict[str, Any]:
    found = stores.store.section(ref, "poll")
    return found if isinstance(found, dict) else {}


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
        figures = spending.ledger_figures(context.config)
        ledgers = [_ledger(stores, session.work_item.ref) for session in sessions]
        spent = [figures(ledger) for ledger in ledgers]
    states = tmux_states(context.config)
    rows = listed_rows(sessions, commands, states)
    rows = [
        row._replace(figures=found, phase=lane_phase(ledger))
        for row, found, ledger in zip(rows, spent, ledgers, strict=True)
    ]
    rows = with_agent_states(rows, _observer(context, stores))
    if args.status is None:
        rows = held_elsewhere(rows, held_by_others(context))
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


def _observer(context: Context, stores: Stores) -> Callable[[Session], AgentState | None]:
    """What a session's agent is doing, asked of its pane and its hook log."""
    from the_loop.adapters.agent_watch import AgentWatch
    from the_loop.dispatch.tmux import TmuxRunner

    try:
        watch = AgentWatch.over(TmuxRunner.from_config(context.config), stores.registry)
    except ValueError:  # an invalid socket name: tmux cannot be asked

        def nothing(_session: Session) -> AgentState | None:
            return None

        return nothing

    def observe(session: Session) -> AgentState | None:
        return watch.state(session.work_item, session.harness, session.tmux_target)

    return observe


def held_by_others(context: Context) -> dict[str, dict[str, object]]:
    """The items other machines hold, as this machine's claim book says (none without one)."""
    from the_loop.adapters.claim_file import CLAIMS_FILE, FileClaimBook
    from the_loop.sessions.machine import MACHINE_FILE, read_machine_id

    local = context.layout.local_dir
    book = FileClaimBook(local / CLAIMS_FILE, context.layout.local_locks_dir / "claims.lock")
    try:
        mine = read_machine_id(local / MACHINE_FILE)
        holders = book.holders()
    except TheLoopError as error:
        warn(f"the items other machines hold are not shown: {error}")
        return {}
    return {
        ref.ref: {"machine": h.machine, "name": h.name, "start": h.start}
        for ref, h in holders.items()
        if h.machine != mine
    }


def _last_command(stores: Stores, session: Session) -> str | None:
    entry = stores.control.get(session.work_item)
    return entry.command if entry is not None else None
