"""The 👀 on GitHub for what reached a pane: its author sees that the agent has it.

Once a pane's deliveries are done, each row its ledger says ``delivered`` and not yet
``acked`` gets one reaction: a comment on the comment itself; a review on its first
inline comment (the row's ``comments``), or on its pull request when it holds none (the
REST API takes no reaction on a review); a check's paste none. Success writes
``"acked": true``; a refusal is a warning and counts in ``ackFailures``, tried again on
later cycles while the row is under a day old and refused fewer than three times. A
repeat after a crash is GitHub's no-op (200 for a reaction the login already made).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from the_loop.errors import TheLoopError
from the_loop.intake.ledger import DeliveryState
from the_loop.intake.ports import Acknowledge
from the_loop.portable.poll import DELIVERIES, Ledger
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

Row = dict[str, Any]
ACKED = "acked"
ACK_FAILURES = "ackFailures"
#: Refusals of a row's reaction before it is no longer tried.
MAX_ACK_FAILURES = 3
#: How long after its delivery a row's reaction is still tried (seconds).
ACK_WITHIN_SECONDS = 86_400.0


@dataclass(frozen=True)
class Reaction:
    """What one delivery's 👀 goes on: a ``kind`` of subject and its id in ``on``'s
    repository (``issue``: ``on`` itself, its number the id)."""

    on: WorkItemRef
    kind: str
    subject: int


def reaction_for(owner: WorkItemRef, row: Row) -> Reaction | None:
    """Where ``row``'s 👀 goes (None: a paste nobody wrote, such as a failed check's)."""
    key = str(row.get("id"))
    if key.isdigit():
        return Reaction(owner, "issue_comment", int(key))
    if not key.startswith("review-"):
        return None
    pull = _pull_request(row.get("pullRequest"))
    comments = row.get("comments")
    listed = cast(list[Any], comments) if isinstance(comments, list) else []
    first = next((c for c in listed if _is_id(c)), None)
    if first is not None:
        return Reaction(pull or owner, "review_comment", first)
    return Reaction(pull, "issue", pull.number) if pull is not None else None


def owed(row: Row, now: float) -> bool:
    """Whether ``row`` is delivered, not acknowledged, and still worth a try."""
    at, failures = row.get("at"), row.get(ACK_FAILURES, 0)
    return (
        row.get("state") == DeliveryState.DELIVERED
        and row.get(ACKED) is not True
        and isinstance(at, int | float)
        and now - at < ACK_WITHIN_SECONDS
        and _count(failures) < MAX_ACK_FAILURES
    )


def acknowledge_delivered(owner: WorkItemRef, intake: IntakeView) -> None:
    """One 👀 for each of ``owner``'s delivered rows that owes one; a refusal is a warning
    (the deliveries stand), a stop asked for ends it before the next reaction."""
    ports = intake.ports
    acknowledge = ports.acknowledge
    if acknowledge is None:
        return
    now = ports.clock()
    for row in ports.ledger.deliveries(owner):
        reaction = reaction_for(owner, row) if owed(row, now) else None
        if reaction is None:
            continue
        if intake.stopping():
            return
        _react(intake, owner, str(row.get("id")), reaction, acknowledge)


def _react(
    intake: IntakeView, owner: WorkItemRef, key: str, reaction: Reaction, acknowledge: Acknowledge
) -> None:
    """One reaction; then ``acked`` and its event, or a counted refusal and a warning."""
    ports = intake.ports
    try:
        acknowledge(reaction.on, reaction.kind, reaction.subject)
    except TheLoopError as error:
        failures = _note_failure(intake, owner, key)
        given_up = failures >= MAX_ACK_FAILURES
        then = "not tried again" if given_up else "tried again next cycle"
        ports.warn(
            f"{owner.ref}: could not acknowledge {_what(key)} with an eyes reaction on "
            f"GitHub ({then}): {error}"
        )
        ports.emit(
            "poll.acknowledge_failed",
            "warning",
            work_item=owner.ref,
            key=key,
            kind=reaction.kind,
            subject_id=reaction.subject,
            failures=failures,
            given_up=given_up,
            error=str(error),
        )
        return
    ports.checkpoint("after-acknowledged")
    ports.ledger.change(owner, _changing(key, _acked))
    intake.counts.acknowledged += 1
    ports.emit(
        "poll.acknowledged",
        work_item=owner.ref,
        key=key,
        kind=reaction.kind,
        subject_id=reaction.subject,
    )


def _note_failure(intake: IntakeView, owner: WorkItemRef, key: str) -> int:
    """Count one more refusal on ``key``'s row; the count now."""
    counted: list[int] = []

    def count(row: Row) -> None:
        counted.append(_count(row.get(ACK_FAILURES)) + 1)
        row[ACK_FAILURES] = counted[-1]

    intake.ports.ledger.change(owner, _changing(key, count))
    return counted[0] if counted else MAX_ACK_FAILURES


def _acked(row: Row) -> None:
    row[ACKED] = True
    row.pop(ACK_FAILURES, None)


def _changing(key: str, change: Callable[[Row], None]) -> Callable[[Ledger], None]:
    """A ledger change applying ``change`` to the delivery row keyed ``key``."""

    def apply(stored: Ledger) -> None:
        rows = stored.get(DELIVERIES)
        for row in cast(list[Any], rows) if isinstance(rows, list) else []:
            if isinstance(row, dict) and str(cast(Row, row).get("id")) == key:
                change(cast(Row, row))

    return apply


def _what(key: str) -> str:
    if key.startswith("review-"):
        return f"review {key.removeprefix('review-')}"
    return f"comment {key}"


def _pull_request(value: object) -> WorkItemRef | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return WorkItemRef.parse(value)
    except ValueError:
        return None


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _count(value: object) -> int:
    """A stored count; 0 for anything that is not one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
