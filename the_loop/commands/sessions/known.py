"""Whether this machine holds anything of a work item: the guard of the control actions.

``stop``, ``pause``, ``resume`` and ``cleanup`` act on an item this machine knows; on
any other (a mistyped number, another machine's item) they refuse before recording or
posting anything, so a typo never lands a keyword on the wrong ticket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.errors import TheLoopError

if TYPE_CHECKING:
    from collections.abc import Callable

    from the_loop.commands.stores import Stores
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.ref import WorkItemRef


def holds_records(stores: Stores, ref: WorkItemRef) -> bool:
    """A session record (its own or a PR owner's) or a portable record of ``ref``."""
    if stores.registry.find_by_work_item(ref, include_closed=True) is not None:
        return True
    if stores.registry.record_owning(ref) is not None:
        return True
    return stores.store.record_status(ref) != "absent" or stores.store.legacy_holds(ref)


def holds_resources(dispatcher: Dispatcher, ref: WorkItemRef) -> bool:
    """A tmux session of ``ref``'s name that tmux says is there and no other state root
    started, or an existing checkout.

    A tmux that does not answer is no evidence either way: only the checkouts count then.
    """
    try:
        target = dispatcher.tmux_target_for(ref)
        state = dispatcher.tmux.liveness(target)
        if state in ("live", "dead") and dispatcher.tmux.foreign_owner(target) is None:
            return True
    except ValueError:
        pass
    return bool(dispatcher.teardown.existing_checkouts_of(ref))


def require_known(stores: Stores, ref: WorkItemRef, dispatcher: Callable[[], Dispatcher]) -> None:
    """Raise ``TheLoopError`` (exit 1) unless this machine holds state for ``ref``.

    ``dispatcher`` builds the dispatcher, called only when the records alone do not decide.
    """
    if holds_records(stores, ref) or holds_resources(dispatcher(), ref):
        return
    raise TheLoopError(
        f"no work item {ref.ref} on this machine (state root {stores.layout.root}); "
        "`the-loop sessions list` shows the ones it holds"
    )
