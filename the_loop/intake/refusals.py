"""What the operator reads of a refused command or comment: one action in the cycle's
report and one event, worded the same whichever reader fed the comment."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from the_loop.intake.comments import CommentDecision, Reason
from the_loop.intake.events import IssueComment
from the_loop.intake.ports import Action

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView


def asked_verb(intake: IntakeView, comment: IssueComment) -> str:
    """The one verb a refused comment asked for (``""``: none, or more than one)."""
    scan = intake.settings.policy.grammar.scan(comment.body)
    return scan.verb or "" if scan.is_keyword and not scan.ambiguous else ""


def refused_at_first_sight(intake: IntakeView, comment: IssueComment, verb: str) -> None:
    """A stranger's command new this round (in the reader's window) on an item met
    for the first time: refused like any other, with its event and its action."""
    ref = comment.work_item.ref
    action = Action("refused", ref, comment.login, verb, comment.id, reason="not-authorized")
    intake.counts.actions.append(action)
    intake.ports.emit(
        "poll.unauthorized",
        "warning",
        work_item=ref,
        comment_id=comment.id,
        login=comment.login,
    )


def refused(intake: IntakeView, comment: IssueComment, permission: str, **detail: str) -> None:
    reason = "permission-unknown" if permission == "unknown" else f"permission-{permission}"
    verb = asked_verb(intake, comment)
    refusal = Action("refused", comment.work_item.ref, comment.login, verb, comment.id)
    intake.counts.actions.append(replace(refusal, reason=reason))
    intake.ports.emit(
        "poll.access_refused",
        "warning",
        work_item=comment.work_item.ref,
        comment_id=comment.id,
        login=comment.login,
        permission=permission,
        **detail,
    )


def log_refusal(
    intake: IntakeView, decision: CommentDecision, comment: IssueComment, *, live: bool
) -> None:
    """A refusal the operator reads of: an event (a keyword's) and an action (a
    stranger's comment not delivered only while a session would have taken it)."""
    ref, who, emit = comment.work_item, comment.login, intake.ports.emit
    event, verbs = decision.event, decision.ambiguous_verbs
    if decision.reason in _REFUSALS and (live or decision.reason is not Reason.UNAUTHORIZED):
        intake.counts.actions.append(
            Action(
                "refused",
                ref.ref,
                who,
                asked_verb(intake, comment),
                comment.id,
                reason=_REFUSALS[decision.reason],
                outcome=",".join(verbs),
            )
        )
    if event == "poll.unauthorized":
        emit("poll.unauthorized", "warning", work_item=ref.ref, comment_id=comment.id, login=who)
    elif event == "poll.ambiguous":
        emit(
            "poll.ambiguous",
            "warning",
            work_item=ref.ref,
            comment_id=comment.id,
            login=who,
            verbs=list(verbs),
        )


#: The settled comments an operator reads of, and the word for why.
_REFUSALS = {
    Reason.UNAUTHORIZED_KEYWORD: "not-authorized",
    Reason.AMBIGUOUS: "ambiguous",
    Reason.UNAUTHORIZED: "not-delivered-from",
}
