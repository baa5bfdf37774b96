"""The stores of one run, opened once on a state root's layout."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from the_loop.eventlog.log import EventLog
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.store import WorkItemStore
from the_loop.sessions.registry import SessionRegistry


@dataclass(frozen=True)
class Stores:
    """The registry, the portable store, the control store and the event log of one run."""

    layout: StateLayout
    registry: SessionRegistry
    store: WorkItemStore
    control: ControlStore
    events: EventLog


def stores_at(layout: StateLayout, *, source: str, on_warning: Callable[[str], None]) -> Stores:
    """Every store on ``layout``; ``on_warning`` takes their warnings."""
    events = EventLog(layout.event_log, source=source)
    registry = SessionRegistry(
        layout.local_dir, locks_dir=layout.local_locks_dir, events=events, on_warning=on_warning
    )
    store = WorkItemStore(
        layout.portable_dir,
        legacy_layout(layout),
        locks_dir=layout.portable_locks_dir,
        on_warning=on_warning,
    )
    control = ControlStore(layout.portable_dir, legacy_layout(layout), store=store, events=events)
    return Stores(layout=layout, registry=registry, store=store, control=control, events=events)
