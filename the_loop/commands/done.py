"""``the-loop done <phase>``: the agent says a spec phase is done, from inside its checkout.

The work item is the one whose live session's checkout holds the working directory. The
phase must be the current, active one, and its artifact there with every required section
and committed; then the lane moves in one locked write of the repository file,
``spec.phase_done`` is emitted and what happens next is printed. Anything missing is one
line on stderr and exit 2, with nothing changed.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import format_parent, load_context, state_dir_parent, warn
from the_loop.commands.render import Result
from the_loop.spec.lane import PHASES

if TYPE_CHECKING:
    from the_loop.commands.common import Context
    from the_loop.commands.stores import Stores
    from the_loop.ref import WorkItemRef
    from the_loop.repofile.file import WorkItemStateFile
    from the_loop.spec.lane import Lane


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``done``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "done",
        parents=[state_dir_parent(), format_parent()],
        help="say a spec phase is done (the agent runs it in its checkout)",
        description="Say that PHASE of the work item's spec lane is done. Run by the agent "
        "inside its checkout: the work item is the one whose live session runs there. "
        "PHASE must be the current, active phase, and its artifact "
        "(docs/specs/<id>/requirements.md, design.md or tasks.md) must be committed with "
        "every required section. Then the lane moves: a gated phase (requirements, design) "
        "waits for a person's decision, any other passes and the next phase starts. "
        "Anything missing: one line on stderr, exit 2, nothing changed "
        "(`the-loop docs spec`).",
    )
    parser.add_argument("phase", choices=PHASES, help="the phase that is done")
    parser.set_defaults(func=run_done)
    return parser


def run_done(args: argparse.Namespace) -> Result:
    """Check the phase and its artifact, move the lane, say what comes next."""
    from the_loop.commands.stores import open_stores
    from the_loop.eventlog.log import utc_timestamp
    from the_loop.spec import lane
    from the_loop.spec.checkouts import session_holding, state_file_in

    context = load_context(args)
    stores = open_stores(context, source="spec")
    session = session_holding(stores.registry.list_sessions(), Path.cwd())
    state_file = state_file_in(session, on_warning=warn)
    if state_file is None or not state_file.exists():
        raise lane.LaneError(
            f"the spec lane has not started for {session.ref}: its checkout {session.cwd} "
            "holds no repository file for it"
        )
    phase: str = args.phase
    lane.done(state_file.load(), phase, at=utc_timestamp())  # refused here before any git
    artifact = _checked_artifact(context, state_file, phase, _review_marks(state_file, phase))
    moment = utc_timestamp()
    state = state_file.update(lambda current: lane.done(current, phase, at=moment))
    after = lane.read_lane(state)
    status = after.node(phase).status
    _mirror(stores, session.work_item, after)
    stores.events.emit(
        "spec.phase_done",
        work_item=session.ref,
        phase=phase,
        status=status,
        current_node=after.current,
        artifact=artifact or "",
    )
    item = {
        "workItem": session.ref,
        "phase": phase,
        "status": status,
        "currentNode": after.current,
        "artifact": artifact,
        "next": lane.next_phase(after),
    }
    return Result(items=[item], text=lambda: [_next_words(session.ref, phase, after)])


def _mirror(stores: Stores, ref: WorkItemRef, after: Lane) -> None:
    """Where the lane is now, in the item's ledger: ``sessions list`` shows it, and the
    readers make what it owes (the gate's comment, the next phase's paste) at their next
    look."""
    from the_loop.intake.spec_lane import mirror_lane
    from the_loop.portable.poll import PollState
    from the_loop.spec.lane import PHASES

    current = str(after.current)
    status = after.node(current).status if current in PHASES else ""
    mirror_lane(PollState(stores.store, registry=stores.registry).change, ref, current, status)


def _review_marks(state_file: WorkItemStateFile, phase: str) -> tuple[str, ...]:
    """The hidden lines of the review comments appended to ``phase``'s document when it was
    sent back: each decision for changes is one of them, so a document rewritten without
    its review comments is refused (once they were committed there: an append still owed
    is not the agent's to keep)."""
    from the_loop.spec.lane import CHANGES, decisions_of
    from the_loop.spec.words import entry_mark

    decided = decisions_of(state_file.load(), phase)
    return tuple(
        entry_mark(str(entry["link"]))
        for entry in decided
        if entry.get("outcome") == CHANGES and entry.get("link")
    )


def _checked_artifact(
    context: Context, state_file: WorkItemStateFile, phase: str, keeps: tuple[str, ...]
) -> str | None:
    """``phase``'s artifact as a path in the checkout (None: it has none), once it holds
    every required section and the review comments appended to it (``keeps``: their
    hidden lines) and is committed; ``UsageError`` naming what is missing."""
    from the_loop.dispatch.workspace import Workspace
    from the_loop.errors import UsageError
    from the_loop.spec.artifacts import check_artifact

    checked = check_artifact(state_file, phase, keeps)
    path = checked.path
    if path is None:
        return None
    workspace = Workspace.from_config(context.config)
    if checked.lost:  # only what was committed there was dropped by the agent
        checkout = state_file.checkout
        lost = tuple(mark for mark in checked.lost if workspace.ever_held(checkout, path, mark))
        checked = replace(checked, lost=lost)
    shown = os.path.relpath(path, state_file.checkout)
    problem = checked.problem(shown)
    if problem is not None:
        raise UsageError(f"{phase} is not done: {problem}")
    why = workspace.uncommitted(state_file.checkout, path)
    if why is not None:
        raise UsageError(
            f"{phase} is not done: {shown} is not committed ({why}); commit it on the work "
            "item's branch first"
        )
    why = workspace.unpushed(state_file.checkout, path)
    if why is not None:  # the gate's comment links it on GitHub: a reviewer must see it
        raise UsageError(f"{phase} is not done: {shown} is not pushed ({why}); push the branch")
    return shown


def _next_words(ref: str, phase: str, after: Lane) -> str:
    """What happens next, in one line."""
    from the_loop.spec.lane import WAITING

    if after.node(phase).status == WAITING:
        return (
            f"{ref}: {phase} is done and its gate is open: a person decides whether it passes "
            "or needs changes; the next phase starts once it passes"
        )
    following = after.current if after.current != phase else None
    if after.finished or following is None:
        return f"{ref}: {phase} is done, and the spec lane is finished"
    return f"{ref}: {phase} is done; the next phase, {following}, has started"
