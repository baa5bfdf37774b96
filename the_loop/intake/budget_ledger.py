"""A work item's budget as its ledger keeps it, and its notices: each kept before it is
posted (its nonce first, its event with it), said once and emitted once, crash or not.

The item's ledger keeps all of it under ``budget``: its own ``limits``, each of its
``raises`` by comment id, and the ``warned``, ``exceeded`` and ``raised`` notices, each
with the nonce its comment is found by after a crash and the event it still owes. A
second reader or a restarted one never says a thing twice, and the budget travels with
the item's portable record.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from the_loop.errors import TheLoopError
from the_loop.intake.budget_rule import OVER_BUDGET as OVER_BUDGET
from the_loop.intake.budget_rule import Crossing, Limits
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.ports import LiveSession
from the_loop.portable.poll import Ledger
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The ledger key of what the item's agents spent (the meter writes it).
SPEND_KEY = "spend"
#: The ledger key of the item's budget, and the verb that raises it.
BUDGET_KEY = BUDGET = "budget"
#: The marker of each notice kind, so a warning is told from an exceeded notice.
MARKERS = {
    "warned": "<!-- the-loop:budget-warning nonce={nonce} -->",
    "exceeded": "<!-- the-loop:budget-exceeded nonce={nonce} -->",
    "raised": "<!-- the-loop:budget-raised nonce={nonce} -->",
}


def budget_of(intake: IntakeView, ref: WorkItemRef) -> dict[str, Any]:
    """The item's budget record (``{}``: none yet)."""
    return dict(dict_of(intake.ports.ledger.value(ref, BUDGET_KEY)))


def dict_of(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}``."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def limits_of(intake: IntakeView, budget: dict[str, Any]) -> Limits:
    """The item's limits: the config's, its own on top."""
    return intake.settings.budget.over(dict_of(budget.get("limits")))


def unsaid(budget: dict[str, Any]) -> bool:
    """Whether a notice was begun and not yet said, or its event not yet emitted."""
    return any(
        isinstance(budget.get(kind), dict)
        and (
            not dict_of(budget.get(kind)).get("comment")
            or bool(dict_of(budget.get(kind)).get("event"))
        )
        for kind in MARKERS
    )


def over(budget: dict[str, Any]) -> bool:
    return isinstance(budget.get("exceeded"), dict)


def notice(
    session: LiveSession,
    intake: IntakeView,
    kind: str,
    text: str,
    *,
    limits: Limits,
    crossing: Crossing | None = None,
    post: bool = True,
    event: tuple[str, dict[str, Any]] | None = None,
) -> None:
    """Record the notice (its nonce first) and its event, emit the event, then (with
    ``post``) say it once. An event a crash kept from being emitted is emitted next time."""
    record: dict[str, Any] = {
        "at": intake.ports.clock(),
        "limits": limits.to_dict(),
        "nonce": secrets.token_hex(8),
        "comment": 0,
        "body": f"{AGENT_COMMENT_MARKER}\n{text}",
    }
    if crossing is not None:
        record |= {"limit": crossing.kind, "spent": crossing.spent}
    if event is not None:
        record["event"] = {"name": event[0], "fields": event[1]}

    def begin(budget: dict[str, Any]) -> None:
        budget[kind] = record

    change_budget(intake, session.ref, begin)
    emit_pending(session.ref, intake, kind)
    if post:
        say(session.ref, intake, kind)


def emit_pending(ref: WorkItemRef, intake: IntakeView, kind: str) -> None:
    """Emit the event the ``kind`` record keeps, once (then dropped from the record)."""
    event = dict_of(dict_of(budget_of(intake, ref).get(kind)).get("event"))
    if not event:
        return
    name, f = str(event.get("name", "")), dict_of(event.get("fields"))
    emit, item = intake.ports.emit, f.get("work_item")
    if name == "budget.exceeded":
        emit(
            "budget.exceeded",
            "warning",
            work_item=item,
            limit=f.get("limit"),
            spent=f.get("spent"),
            budget=f.get("budget"),
            spend=f.get("spend"),
            limits=f.get("limits"),
        )
    elif name == "budget.warned":
        emit(
            "budget.warned",
            work_item=item,
            limit=f.get("limit"),
            spent=f.get("spent"),
            budget=f.get("budget"),
        )
    elif name == "budget.raised":
        emit(
            "budget.raised",
            work_item=item,
            actor=f.get("actor"),
            comment_id=f.get("comment_id"),
            limit=f.get("limit"),
            raised_by=f.get("raised_by"),
            budget=f.get("budget"),
        )
    set_notice(intake, ref, kind, event=None)


def finish_posts(session: LiveSession, intake: IntakeView, budget: dict[str, Any]) -> None:
    """Emit the events and say the notices a crash or a refused post left undone."""
    for kind in MARKERS:
        if dict_of(budget.get(kind)).get("event"):
            emit_pending(session.ref, intake, kind)
        if isinstance(budget.get(kind), dict) and not dict_of(budget.get(kind)).get("comment"):
            say(session.ref, intake, kind)


def say(ref: WorkItemRef, intake: IntakeView, kind: str) -> None:
    """Post the ``kind`` notice once: one a crash left mid-post is looked for by its
    nonce first, never posted twice. Its id is kept (-1: said, its id unknown)."""
    ports = intake.ports
    value = budget_of(intake, ref).get(kind)
    notice = dict_of(value)
    if not isinstance(value, dict) or notice.get("comment"):
        return
    tag = MARKERS[kind].format(nonce=notice.get("nonce", ""))
    found: int | None = None
    if notice.get("posting"):
        try:
            found = next((c.id for c in ports.github.thread(ref) if tag in c.body), None)
        except TheLoopError as error:
            ports.warn(f"{ref.ref}: could not look for the budget notice: {error}")
            return
    if found is None:
        set_notice(intake, ref, kind, posting=True)
        try:
            posted = ports.github.post_comment(ref, f"{notice.get('body', '')}\n{tag}")
        except TheLoopError as error:
            ports.warn(f"{ref.ref}: could not say the budget on the ticket: {error}")
            return
        if posted is not None:
            ports.posted.remember_posted(posted)
        found = posted if posted is not None else -1
    set_notice(intake, ref, kind, posting=False, comment=found, body="")


def set_notice(intake: IntakeView, ref: WorkItemRef, kind: str, **values: Any) -> None:
    def change(budget: dict[str, Any]) -> None:
        if isinstance(budget.get(kind), dict):
            budget[kind] = dict_of(budget[kind]) | values

    change_budget(intake, ref, change)


def change_budget(
    intake: IntakeView, ref: WorkItemRef, change: Callable[[dict[str, Any]], object]
) -> None:
    """One locked read-modify-write of the item's budget record."""

    def apply(ledger: Ledger) -> None:
        budget = dict_of(ledger.get(BUDGET_KEY))
        change(budget)
        ledger[BUDGET_KEY] = budget

    intake.ports.ledger.change(ref, apply)
