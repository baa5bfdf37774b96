"""Moved: the control section store is in the_loop.portable.control."""

from __future__ import annotations

from the_loop.portable.control import (
    ARMING,
    CLEANUP,
    COMMANDS,
    CONTRIBUTE,
    DO,
    EXECUTE,
    PAUSE,
    RESUME,
    SOURCES,
    START,
    STOP,
    ControlRecord,
    ControlStore,
)

__all__ = [
    "ARMING",
    "CLEANUP",
    "COMMANDS",
    "CONTRIBUTE",
    "DO",
    "EXECUTE",
    "PAUSE",
    "RESUME",
    "SOURCES",
    "START",
    "STOP",
    "ControlRecord",
    "ControlStore",
]
