"""``allow`` and ``deny``: an authorized login answers the agent's permission prompt.

Only the prompt that was on when the comment was written is answered, and only once: the
comment must come after the blocked notice of the episode still open, the agent must
still show that same permission prompt (told by its request, not only by its kind), and
nobody may have answered it here yet. The-loop sends the keys that choose the option (the screen
pattern names them), remembers who answered for the notice's end, and confirms on the
ticket. Anything else is said on the ticket and nothing is sent. Who may answer is
decided before this, as for every command (authorized, and with write access).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from the_loop.agent.state import BLOCKED
from the_loop.errors import TheLoopError
from the_loop.intake.attention import answered, open_episode, shows_episode
from the_loop.intake.events import AGENT_COMMENT_MARKER, IssueComment
from the_loop.intake.ports import Action, LiveSession

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

_OPTION = {"allow": "yes", "deny": "no"}
_DONE = {"allow": "allowed", "deny": "denied"}


def answer_prompt(
    intake: IntakeView, session: LiveSession | None, comment: IssueComment, verb: str
) -> str:
    """Answer the open permission prompt of ``session`` with ``verb``; the outcome word
    (``allowed``, ``denied``, ``nothing to answer``, ``failed``), also emitted and said."""
    ports, ref = intake.ports, comment.work_item
    why = ""
    outcome = "nothing to answer"
    state = ports.agent(session) if session is not None and ports.agent is not None else None
    episode = open_episode(intake, session) if session is not None else None
    if session is None or state is None:
        why = "it has no running agent here"
    elif state.state != BLOCKED or state.blocked_on != "permission" or not state.dialog:
        why = f"its agent is not waiting on a permission prompt (it is {state.describe()})"
    elif episode is None or not _before(episode, comment) or not shows_episode(episode, state):
        why = "the prompt it waits on now came after this comment was written"
    elif episode.get("answered"):
        why = f"that prompt was answered already ({episode.get('answered')})"
    elif ports.answer is None:
        why = "this reader cannot answer a prompt"
    else:
        try:
            ports.answer(session.tmux_target, state.dialog, _OPTION[verb])
            outcome = _DONE[verb]
        except TheLoopError as error:
            outcome, why = "failed", str(error)
    if outcome in _DONE.values() and session is not None:
        answered(intake, session, f"{outcome} here by @{comment.login}")
        ports.emit(
            "session.answered",
            work_item=ref.ref,
            answer=verb,
            actor=comment.login,
            comment_id=comment.id,
        )
        _say(
            intake,
            comment,
            f"the-loop: {outcome} the agent's permission prompt, as @{comment.login} asked.",
        )
    else:
        _say(intake, comment, f"the-loop: `{verb}` from @{comment.login} answered nothing: {why}.")
    counts = intake.counts
    counts.actions.append(
        Action("command", ref.ref, comment.login, verb, comment.id, outcome=outcome)
    )
    ports.emit(
        "poll.command",
        work_item=ref.ref,
        command=verb,
        actor=comment.login,
        comment_id=comment.id,
        outcome=outcome,
    )
    return outcome


def _before(episode: dict[str, Any], comment: IssueComment) -> bool:
    """Whether the episode's notice came before ``comment`` was written."""
    return float(episode.get("at", 0)) <= comment.created_at.timestamp()


def _say(intake: IntakeView, comment: IssueComment, line: str) -> None:
    ports = intake.ports
    try:
        posted = ports.github.post_comment(comment.work_item, f"{AGENT_COMMENT_MARKER}\n{line}")
    except TheLoopError as error:
        ports.warn(f"{comment.work_item.ref}: could not confirm on the ticket: {error}")
        return
    if posted is not None:
        ports.posted.remember_posted(posted)
