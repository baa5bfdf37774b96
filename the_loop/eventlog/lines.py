"""The event log's line format, shared by its writer and its readers.

One event is one JSON object with an ``event`` key on one ``\\n``-terminated line;
``level`` is one of :data:`LEVELS`. Both ``eventlog.log`` (writing) and ``eventlog.query``
(reading) build on this module, so neither imports the other for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from the_loop.fsio import open_regular, parse_json

LEVELS = ("debug", "info", "warning", "error")


def parse_event_line(line: bytes) -> dict[str, Any] | None:
    """One log line as an event object, or None when it is not one (or nests too deeply)."""
    try:
        value = parse_json(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or "event" not in value:
        return None
    return value  # pyright: ignore[reportUnknownVariableType]


def iter_event_lines(path: Path) -> Iterator[bytes]:
    """Complete lines of the log (a trailing partial line is not yielded).

    ``FileNotFoundError`` when it is missing; ``fsio.StrangerFile`` (never a hang) when it
    is a FIFO, a link or anything else that is not a regular file.
    """
    with os.fdopen(open_regular(path), "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                yield line
