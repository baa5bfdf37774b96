"""Build the stores of one invocation once, at the edge, from the resolved context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from the_loop.commands.common import Context, warn
from the_loop.eventlog.log import EventLog
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.store import WorkItemStore
from the_loop.sessions.registry import SessionRegistry

if TYPE_CHECKING:
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.dispatch.factory import Adapters


@dataclass(frozen=True)
class Stores:
    """The registry, the portable store, the control store and the event log of one run."""

    layout: StateLayout
    registry: SessionRegistry
    store: WorkItemStore
    control: ControlStore
    events: EventLog


def open_stores(context: Context, *, source: str = "sessions") -> Stores:
    """Open every store on ``context.layout``; warnings go to stderr."""
    layout = context.layout
    events = EventLog(layout.event_log, source=source)
    registry = SessionRegistry(
        layout.local_dir, locks_dir=layout.local_locks_dir, events=events, on_warning=warn
    )
    store = WorkItemStore(
        layout.portable_dir,
        legacy_layout(layout),
        locks_dir=layout.portable_locks_dir,
        on_warning=warn,
    )
    control = ControlStore(layout.portable_dir, legacy_layout(layout), store=store, events=events)
    return Stores(layout=layout, registry=registry, store=store, control=control, events=events)


def open_dispatcher(
    context: Context, stores: Stores, adapters: Adapters | None = None
) -> Dispatcher:
    """The dispatcher of this invocation, built from the config and the open stores
    (and the tmux runner and workspace of ``adapters`` when the command built them).

    Raises ``TheLoopError`` with a sentence when it cannot be built.
    """
    from the_loop.dispatch.factory import build_dispatcher

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
