"""Build the stores of one invocation once, at the edge, from the resolved context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.adapters.stores import Stores, stores_at
from the_loop.commands.common import Context, warn

if TYPE_CHECKING:
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.dispatch.factory import Adapters
    from the_loop.dispatch.process import Relay

__all__ = ["Stores", "open_dispatcher", "open_stores"]


def open_stores(context: Context, *, source: str = "sessions") -> Stores:
    """Open every store on ``context.layout``; warnings go to stderr."""
    return stores_at(context.layout, source=source, on_warning=warn)


def open_dispatcher(
    context: Context,
    stores: Stores,
    adapters: Adapters | None = None,
    *,
    progress: Relay | None = None,
) -> Dispatcher:
    """The dispatcher of this invocation, built from the config and the open stores
    (and the tmux runner and workspace of ``adapters`` when the command built them);
    ``progress`` receives git's progress of a clone or fetch (without ``adapters``).

    Raises ``TheLoopError`` with a sentence when it cannot be built.
    """
    from the_loop.dispatch.factory import Adapters, build_dispatcher

    if adapters is None and progress is not None:
        adapters = Adapters(context.config, owner=str(context.layout.root), progress=progress)

    return build_dispatcher(
        context.config,
        registry=stores.registry,
        control_store=stores.control,
        events=stores.events,
        portable=stores.store,
        adapters=adapters,
        on_warning=warn,
        owner=str(context.layout.root),
    )
