"""The intake's control verbs, closures and deliveries, through the dispatcher and the
registry exactly as the ``sessions`` commands run them (spawn, resume, pause, the one
close path, cleanup); nothing here decides what a comment means: that is
:mod:`the_loop.intake`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from the_loop.adapters.release import clean_up
from the_loop.adapters.stores import Stores
from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.dispatch.tmux import tmux_session_name
from the_loop.errors import TheLoopError
from the_loop.intake.comments import SessionState
from the_loop.intake.delivery import DELIVERED_MARK, Delivery
from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.ports import ItemFacts, LiveSession
from the_loop.intake.prompt import render_prompt
from the_loop.portable.control import PAUSE, RESUME, START, STOP
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

#: The close reason when the login that closed the ticket is not authorized.
CLOSED_BY_STRANGER = "ticket closed; checkouts kept: it was not closed by an authorized user"
#: The start of the close reason when GitHub no longer has the ticket (then why).
TICKET_GONE = "ticket gone from GitHub (deleted or transferred); checkouts kept"


def live_sessions(stores: Stores) -> list[LiveSession]:
    """Every live session record, as the cycle sees it."""
    return [_live(session) for session in stores.registry.list_sessions() if session.is_live]


def running_sessions(stores: Stores, states: Mapping[str, str] | None) -> list[LiveSession]:
    """The live session records whose tmux session is on the server (``states``: tmux's
    sessions, from one call): one listing of the records' directory and one read per
    such session, whatever the number of ended records. Empty when tmux did not answer."""
    if not states:
        return []
    registry = stores.registry
    names = [
        name for name in registry.record_names() if tmux_session_name(Path(name).stem) in states
    ]
    return [_live(session) for session in registry.records_named(names) if session.is_live]


def live_session(stores: Stores, ref: WorkItemRef) -> LiveSession | None:
    """``ref``'s own live session record, as the cycle sees it (one read), or None."""
    session = stores.registry.find_by_work_item(ref)
    return _live(session) if session is not None and session.is_live else None


def _live(session: Session) -> LiveSession:
    state = SessionState.PAUSED if session.is_paused else SessionState.ACTIVE
    prs = tuple(e.work_item for e in session.pull_requests)
    return LiveSession(session.work_item, state, session.tmux_target, prs, session.harness)


@dataclass
class Actions:
    """The control verbs and closures, through the dispatcher and the registry."""

    stores: Stores
    dispatcher: Dispatcher
    prompt_template: str
    #: Whose tickets the first prompt takes as the operator's (others are framed untrusted).
    authorized: AuthorizedUsers = field(default_factory=lambda: AuthorizedUsers.of(()))

    def control(self, facts: ItemFacts, verb: str, actor: str) -> str:
        """Run ``verb`` for the item as ``sessions <verb>`` would; its outcome word."""
        ref, registry = facts.ref, self.stores.registry
        if verb == START:
            return self._start(facts, actor)
        with registry.spawn_lock(ref):
            session = registry.find_by_work_item(ref)
            if verb == PAUSE:
                return "paused" if registry.pause(ref) is not None else "no session"
            if verb == STOP:
                if session is None:
                    return "no session"
                self.dispatcher.close_session(session, "stop")
                return "closed"
            if verb == RESUME and (session is None or not session.is_paused):
                return "no session" if session is None else "already running"
        if verb == RESUME and session is not None:
            self.dispatcher.resume_session(session, actor=actor, prompt=self._prompt(facts))
            return "resumed"
        with registry.spawn_lock(ref):
            outcome = clean_up(self.dispatcher, ref, actor=actor, source="comment")
        return "cleaned up" if not outcome.errors else "cleanup failed"

    def _start(self, facts: ItemFacts, actor: str) -> str:
        session = self.stores.registry.find_by_work_item(facts.ref)
        if session is None:
            prompt = render_prompt(self.prompt_template, facts, self.authorized)
            self.dispatcher.spawn(facts.ref, prompt=prompt, actor=actor, record_control=False)
            return "started"
        if session.is_paused:
            self.dispatcher.resume_session(session, actor=actor, prompt=self._prompt(facts))
            return "resumed"
        if self.dispatcher.liveness(session) in ("dead", "absent"):  # its agent had ended
            self.dispatcher.resume_session(session, actor=actor, prompt=self._prompt(facts))
            return "restarted"
        return "already running"

    def restart(self, ref: WorkItemRef, facts: Callable[[], ItemFacts]) -> None:
        """Start ``ref``'s exited agent again, as ``sessions start`` of an active session
        whose agent ended does: ``facts()`` (the ticket, read only when the agent must
        start afresh) give its first prompt again. ``TheLoopError`` without a live record."""
        session = self.stores.registry.find_by_work_item(ref)
        if session is None:
            raise TheLoopError(f"{ref.ref} has no live session to restart")
        self.dispatcher.resume_session(session, prompt=lambda: self._prompt(facts())())

    def _prompt(self, facts: ItemFacts) -> Callable[[], str]:
        """The first prompt of ``facts``' ticket, rendered when asked for."""
        return partial(render_prompt, self.prompt_template, facts, self.authorized)

    def close(self, ref: WorkItemRef, cleanup: bool) -> tuple[int, int]:
        """The one close path; the checkouts are cleaned up only when ``cleanup`` (the
        closer is authorized), and kept otherwise whatever the retention settings say.
        Says how many checkouts it removed, and how many it kept for the work they hold."""
        return self._close(ref, cleanup, "ticket closed" if cleanup else CLOSED_BY_STRANGER)

    def end_here(self, ref: WorkItemRef, reason: str) -> None:
        """The one close path for an item another machine now holds: checkouts kept,
        ``reason`` saying who holds it."""
        self._close(ref, False, reason)

    def close_gone(self, ref: WorkItemRef, why: str) -> None:
        """The one close path for a ticket GitHub no longer has: checkouts kept, the reason
        saying it is gone and ``why``."""
        self._close(ref, False, f"{TICKET_GONE}: {why}")

    def _close(self, ref: WorkItemRef, cleanup: bool, reason: str) -> tuple[int, int]:
        registry = self.stores.registry
        removed = kept = 0
        with registry.spawn_lock(ref):
            session = registry.find_by_work_item(ref)
            if session is not None:
                report = self.dispatcher.close_session(session, reason, keep_checkouts=not cleanup)
                removed += sum(1 for done in report.checkouts if done.removed)
            if cleanup:
                outcome = clean_up(self.dispatcher, ref, actor="", source="comment")
                removed += len(outcome.checkouts_removed)
                kept += len(outcome.checkouts_kept)
        return removed, kept

    def end_endpoint(self, owner: WorkItemRef, pr: WorkItemRef, state: str) -> None:
        """Close only ``pr``'s endpoint of ``owner``'s record, ending its own tmux session."""
        del state
        registry = self.stores.registry
        with registry.spawn_lock(owner):
            record = registry.find_by_work_item(owner)
            endpoint = record.endpoint_for(pr) if record is not None else None
            registry.close_endpoint(owner, pr)
        target = endpoint.tmux_target if endpoint is not None else ""
        if target and record is not None and target != record.tmux_target:
            self.dispatcher.teardown.end_tmux_session(target)

    def deliver(self, session: LiveSession, delivery: Delivery) -> None:
        """Paste into ``session``'s pane and mark it in one tmux command list; never into
        a pane another state root started under the same name (that check is in the same
        list: a failed attempt, retried and given up as any)."""
        target = session.tmux_target
        self.dispatcher.tmux.deliver(
            target, delivery.buffer_name, delivery.text, (DELIVERED_MARK, delivery.mark_value)
        )
        self._stamp_delivery(session, delivery)

    def _stamp_delivery(self, session: LiveSession, delivery: Delivery) -> None:
        """Stamp the endpoint of ``session``'s record pasted into (``lastEventAt``, the
        delivery remembered): that one record is read, whatever the store's size. The
        paste is done: a failure here must not make it count as failed (and pasted
        again)."""
        registry, target = self.stores.registry, session.tmux_target
        try:
            record = registry.find_by_work_item(session.ref)
            endpoints = record.endpoints() if record is not None else ()
            for endpoint in endpoints:
                if endpoint.is_live and endpoint.tmux_target == target:
                    registry.touch(session.ref, str(delivery.comment_id), endpoint.work_item)
                    return
        except (OSError, TheLoopError):
            return

    def pane_mark(self, target: str) -> str | None:
        try:
            return self.dispatcher.tmux.pane_option(target, DELIVERED_MARK)
        except (TheLoopError, ValueError):
            return None
