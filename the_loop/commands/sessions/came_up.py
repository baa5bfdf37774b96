"""Whether the agent a ``sessions start`` just started came up: one that exits within
``routing.tmux.startWaitSeconds`` is exit 1, with its status and its pane's last lines,
never ``started``. What the dispatcher sees is :mod:`the_loop.dispatch.startup`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
        return
    what = "closed"
    with stores.registry.spawn_lock(session.work_item):
        current = stores.registry.find_by_work_item(session.work_item)
        if current is not None and current.harness_session_id == session.harness_session_id:
            reason = f"the agent {exited.describe()} at its start"
            try:
                dispatcher.close_session(current, reason, keep_checkouts=True)
            except SessionCloseError as error:
                what = f"closed, but {error}"
    if spawned.checkout is not None:
        what += f", its checkout {spawned.checkout} kept"
    raise TheLoopError(early_exit_message(session, exited, seconds, spawned=True, then=what))


def fail_an_early_restart(dispatcher: Dispatcher, session: Session) -> None:
    """Exit 1 when the agent just restarted exits within the same wait; the session stays
    as it was (its agent had ended before this start too)."""
    seconds = dispatcher.settings.start_wait_seconds
    exited = dispatcher.wait_until_up(session, seconds)
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
