"""A work item's budget, kept: metered each round, warned once, held when reached.

Each round (and each tending between them, and every 2 s for items with a limit) meters
the session's agent (the ``meter`` port: what the item's agents have spent, all its
sessions together) and compares it with the item's limits (``routing.budget`` under the
item's own, from its raises: :mod:`budget_raise`). At ``warnAt`` of a limit one marked
comment warns the ticket. When a limit is reached: the agent's turn is interrupted (the
``interrupt`` port: the key the agent takes for that, never a kill), one marked comment
gives the figures, ``budget.exceeded`` is emitted, and nothing more is delivered: the
comments wait in the ledger, in order, until a raise lifts the item under its limits.
What the ledger keeps, and how each notice is said once: :mod:`budget_ledger`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from the_loop.agent.state import WORKING, AgentState
from the_loop.errors import TheLoopError
from the_loop.intake.budget_ledger import BUDGET as BUDGET
from the_loop.intake.budget_ledger import BUDGET_KEY as BUDGET_KEY
from the_loop.intake.budget_ledger import OVER_BUDGET as OVER_BUDGET
from the_loop.intake.budget_ledger import (
    SPEND_KEY,
    budget_of,
    change_budget,
    dict_of,
    finish_posts,
    limits_of,
    notice,
    over,
    say,
    set_notice,
    unsaid,
)
from the_loop.intake.budget_raise import raise_budget as raise_budget
from the_loop.intake.budget_rule import KINDS, Crossing, Limits, amount_text, crossed
from the_loop.intake.ports import LiveSession

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: How long a turn runs before it is interrupted: Claude Code, interrupted before its
#: first output, puts the prompt back in its input box and shows no "Interrupted" line.
TURN_SHOWS_SECONDS = 5.0


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
        return over(budget)
    try:
        spend = ports.meter(session, state, limits.any)
    except TheLoopError as error:
        ports.warn(f"{ref.ref}: could not meter the agent's spend: {error}")
        return over(budget)
    if not limits.any and not over(budget) and not unsaid(budget):
        return False  # no limit to watch, nothing to say: the hold is not even taken
    if spend is None:
        return over(budget)
    with ports.hold(ref):
        return _keep(session, intake, spend)


def _keep(session: LiveSession, intake: IntakeView, spend: dict[str, Any]) -> bool:
    ref = session.ref
    budget = budget_of(intake, ref)  # again, under the hold
    limits = limits_of(intake, budget)
    # Figures only grow: another reader may have metered further while this one waited.
    total = dict_of(dict_of(intake.ports.ledger.value(ref, SPEND_KEY)).get("total"))
    spent = {kind: max(float(spend.get(kind, 0.0)), float(total.get(kind, 0.0))) for kind in KINDS}
    finish_posts(session, intake, budget)
    if not limits.any:
        if over(budget):
            change_budget(intake, ref, lambda b: b.pop("exceeded", None))
        return False
    crossing = crossed(spent, limits)
    if crossing is not None:
        if not over(budget):
            _exceeded(session, intake, crossing, limits, spend)
        elif dict_of(budget.get("exceeded")).get("limits") != limits.to_dict():
            # Raised, yet still over (its raise's comment said so): the same episode.
            set_notice(intake, ref, "exceeded", limits=limits.to_dict())
        if crossing.kind != "turns":  # a turns limit is met as a turn begins: it runs on
            _interrupt(session, intake)  # before the notice's post: spend stops first
        say(ref, intake, "exceeded")
        return True
    if over(budget):
        if dict_of(budget.get("exceeded")).get("limits") == limits.to_dict():
            return True  # never lifted by a figure read lower, only by other limits
        change_budget(intake, ref, lambda b: b.pop("exceeded", None))
    warning = crossed(spent, limits, at=intake.settings.budget_warn_at)
    warned = budget.get("warned")
    if warning is not None and dict_of(warned).get("limits") != limits.to_dict():
        event = {
            "work_item": ref.ref,
            "limit": warning.kind,
            "spent": warning.spent,
            "budget": warning.limit,
        }
        text = _warning_text(intake, warning, spend)
        notice(session, intake, "warned", text, limits=limits, event=("budget.warned", event))
    return False


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
    notice(
        session,
        intake,
        "exceeded",
        "\n".join(lines),
        limits=limits,
        crossing=crossing,
        post=False,
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
    tokens = dict_of(spend.get("tokens"))
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
    if dict_of(budget_of(intake, ref).get("exceeded")).get("interruptedTurn") == state.since:
        return  # this turn had its Escape
    if ports.clock() - state.since < TURN_SHOWS_SECONDS:
        return  # an Escape before its first output puts the prompt back in its box, unsaid
    try:
        ports.interrupt(session)
    except TheLoopError as error:
        ports.warn(f"{ref.ref}: could not interrupt the agent over its budget: {error}")
        return
    set_notice(intake, ref, "exceeded", interrupted=True, interruptedTurn=state.since)
