"""A working agent that shows no sign of progress, said once on the ticket.

The agent's watcher keeps when a sign of its progress last changed (``progress_at``: a
hook ran, its transcript grew, its screen changed beyond its own busy line). An agent
``working`` with none for ``routing.stallMinutes`` is stalled: one ``session.stalled`` and
one marked notice, the episode kept in the item's ledger (``stall``) before the notice is
posted and found by its nonce after a crash (:mod:`once`). The next sign of progress, or
the turn's end, clears it: ``session.stall_cleared``, and the notice is edited to say so.
An agent merely working long, its transcript growing or new output on its screen, is
never stalled.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from the_loop.agent.state import BLOCKED, EXITED, IDLE, WORKING, AgentState
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.once import edit_notice, keep, kept, new_nonce, say_once
from the_loop.intake.ports import LiveSession

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The ledger key of the open stall.
STALL_KEY = "stall"
_WHAT = "stall notice"
_HOW = {
    EXITED: "the agent exited",
    IDLE: "its turn ended",
    BLOCKED: "it now waits on a dialog",
}


def watch_stall(session: LiveSession, intake: IntakeView, state: AgentState | None) -> None:
    """Say a new stall of ``session``'s agent once, or clear an open one (a state that
    cannot be told, or no progress watched, leaves everything as it is)."""
    if state is None or state.progress_at <= 0:
        return
    episode = kept(intake, session.ref, STALL_KEY)
    stalled = _stalled(intake, state)
    if episode is None:
        if stalled:
            _begin(session, intake, state)
        return
    if stalled and episode.get("since") == state.progress_at:
        if not episode.get("comment"):  # a crash or a refusal cut its notice short
            _said(session, intake, episode, say_once(session, intake, STALL_KEY, episode, _WHAT))
        return
    _clear(session, intake, episode, _HOW.get(state.state, "it went on"))


def _stalled(intake: IntakeView, state: AgentState) -> bool:
    minutes = intake.settings.stall_minutes
    quiet = intake.ports.clock() - state.progress_at
    return minutes > 0 and state.state == WORKING and quiet >= minutes * 60


def _begin(session: LiveSession, intake: IntakeView, state: AgentState) -> None:
    ports, ref = intake.ports, session.ref
    minutes = intake.settings.stall_minutes
    prefix = intake.settings.policy.grammar.prefix
    since = datetime.fromtimestamp(state.progress_at, UTC).isoformat()
    body = (
        f"{AGENT_COMMENT_MARKER}\nthe-loop: the agent has shown no sign of progress for "
        f"{_minutes(minutes)} while working (since {since}): no hook ran, its transcript "
        "did not grow, and nothing but its busy line changed on its screen "
        "(`routing.stallMinutes`). Look at its pane (`the-loop sessions attach`); "
        f"`{prefix} stop` ends the session. Comments wait until it takes them."
    )
    record: dict[str, Any] = {"since": state.progress_at, "at": ports.clock(), "comment": 0}
    record |= {"nonce": new_nonce(), "body": body}
    keep(intake, ref, STALL_KEY, record)  # before the POST: a crash after it finds it
    _said(session, intake, record, say_once(session, intake, STALL_KEY, record, _WHAT))


def _said(
    session: LiveSession, intake: IntakeView, episode: dict[str, Any], comment: int | None
) -> None:
    """The event of a stall whose notice is now said (a crash's repair logs it then)."""
    if not (kept(intake, session.ref, STALL_KEY) or {}).get("comment"):
        return  # not said yet: logged when it is
    since = float(episode.get("since", 0) or 0)
    intake.ports.emit(
        "session.stalled",
        "warning",
        work_item=session.ref.ref,
        since=datetime.fromtimestamp(since, UTC).isoformat(),
        minutes=intake.settings.stall_minutes,
        comment_id=comment,
    )


def _clear(session: LiveSession, intake: IntakeView, episode: dict[str, Any], how: str) -> None:
    ports, ref = intake.ports, session.ref
    keep(intake, ref, STALL_KEY, None)
    quiet = float(episode.get("at", 0) or 0) - float(episode.get("since", 0) or 0)
    body = (
        f"{AGENT_COMMENT_MARKER}\nthe-loop: the agent showed no sign of progress for "
        f"{_minutes(max(quiet, 0) / 60)} while working; then {how}."
    )
    edit_notice(intake, ref, episode, body)
    ports.emit("session.stall_cleared", work_item=ref.ref, how=how)


def _minutes(minutes: float) -> str:
    whole = round(minutes)
    if abs(minutes - whole) < 0.05:
        return f"{whole} minute" + ("" if whole == 1 else "s")
    return f"{minutes:.1f} minutes"
