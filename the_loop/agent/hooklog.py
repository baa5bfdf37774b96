"""The agent's hook log read back: its latest events, and whether a paste was taken.

Each line is one hook's event as :mod:`the_loop.agent.hook` appended it (``t``, ``event``
and what the event said). Only the end of the log is read (the latest events are all a
state needs), never through a link; a receipt reads back as far as its paste.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from the_loop.fsio import open_regular

#: How much of the end of a hook log is read: the latest events are all a state needs.
TAIL_BYTES = 64 * 1024


def read_hook_log(
    path: Path, tail_bytes: int = TAIL_BYTES, *, since: float | None = None
) -> list[dict[str, Any]]:
    """The events at the end of the hook log ``path`` (empty when there is none); with
    ``since``, read further back until every event from then on is in (a busy agent's
    log can outgrow the tail between two reads). A line cut by the tail or not JSON is
    skipped. Never follows a link."""
    try:
        descriptor = open_regular(path)  # never a link, never blocks on a FIFO
    except OSError:
        return []
    try:
        size = os.fstat(descriptor).st_size
        while True:
            start = max(0, size - tail_bytes)
            os.lseek(descriptor, start, os.SEEK_SET)
            data = os.read(descriptor, size - start)
            events = _events(data, cut=start > 0)
            if since is None or not start or (events and _time(events[0]) < since - 1.0):
                return events
            tail_bytes *= 4
    finally:
        os.close(descriptor)


def _events(data: bytes, *, cut: bool) -> list[dict[str, Any]]:
    lines = data.decode("utf-8", "replace").split("\n")
    if cut:
        lines = lines[1:]  # the first may be cut
    events: list[dict[str, Any]] = []
    for line in lines:
        try:
            event: Any = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(cast(dict[str, Any], event).get("event"), str):
            events.append(cast(dict[str, Any], event))
    return events


#: How much of a delivery's start must open a submitted prompt for it to be that delivery.
#: The start of a delivery names its author and links its comment (or names its review
#: or check), so this much tells two deliveries apart; the hook keeps more of a prompt.
RECEIPT_KEY_CHARS = 560


def took_as_turn(events: Sequence[dict[str, Any]], text: str, since: float) -> bool:
    """Whether a prompt the agent submitted at or after ``since`` (its
    ``UserPromptSubmit`` hook) holds the start of ``text``, blanks aside."""
    key = _blanks(text)[:RECEIPT_KEY_CHARS]
    if not key:
        return False
    return any(
        event.get("event") == "UserPromptSubmit"
        and _time(event) >= since - 1.0
        and key in _blanks(str(event.get("prompt", "")))
        for event in events
    )


def _blanks(text: str) -> str:
    return " ".join(text.split())


def _time(event: dict[str, Any]) -> float:
    value = event.get("t")
    return float(value) if isinstance(value, int | float) else 0.0
