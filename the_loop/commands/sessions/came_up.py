"""Whether the agent a ``sessions start`` just started came up: one that exits within
``routing.tmux.startWaitSeconds`` is exit 1, with its status and its pane's last lines,
never ``started``. What the dispatcher sees is :mod:`the_loop.dispatch.startup`'s."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from the_loop.commands.render import note, warn
from the_loop.dispatch.teardown import SessionCloseError
from the_loop.errors import TheLoopError
from the_loop.sessions.session import Session

if TYPE_CHECKING:
    from the_loop.commands.stores import Stores
    from the_loop.dispatch.dispatcher import Dispatcher, SpawnResult
    from the_loop.dispatch.startup import EarlyExit


def fail_an_early_exit(stores: Stores, dispatcher: Dispatcher, spawned: SpawnResult) -> None:
    """Exit 1 when the agent just spawned exits within ``routing.tmux.startWaitSeconds``:
    its session is closed through the one close path (after a ``stop`` or ``close`` under
    way, under the spawn lock), its checkouts kept, its ``start`` left on record."""
    session, seconds = spawned.session, dispatcher.settings.start_wait_seconds
    exited = dispatcher.wait_until_up(session, seconds)
    if exited is None:
        answer_trust(stores, dispatcher, session)
        return
    what = "closed"
    with stores.registry.spawn_lock(session.work_item):
        current = stores.registry.find_by_work_item(session.work_item)
        ours = current is not None and current.harness_session_id == session.harness_session_id
        if not ours or (current is not None and current.is_paused):
            # A stop, pause or cleanup run meanwhile ended it: its doing, not the agent's.
            note(f"{session.ref}: started; another command ended its agent meanwhile")
            return
        if current is not None:
            reason = f"the agent {exited.describe()} at its start"
            try:
                dispatcher.close_session(current, reason, keep_checkouts=True)
            except SessionCloseError as error:
                what = f"closed, but {error}"
    if spawned.checkout is not None:
        what += f", its checkout {spawned.checkout} kept"
    raise TheLoopError(early_exit_message(session, exited, seconds, spawned=True, then=what))


def fail_an_early_restart(stores: Stores, dispatcher: Dispatcher, session: Session) -> None:
    """Exit 1 when the agent just restarted exits within the same wait; the session stays
    as it was (its agent had ended before this start too)."""
    seconds = dispatcher.settings.start_wait_seconds
    exited = dispatcher.wait_until_up(session, seconds)
    if exited is None:
        answer_trust(stores, dispatcher, session)
    if exited is not None:
        message = early_exit_message(session, exited, seconds, spawned=False, then="left as is")
        raise TheLoopError(message)


def early_exit_message(
    session: Session, exited: EarlyExit, seconds: float, *, spawned: bool, then: str
) -> str:
    """The error of a start whose agent exited at once: one line saying so (its status, what
    became of the session: ``then``), then the last lines of its pane, indented."""
    when = "start" if spawned else "restart"
    line = (
        f"{session.ref}: the {session.harness} agent {exited.describe()} within {seconds:g} s "
        f"of its {when}; its session is {then}; start it again once the cause is fixed"
    )
    if not exited.last_lines:
        return line
    return "\n".join((f"{line}; its last lines:", *(f"  {text}" for text in exited.last_lines)))


#: How long a start looks for Claude Code's folder-trust dialog after the agent came up.
TRUST_LOOK_SECONDS = 5.0
_LOOK_EVERY_SECONDS = 0.2


def answer_trust(stores: Stores, dispatcher: Dispatcher, session: Session) -> None:
    """With ``routing.harnesses.claude.trustCheckouts``, answer the folder-trust dialog of
    the Claude Code agent just started, as the poller would (no other dialog): looked for
    until the agent says it is at its prompt, another dialog shows, or
    :data:`TRUST_LOOK_SECONDS` pass. A dialog that cannot be answered is a warning."""
    from the_loop.adapters.agent_watch import AgentWatch
    from the_loop.agent.state import BLOCKED, STARTING

    config = dispatcher.config
    if session.harness != "claude" or not config.get_bool(
        "routing.harnesses.claude.trustCheckouts"
    ):
        return
    watch = AgentWatch.over(dispatcher.tmux, stores.registry)
    deadline = time.monotonic() + TRUST_LOOK_SECONDS
    while time.monotonic() < deadline:
        state = watch.state(session.work_item, session.harness, session.tmux_target)
        if state is not None and state.state == BLOCKED and state.blocked_on == "trust":
            try:
                watch.answer(session.tmux_target, state.dialog, "yes")
            except TheLoopError as error:
                warn(f"{session.ref}: could not answer the folder-trust dialog: {error}")
                return
            stores.events.emit("session.trust_answered", work_item=session.ref, dialog=state.dialog)
            note(f"{session.ref}: trusted its checkout (routing.harnesses.claude.trustCheckouts)")
            return
        if state is None or state.state != STARTING:
            return
        time.sleep(_LOOK_EVERY_SECONDS)
