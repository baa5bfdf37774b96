"""What a closed, merged, gone or reopened item does to its session, as the intake applies it.

A live session whose item is closed (changed and closed this round, or not known
open) is checked with one look-up and closed through the one close path; a linked
PR likewise ends only its endpoint; an item seen open again clears the closed state
the-loop recorded. An item GitHub no longer has (an ``Issue`` that is ``gone``) ends
the same way with its checkouts kept, and its ledger says ``gone`` and why, so a
linked PR is not looked up again. The decisions are
:func:`~the_loop.intake.watched.decide_closure`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from the_loop.errors import TheLoopError
from the_loop.intake.events import Issue
from the_loop.intake.ports import Action, ItemKnowledge, LiveSession
from the_loop.intake.watched import (
    ClosureAction,
    ClosureDecision,
    ItemState,
    KnownState,
    Role,
    decide_closure,
)
from the_loop.portable.poll import CLOSED_STATE, Ledger
from the_loop.portable.store import POLL
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The ledger key beside the closure state that says why an item is gone.
GONE_WHY = "goneWhy"


def close_finished(
    sessions: Mapping[WorkItemRef, LiveSession], knowledge: ItemKnowledge, intake: IntakeView
) -> None:
    """Each live session's linked PRs, then its item; then every item GitHub said is open.
    A failure is reported for its item and the others still run."""
    for ref, session in sessions.items():
        if intake.stopping():
            return  # the reader keeps nothing of this round: the rest is read again
        try:
            for pr in session.pull_requests:
                _close_linked(ref, pr, knowledge, intake)
            if knowledge.known_open(ref) is not True:
                _close_work_item(knowledge.look_up(ref), intake)
        except TheLoopError as error:  # reported for this item; the others still run
            intake.counts.failed.append(f"{ref.ref}: closing: {error}")
    for ref, issue in knowledge.changed.items():
        if intake.stopping():
            return
        if issue.is_open:
            _clear_reopened(ref, intake)


def _close_work_item(issue: Issue, intake: IntakeView) -> None:
    item = ItemState(issue.is_open, issue.merged, issue.closed_by, issue.gone)
    known = KnownState(Role.WORK_ITEM, live=True)
    decision = decide_closure(item, known, authorized=intake.settings.policy.authorized)
    if decision.action is not ClosureAction.CLOSE_SESSION:
        return
    with intake.ports.hold(issue.ref):
        if any(s.ref == issue.ref for s in intake.ports.sessions()):  # not closed meanwhile
            _close_session(issue, decision, intake)


def _close_session(issue: Issue, decision: ClosureDecision, intake: IntakeView) -> None:
    """The one close path for a live session whose item closed, merged or went."""
    ports, ref = intake.ports, issue.ref
    ports.ledger.change(ref, lambda entry: _record_state(entry, decision.state, issue.gone))
    if issue.gone:
        ports.close_gone(ref, issue.gone)
        intake.counts.closed += 1
        intake.counts.actions.append(Action("gone", ref.ref, outcome="kept", reason=issue.gone))
        _emit_gone(intake, ref, None, decision, issue.gone)
        return
    removed, kept = ports.close(ref, decision.cleanup)
    intake.counts.closed += 1
    outcome = "cleaned" if decision.cleanup else "kept"
    closed = Action("closed", ref.ref, issue.closed_by, outcome=outcome, reason=decision.state)
    intake.counts.actions.append(replace(closed, checkouts_removed=removed, checkouts_kept=kept))
    ports.emit(
        "poll.closure",
        work_item=ref.ref,
        state=decision.state,
        action=str(decision.action),
        cleanup=decision.cleanup,
        closed_by=issue.closed_by,
    )


def _clear_reopened(ref: WorkItemRef, intake: IntakeView) -> None:
    """A work item seen open whose ledger still says closed or merged: the state goes."""
    ports = intake.ports
    ledger = ports.ledger.store.section(ref, POLL)
    recorded = ledger.get(CLOSED_STATE) if isinstance(ledger, dict) else None
    if not isinstance(recorded, str) or not recorded:
        return
    known = KnownState(Role.WORK_ITEM, live=False, recorded_state=recorded)
    authorized = intake.settings.policy.authorized
    decision = decide_closure(ItemState(True), known, authorized=authorized)
    if decision.action is not ClosureAction.CLEAR_CLOSED:
        return
    ports.ledger.change(ref, lambda entry: _record_state(entry, decision.state))
    intake.counts.actions.append(Action("reopened", ref.ref, reason=recorded))
    ports.emit(
        "poll.closure",
        work_item=ref.ref,
        state="",
        previous_state=recorded,
        action=str(decision.action),
        cleanup=False,
    )


def _close_linked(
    owner: WorkItemRef, pr: WorkItemRef, knowledge: ItemKnowledge, intake: IntakeView
) -> None:
    """A linked PR merged or closed ends only its endpoint and its state goes in the
    ledger; reopened, the state is cleared. Looked up only while its state is unknown;
    one already recorded closed is not looked at again until it changes."""
    ports = intake.ports
    changed = knowledge.changed.get(pr)
    known_open = knowledge.known_open(pr)
    if known_open and changed is None:
        return
    ledger = ports.ledger.store.pull_request_ledger(owner, pr) or {}
    recorded = str(ledger.get(CLOSED_STATE) or "")
    if recorded and not known_open and changed is None:
        return
    issue = changed if changed is not None else knowledge.look_up(pr)
    item = ItemState(issue.is_open, issue.merged, gone=issue.gone)
    known = KnownState(Role.LINKED_PULL_REQUEST, live=not recorded, recorded_state=recorded)
    decision = decide_closure(item, known, authorized=intake.settings.policy.authorized)
    if decision.action is ClosureAction.NOTHING:
        return
    if decision.action is ClosureAction.END_ENDPOINT:
        ports.end_endpoint(owner, pr, decision.state)
        intake.counts.closed += 1
        why = issue.gone or decision.state
        ended = Action("endpoint", owner.ref, reason=why, pull_request=pr.ref)
        intake.counts.actions.append(ended)
    ports.ledger.own(pr, owner)
    ports.ledger.change(pr, lambda entry: _record_state(entry, decision.state, issue.gone))
    if issue.gone:
        _emit_gone(intake, owner, pr, decision, issue.gone)
        return
    ports.emit(
        "poll.closure",
        work_item=owner.ref,
        pull_request=pr.ref,
        state=decision.state,
        previous_state=recorded,
        action=str(decision.action),
        cleanup=False,
    )


def _emit_gone(
    intake: IntakeView,
    owner: WorkItemRef,
    pr: WorkItemRef | None,
    decision: ClosureDecision,
    why: str,
) -> None:
    intake.ports.emit(
        "poll.item_gone",
        "warning",
        work_item=owner.ref,
        pull_request=pr.ref if pr is not None else "",
        action=str(decision.action),
        cleanup=False,
        why=why,
    )


def _record_state(ledger: Ledger, state: str, gone_why: str = "") -> None:
    """The ledger's closure state set to ``state`` (``""`` removes it), and why the item is
    gone when it is."""
    if state:
        ledger[CLOSED_STATE] = state
    else:
        ledger.pop(CLOSED_STATE, None)
    if gone_why:
        ledger[GONE_WHY] = gone_why
    else:
        ledger.pop(GONE_WHY, None)
