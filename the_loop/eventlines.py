"""The event log's line format, shared by its writer and its readers.

One event is one JSON object with an ``event`` key on one ``\\n``-terminated line;
``level`` is one of :data:`LEVELS`. Both ``eventlog`` (writing) and ``eventquery``
(reading) build on this module, so neither imports the other for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LEVELS = ("debug", "info", "warning", "error")


def parse_event_line(line: bytes) -> dict[str, Any] | None:
    """One log line as an event object, or None when it is not one."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or "event" not in value:
        return None
    return value  # pyright: ignore[reportUnknownVariableType]


def iter_event_lines(path: Path) -> Iterator[bytes]:
    """Complete lines of the log (a trailing partial line is not yielded)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                yield line
