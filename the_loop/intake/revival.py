"""A comment for an agent that has exited restarts it, then is delivered.

When an item's agent has ``exited`` and comments wait for it, the round restarts it
through the sessions' own resume (the ``restart`` port: its transcript resumed when
there is one, else a fresh start with the ticket's prompt), and the comments go in once
it takes a paste. An agent that exits again within :data:`RESTART_WINDOW_SECONDS` of
its restart is not restarted again: one marked notice on the ticket says so, and the
comments wait until a person starts it (``start``, ``resume``, or in the pane). The
last restart is kept in the item's ledger (``restart``: when, and whether the notice
was said).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from the_loop.agent.state import EXITED, AgentState
from the_loop.errors import TheLoopError
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.ports import ItemFacts, LiveSession
from the_loop.portable.poll import Ledger
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

RESTART_KEY = "restart"
RESTART_WINDOW_SECONDS = 120.0
_WAITING = ("waiting", "held", "pasted", "pending")
#: A crash's paste, or one the agent has not yet said it took: settled before a restart
#: replaces the pane that holds its mark.
_UNSETTLED = ("pasted", "pending")


def revive(
    session: LiveSession,
    intake: IntakeView,
    state: AgentState | None,
    facts: Callable[[], ItemFacts] | None = None,
) -> bool:
    """Restart ``session``'s exited agent when comments wait for it; True when it was.
    ``facts()`` (default: the ticket as GitHub says it) give a fresh start its prompt."""
    ports = intake.ports
    if state is None or state.state != EXITED or ports.restart is None:
        return False
    rows = ports.ledger.deliveries(session.ref)
    if not any(str(row.get("state")) in _WAITING for row in rows):
        return False
    if any(str(row.get("state")) in _UNSETTLED for row in rows):
        return False  # settled against the exited pane and its hooks first (the drain)
    last = _last_restart(intake, session)
    now = ports.clock()
    at = float(last.get("at", 0) or 0)
    if last.get("noticed"):
        return False  # said on the ticket: it waits for a person's start
    # When it ended, however late this round reads it (a cron's ``poll --once``, say).
    exited_at = min(state.since or now, now)
    if last and exited_at - at < RESTART_WINDOW_SECONDS:
        # The pane was replaced at ``at`` and this agent ended within the window.
        _notice(session, intake, state)
        _remember(intake, session.ref, {**last, "noticed": True})
        return False
    try:
        ports.restart(session.ref, facts or partial(ticket_facts, intake, session.ref))
    except TheLoopError as error:
        ports.warn(f"{session.ref.ref}: could not restart the agent for its comments: {error}")
        return False
    _remember(intake, session.ref, {"at": now, "noticed": False})
    ports.emit(
        "session.restarted",
        work_item=session.ref.ref,
        exit_status=state.exit_status,
        reason="comments wait for it",
    )
    return True


def ticket_facts(intake: IntakeView, ref: WorkItemRef) -> ItemFacts:
    """The ticket's title, URL, body and author, as GitHub says them now (one read)."""
    issue = intake.ports.github.item(ref)
    return ItemFacts(ref, issue.title, issue.url, issue.body, issue.author)


def forget_restarts(intake: IntakeView, ref: WorkItemRef) -> None:
    """A person started the agent again: its next exit may be restarted again."""
    if intake.ports.ledger.value(ref, RESTART_KEY) is not None:
        _remember(intake, ref, None)


def _last_restart(intake: IntakeView, session: LiveSession) -> dict[str, Any]:
    value = intake.ports.ledger.value(session.ref, RESTART_KEY)
    return dict(value) if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownArgumentType]


def _remember(intake: IntakeView, ref: WorkItemRef, value: dict[str, Any] | None) -> None:
    def change(ledger: Ledger) -> None:
        if value is None:
            ledger.pop(RESTART_KEY, None)
        else:
            ledger[RESTART_KEY] = value

    intake.ports.ledger.change(ref, change)


def _notice(session: LiveSession, intake: IntakeView, state: AgentState) -> None:
    ports = intake.ports
    status = f" (exit status {state.exit_status})" if state.exit_status is not None else ""
    body = (
        f"{AGENT_COMMENT_MARKER}\nthe-loop: the agent exited again{status} within two minutes "
        "of its restart, so it is not restarted again; comments wait for it. Start it with "
        f"`{intake.settings.policy.grammar.prefix} start`, or look at its pane "
        "(`the-loop sessions attach`)."
    )
    try:
        posted = ports.github.post_comment(session.ref, body)
    except TheLoopError as error:
        ports.warn(f"{session.ref.ref}: could not say the agent exited again: {error}")
        return
    if posted is not None:
        ports.posted.remember_posted(posted)
    ports.emit("session.exited_again", "warning", work_item=session.ref.ref)
