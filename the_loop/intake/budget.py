"""A work item's budget, kept: metered each round, warned once, held when reached, raised
by an authorized ``budget +N``.

Each round (and each tending between them) meters the session's agent (the ``meter``
port: what the item's agents have spent, all its sessions together) and compares it
with the item's limits (``routing.budget`` under the item's own, from its raises). At
``warnAt`` of a limit one marked comment warns the ticket. When a limit is reached:
the agent's turn is interrupted (the ``interrupt`` port: the key the agent takes for
that, never a kill), one marked comment gives the figures, ``budget.exceeded`` is
emitted, and nothing more is delivered: the comments wait in the ledger, in order,
until a raise lifts the item under its limits; the held comments then go in once, in
order, and a new comment says so.

The item's ledger keeps all of it under ``budget`` (its own ``limits``, each ``raises``
by comment id, the ``warned``, ``exceeded`` and ``raised`` notices with the nonce each is
found by after a crash), so a second reader or a restarted one never says a thing twice,
and the budget travels with the item's portable record.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from the_loop.agent.state import WORKING, AgentState
from the_loop.errors import TheLoopError
from the_loop.intake.budget_rule import (
    KINDS,
    Crossing,
    Limits,
    Raise,
    amount_text,
    crossed,
    raised,
)
from the_loop.intake.budget_rule import parse_raise as parse_raise
from the_loop.intake.events import AGENT_COMMENT_MARKER, IssueComment
from the_loop.intake.ports import Action, LiveSession
from the_loop.portable.poll import SEEN_COMMENTS, Ledger
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: How long a turn runs before it is interrupted: Claude Code, interrupted before its
#: first output, puts the prompt back in its input box and shows no "Interrupted" line.
TURN_SHOWS_SECONDS = 5.0
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
OVER_BUDGET = "over-budget"


def budget_of(intake: IntakeView, ref: WorkItemRef) -> dict[str, Any]:
    """The item's budget record (``{}``: none yet)."""
    return dict(_dict(intake.ports.ledger.value(ref, BUDGET_KEY)))


def _dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}``."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def limits_of(intake: IntakeView, budget: dict[str, Any]) -> Limits:
    """The item's limits: the config's, its own on top."""
    return intake.settings.budget.over(_dict(budget.get("limits")))


def keep_budget(
    session: LiveSession,
    intake: IntakeView,
    state: AgentState | None,
    *,
    limited_only: bool = False,
) -> bool:
    """Meter ``session``, then warn, hold or lift as its item's budget says. True while
    the item is over its budget: nothing is delivered to it. An item without limits is
    metered only when its figures are due (for ``sessions list``), and with
    ``limited_only`` (the quick watch between tendings) not at all. What follows the
    figures is decided under the item's hold: two readers never both begin a notice."""
    ports, ref = intake.ports, session.ref
    budget = budget_of(intake, ref)
    limits = limits_of(intake, budget)
    if ports.meter is None or (limited_only and not limits.any):
        return _over(budget)
    try:
        spend = ports.meter(session, state, limits.any)
    except TheLoopError as error:
        ports.warn(f"{ref.ref}: could not meter the agent's spend: {error}")
        return _over(budget)
    if not limits.any and not _over(budget) and not _unsaid(budget):
        return False  # no limit to watch, nothing to say: the hold is not even taken
    if spend is None:
        return _over(budget)
    with ports.hold(ref):
        return _keep(session, intake, spend)


def _unsaid(budget: dict[str, Any]) -> bool:
    """Whether a notice was begun and not yet said, or its event not yet emitted."""
    return any(
        isinstance(budget.get(kind), dict)
        and (
            not _dict(budget.get(kind)).get("comment") or bool(_dict(budget.get(kind)).get("event"))
        )
        for kind in MARKERS
    )


def _keep(session: LiveSession, intake: IntakeView, spend: dict[str, Any]) -> bool:
    ref = session.ref
    budget = budget_of(intake, ref)  # again, under the hold
    limits = limits_of(intake, budget)
    # Figures only grow: another reader may have metered further while this one waited.
    total = _dict(_dict(intake.ports.ledger.value(ref, SPEND_KEY)).get("total"))
    spent = {kind: max(float(spend.get(kind, 0.0)), float(total.get(kind, 0.0))) for kind in KINDS}
    _finish_posts(session, intake, budget)
    if not limits.any:
        if _over(budget):
            _change(intake, ref, lambda b: b.pop("exceeded", None))
        return False
    crossing = crossed(spent, limits)
    if crossing is not None:
        if not _over(budget):
            _exceeded(session, intake, crossing, limits, spend)
        elif _dict(budget.get("exceeded")).get("limits") != limits.to_dict():
            # Raised, yet still over (its raise's comment said so): the same episode.
            _set(intake, ref, "exceeded", limits=limits.to_dict())
        if crossing.kind != "turns":  # a turns limit is met as a turn begins: it runs on
            _interrupt(session, intake)  # before the notice's post: spend stops first
        _say(ref, intake, "exceeded")
        return True
    if _over(budget):
        if _dict(budget.get("exceeded")).get("limits") == limits.to_dict():
            return True  # never lifted by a figure read lower, only by other limits
        _change(intake, ref, lambda b: b.pop("exceeded", None))
    warning = crossed(spent, limits, at=intake.settings.budget_warn_at)
    warned = budget.get("warned")
    if warning is not None and _dict(warned).get("limits") != limits.to_dict():
        event = {
            "work_item": ref.ref,
            "limit": warning.kind,
            "spent": warning.spent,
            "budget": warning.limit,
        }
        text = _warning_text(intake, warning, spend)
        _notice(session, intake, "warned", text, limits=limits, event=("budget.warned", event))
    return False


def _over(budget: dict[str, Any]) -> bool:
    return isinstance(budget.get("exceeded"), dict)


def _exceeded(
    session: LiveSession,
    intake: IntakeView,
    crossing: Crossing,
    limits: Limits,
    spend: dict[str, Any],
) -> None:
    ref = session.ref
    prefix = intake.settings.policy.grammar.prefix
    lines = [
        f"the-loop: this work item reached its budget: {crossing.said()}. A turn its agent "
        "was running is interrupted (never killed: its checkout and its conversation are "
        "kept) and nothing more is delivered to it; new comments wait, in order.",
        "",
        _figures(spend, limits),
        "",
        f"An authorized user raises it with a comment: `{prefix} budget +5` (dollars), "
        f"`{prefix} budget +2h` or `{prefix} budget +10 turns`.",
    ]
    event = {
        "work_item": ref.ref,
        "limit": crossing.kind,
        "spent": crossing.spent,
        "budget": crossing.limit,
        "spend": spend,
        "limits": limits.to_dict(),
    }
    _notice(
        session,
        intake,
        "exceeded",
        "\n".join(lines),
        limits=limits,
        crossing=crossing,
        say=False,
        event=("budget.exceeded", event),
    )


def _warning_text(intake: IntakeView, warning: Crossing, spend: dict[str, Any]) -> str:
    share = round(100 * intake.settings.budget_warn_at)
    return "\n".join(
        [
            f"the-loop: this work item has used {share} % of its budget: {warning.said()}. "
            "At its limit the agent's turn is interrupted and comments wait for a raise.",
            "",
            _figures(spend, None),
        ]
    )


def _figures(spend: dict[str, Any], limits: Limits | None) -> str:
    tokens = _dict(spend.get("tokens"))
    parts: list[str] = []
    for kind in KINDS:
        value = float(spend.get(kind, 0.0))
        limit = limits.get(kind) if limits is not None else None
        said = amount_text(kind, value)
        parts.append(f"{said} of {amount_text(kind, limit)}" if limit is not None else said)
    said_tokens = ", ".join(
        f"{int(tokens.get(name, 0)):,} {name}"
        for name in ("input", "output", "cacheRead", "cacheWrite")
    )
    return f"Spent: {'; '.join(parts)} (tokens: {said_tokens})."


def _interrupt(session: LiveSession, intake: IntakeView) -> None:
    """Interrupt the agent's running turn, once per turn: asked afresh, under the hold,
    whether it works (an Escape at an idle Claude Code opens its rewind menu)."""
    ports, ref = intake.ports, session.ref
    if ports.interrupt is None or ports.agent is None:
        return
    state = ports.agent(session)
    if state is None or state.state != WORKING:
        return
    if _dict(budget_of(intake, ref).get("exceeded")).get("interruptedTurn") == state.since:
        return  # this turn had its Escape
    if ports.clock() - state.since < TURN_SHOWS_SECONDS:
        return  # an Escape before its first output puts the prompt back in its box, unsaid
    try:
        ports.interrupt(session)
    except TheLoopError as error:
        ports.warn(f"{ref.ref}: could not interrupt the agent over its budget: {error}")
        return
    _set(intake, ref, "exceeded", interrupted=True, interruptedTurn=state.since)


def _notice(
    session: LiveSession,
    intake: IntakeView,
    kind: str,
    text: str,
    *,
    limits: Limits,
    crossing: Crossing | None = None,
    say: bool = True,
    event: tuple[str, dict[str, Any]] | None = None,
) -> None:
    """Record the notice (its nonce first) and its event, emit the event, then (with
    ``say``) say it once. An event a crash kept from being emitted is emitted next time."""
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

    _change(intake, session.ref, begin)
    _emit_pending(session.ref, intake, kind)
    if say:
        _say(session.ref, intake, kind)


def _emit_pending(ref: WorkItemRef, intake: IntakeView, kind: str) -> None:
    """Emit the event the ``kind`` record keeps, once (then dropped from the record)."""
    event = _dict(_dict(budget_of(intake, ref).get(kind)).get("event"))
    if not event:
        return
    name, f = str(event.get("name", "")), _dict(event.get("fields"))
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
    _set(intake, ref, kind, event=None)


def _finish_posts(session: LiveSession, intake: IntakeView, budget: dict[str, Any]) -> None:
    """Emit the events and say the notices a crash or a refused post left undone."""
    for kind in MARKERS:
        if _dict(budget.get(kind)).get("event"):
            _emit_pending(session.ref, intake, kind)
        if isinstance(budget.get(kind), dict) and not _dict(budget.get(kind)).get("comment"):
            _say(session.ref, intake, kind)


def _say(ref: WorkItemRef, intake: IntakeView, kind: str) -> None:
    """Post the ``kind`` notice once: one a crash left mid-post is looked for by its
    nonce first, never posted twice. Its id is kept (-1: said, its id unknown)."""
    ports = intake.ports
    value = budget_of(intake, ref).get(kind)
    notice = _dict(value)
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
        _set(intake, ref, kind, posting=True)
        try:
            posted = ports.github.post_comment(ref, f"{notice.get('body', '')}\n{tag}")
        except TheLoopError as error:
            ports.warn(f"{ref.ref}: could not say the budget on the ticket: {error}")
            return
        if posted is not None:
            ports.posted.remember_posted(posted)
        found = posted if posted is not None else -1
    _set(intake, ref, kind, posting=False, comment=found, body="")


def _set(intake: IntakeView, ref: WorkItemRef, kind: str, **values: Any) -> None:
    def change(budget: dict[str, Any]) -> None:
        if isinstance(budget.get(kind), dict):
            budget[kind] = _dict(budget[kind]) | values

    _change(intake, ref, change)


def _change(
    intake: IntakeView, ref: WorkItemRef, change: Callable[[dict[str, Any]], object]
) -> None:
    """One locked read-modify-write of the item's budget record."""

    def apply(ledger: Ledger) -> None:
        budget = _dict(ledger.get(BUDGET_KEY))
        change(budget)
        ledger[BUDGET_KEY] = budget

    intake.ports.ledger.change(ref, apply)


def raise_budget(intake: IntakeView, comment: IssueComment, text: str) -> str:
    """``budget +N`` from an authorized login: the limit of the item (a linked pull
    request's owner) raised once, by the comment's id, and said on the ticket; the
    comment is marked seen before any answer. The outcome word."""
    ports = intake.ports
    where, ref = comment.work_item, ports.ledger.owner_of(comment.work_item)
    more = parse_raise(text)
    if more is None:
        if ports.ledger.record_answer(where, str(comment.id)):  # answered once, crash or not
            _reply(intake, comment, f"`budget {text.strip()}` is not a raise the-loop reads")
            _command_said(intake, comment, "refused")
        return "refused"
    spent = _spent_of(ports.ledger.value(ref, SPEND_KEY))
    applied: list[float] = []

    def change(ledger: Ledger) -> None:
        budget = _dict(ledger.get(BUDGET_KEY))
        raises = _dict(budget.get("raises"))
        if str(comment.id) in raises:
            return  # raised already: a raise counts once
        own = _dict(budget.get("limits"))
        limit = raised(intake.settings.budget.over(own), spent, more)
        budget["limits"] = {**own, more.kind: limit}
        raises[str(comment.id)] = {"by": comment.login, more.kind: more.amount}
        budget["raises"] = raises
        still = crossed(spent, intake.settings.budget.over(budget["limits"]))
        held = isinstance(budget.get("exceeded"), dict)
        words = _raised_text(comment.login, more, limit, held=held, still=still)
        event = {
            "work_item": ref.ref,
            "actor": comment.login,
            "comment_id": comment.id,
            "limit": more.kind,
            "raised_by": more.amount,
            "budget": limit,
        }
        budget["raised"] = {
            "at": ports.clock(),
            "nonce": secrets.token_hex(8),
            "comment": 0,
            "body": f"{AGENT_COMMENT_MARKER}\n{words}",
            "event": {"name": "budget.raised", "fields": event},
        }
        if ref == where:
            ledger[SEEN_COMMENTS].append(str(comment.id))  # one write with the raise
        ledger[BUDGET_KEY] = budget
        applied.append(limit)

    ports.ledger.change(ref, change)
    if ref != where:
        ports.ledger.resolve_comment(where, str(comment.id))
    if not applied:
        return "seen"
    intake.counts.commands += 1
    _emit_pending(ref, intake, "raised")
    _command_said(intake, comment, "raised")
    _say(ref, intake, "raised")
    return "raised"


def _command_said(intake: IntakeView, comment: IssueComment, outcome: str) -> None:
    ref = comment.work_item
    action = Action("command", ref.ref, comment.login, BUDGET, comment.id, outcome=outcome)
    intake.counts.actions.append(action)
    intake.ports.emit(
        "poll.command",
        work_item=ref.ref,
        command=BUDGET,
        actor=comment.login,
        comment_id=comment.id,
        outcome=outcome,
    )


def _raised_text(
    login: str, more: Raise, limit: float, *, held: bool, still: Crossing | None
) -> str:
    said = f"the-loop: @{login} raised this work item's budget by {more.said()}: its "
    said += f"{more.kind} limit is {amount_text(more.kind, limit)}."
    if still is not None:
        return f"{said} It is still over its budget ({still.said()}): comments keep waiting."
    if held:
        return f"{said} The comments held while it was over its budget are delivered now, in order."
    return said


def _spent_of(spend: object) -> dict[str, float]:
    """What ``spend`` (the ledger's ``spend``) says was spent in all."""
    total = _dict(_dict(spend).get("total"))
    return {kind: float(total.get(kind, 0.0) or 0.0) for kind in KINDS}


def _reply(intake: IntakeView, comment: IssueComment, line: str) -> None:
    ports = intake.ports
    try:
        posted = ports.github.post_comment(
            comment.work_item, f"{AGENT_COMMENT_MARKER}\nthe-loop: {line}."
        )
    except TheLoopError as error:
        ports.warn(f"{comment.work_item.ref}: could not answer on the ticket: {error}")
        return
    if posted is not None:
        ports.posted.remember_posted(posted)
