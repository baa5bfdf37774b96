"""``budget +N``: an authorized login raises one limit of a work item's budget (a linked
pull request's raises its owner's), once by the comment's id, and the ticket is told
whether the held comments now go in or the item is still over."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from the_loop.errors import TheLoopError
from the_loop.intake.budget_ledger import (
    BUDGET,
    BUDGET_KEY,
    SPEND_KEY,
    dict_of,
    emit_pending,
    say,
)
from the_loop.intake.budget_rule import (
    KINDS,
    Crossing,
    Raise,
    amount_text,
    crossed,
    parse_raise,
    raised,
)
from the_loop.intake.events import AGENT_COMMENT_MARKER, IssueComment
from the_loop.intake.ports import Action
from the_loop.portable.poll import SEEN_COMMENTS, Ledger

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView


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
        budget = dict_of(ledger.get(BUDGET_KEY))
        raises = dict_of(budget.get("raises"))
        if str(comment.id) in raises:
            return  # raised already: a raise counts once
        own = dict_of(budget.get("limits"))
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
    emit_pending(ref, intake, "raised")
    _command_said(intake, comment, "raised")
    say(ref, intake, "raised")
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
    total = dict_of(dict_of(spend).get("total"))
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
