"""The append-only JSONL event log: its line format (``lines``), its writer and the
catalogue of event types (``log``), and its reader (``query``).

``the_loop.eventlog`` is a published module path (spec ``api.md``): the writer's names
are re-exported here; new code imports from the module that defines a name.
"""

from __future__ import annotations

from the_loop.eventlog.lines import LEVELS
from the_loop.eventlog.log import (
    ENVELOPE_KEYS,
    EVENT_TYPES,
    SHADOWED_KEY,
    EventLog,
    EventRead,
    NullEventLog,
    or_no_events,
    read_events,
    utc_timestamp,
    utc_timestamp_ms,
)

__all__ = [
    "ENVELOPE_KEYS",
    "EVENT_TYPES",
    "LEVELS",
    "SHADOWED_KEY",
    "EventLog",
    "EventRead",
    "NullEventLog",
    "or_no_events",
    "read_events",
    "utc_timestamp",
    "utc_timestamp_ms",
]
