"""Moved: the portable work-item store is in the_loop.portable.store (its format in .format)."""

from __future__ import annotations

from the_loop.portable.format import (
    CHANNELS,
    CONTROL,
    GRAPH,
    INDEX_FILE,
    POLL,
    PULL_REQUESTS,
    READABLE_SECTIONS,
    SEALED,
    SECTIONS,
    ForeignRecordError,
    RecordSummary,
    Section,
    WriteResult,
)
from the_loop.portable.store import (
    WorkItemStore,
)
from the_loop.ref import (
    WorkItemRef,
    as_ref,
)

__all__ = [
    "CHANNELS",
    "CONTROL",
    "GRAPH",
    "INDEX_FILE",
    "POLL",
    "PULL_REQUESTS",
    "READABLE_SECTIONS",
    "SEALED",
    "SECTIONS",
    "ForeignRecordError",
    "RecordSummary",
    "Section",
    "WorkItemRef",
    "WorkItemStore",
    "WriteResult",
    "as_ref",
]
