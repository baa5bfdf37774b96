"""What the-loop does when an agent stops at its plan's usage limit.

The block is said once like any other (:mod:`attention`), with the time the limit
resets. With ``routing.resumeAfterLimit`` the-loop continues the agent once that time
has passed: one paste of a continue, queued as a delivery row of its own
(``limit-<the reset's minute>``) ahead of the comments that waited, so the drain's
exactly-once steps carry it (``pending``, paste and mark, the agent's receipt) and a
crash at any step neither loses nor doubles it. The dispatcher then turns the agent's
own continue off at spawn, and the limit's dialog that shows instead is answered with
its wait. An agent that says it will go on by itself is left to it: never both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.agent.state import IDLE, AgentState
from the_loop.errors import TheLoopError
from the_loop.intake.pastes import queue_paste
from the_loop.intake.ports import LiveSession

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The delivery key of a continue after a usage limit: ``limit-<the reset's minute>``.
CONTINUE_PREFIX = "limit-"
#: The option of the limit's dialog that waits for the reset and does nothing else.
WAIT = "wait"
#: Who a continue's row says wrote it.
BY = "the-loop"


def limit_words(state: AgentState, intake: IntakeView) -> tuple[str, str]:
    """The headline of a usage limit's notice (with its reset time), and what happens."""
    limit = state.limit
    when = f", which resets at {limit.iso()}" if limit is not None else ""
    headline = (
        f"the-loop: the agent stopped at its plan's usage limit{when}. What it shows "
        "(the agent's words, untrusted):"
    )
    if state.self_resuming:
        how = "The agent goes on by itself once it resets; comments wait until then."
    elif intake.settings.resume_after_limit:
        how = (
            "the-loop continues it once after the reset (`routing.resumeAfterLimit`); "
            "comments wait until then."
        )
    else:
        how = (
            "Comments wait until it resets, then go in. the-loop does not continue the "
            "agent's task (`routing.resumeAfterLimit: true` would); the agent may, as its "
            "own settings say, and a limit dialog it shows waits for an answer in the pane "
            "(`the-loop sessions attach`)."
        )
    return headline, how


def answer_limit_dialog(session: LiveSession, state: AgentState, intake: IntakeView) -> None:
    """With ``resumeAfterLimit``, choose the wait of the usage limit's dialog: the agent
    stops and waits, and the-loop continues it after the reset."""
    ports = intake.ports
    if state.blocked_on != "limit" or not state.dialog or not intake.settings.resume_after_limit:
        return
    if ports.answer is None:
        return
    try:
        ports.answer(session.tmux_target, state.dialog, WAIT)
    except TheLoopError as error:
        ports.warn(f"{session.ref.ref}: could not answer the usage limit's dialog: {error}")
        return
    ports.emit("session.limit_answered", work_item=session.ref.ref, dialog=state.dialog)


def continue_after_limit(
    session: LiveSession, intake: IntakeView, state: AgentState | None
) -> bool:
    """With ``resumeAfterLimit``, once the usage limit the agent's last turn stopped at has
    reset and the agent waits at its prompt: queue its one continue ahead of the waiting
    comments (a second call, or another reader's, finds it queued). True when queued."""
    ports = intake.ports
    if not intake.settings.resume_after_limit or state is None or state.state != IDLE:
        return False
    limit = state.limit
    if limit is None or state.self_resuming:
        return False
    key = f"{CONTINUE_PREFIX}{limit.key}"
    text = (
        f"[the-loop] The usage limit you stopped at has reset (it was due at {limit.iso()}). "
        "Go on with the task you were doing when it stopped you; do not redo what is "
        "already done."
    )
    if not queue_paste(ports, session.ref, key, text, by=BY, held=False, first=True):
        return False
    ports.emit(
        "session.limit_continue_queued", work_item=session.ref.ref, key=key, resets_at=limit.iso()
    )
    ports.checkpoint("after-limit-continue-queued")
    return True
