"""The inbox's segments: append-only files of one line per delivery, and their group commit.

A line is ``{"version": 1, "sequence": …, "delivery": …, "event": …, "receivedAt": …,
"payload": …}``: the envelope first, so a reader learns what a line holds without parsing
its payload. :class:`Journal` appends lines for the one receiver, many threads' at once
in one append and one fsync; :func:`scan` reads them back.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from the_loop.fsio import append_lines, fsync_directory

INBOX_VERSION = 1
#: A segment's bounds: a new one is started past either (fewer lines than PROCESSED_KEPT,
#: so the newest segment, never compacted, cannot outlive the memory of what it processed).
SEGMENT_LINES = 1_000
SEGMENT_BYTES = 32 * 1024 * 1024
SEGMENT_NAME = re.compile(r"[0-9]{20}\.jsonl\Z")
#: What ends a line's envelope: the delivery ids and event names it holds cannot contain it.
_PAYLOAD_KEY = b',"payload":'


@dataclass(frozen=True)
class InboxEntry:
    """One delivery of the inbox: what its envelope says, and where its line is."""

    sequence: int
    event: str
    delivery_id: str
    path: Path
    offset: int
    length: int


@dataclass
class Journal:
    """The segment the receiver appends to, and its group commit: the threads that append
    while one writes wait, and the next write takes all their lines in one append."""

    directory: Path
    _changed: threading.Condition = field(default_factory=threading.Condition, init=False)
    _queue: list[tuple[int, bytes, int, _Slot]] = field(default_factory=list[Any], init=False)
    _writing: bool = field(default=False, init=False)
    _segment: Path | None = field(default=None, init=False)
    _lines: int = field(default=0, init=False)
    _bytes: int = field(default=0, init=False)

    def restart(self) -> None:
        with self._changed:
            self._segment = None

    def append(self, last_sequence: int, data: bytes, lines: int) -> None:
        """Return once ``data`` (``lines`` whole lines, the last arrival ``last_sequence``)
        is appended and fsynced; ``OSError`` when it could not be."""
        slot = _Slot()
        with self._changed:
            self._queue.append((last_sequence, data, lines, slot))
            while not slot.done:
                if self._writing:
                    self._changed.wait()
                    continue
                batch, self._queue, self._writing = self._queue, [], True
                error: OSError | None = None
                self._changed.release()
                try:
                    self._write(batch)
                except OSError as failure:
                    error = failure
                finally:
                    self._changed.acquire()
                    self._writing = False
                for *_, waiting in batch:
                    waiting.done, waiting.error = True, error
                self._changed.notify_all()
        if slot.error is not None:
            raise slot.error

    def _write(self, batch: list[tuple[int, bytes, int, _Slot]]) -> None:
        data = b"".join(chunk for _, chunk, _, _ in batch)
        count = sum(lines for _, _, lines, _ in batch)
        full = self._lines + count > SEGMENT_LINES or self._bytes + len(data) > SEGMENT_BYTES
        if self._segment is None or (full and self._lines):
            # Named by the batch's last arrival: after every name there is, and unique.
            self._segment = self.directory / f"{max(seq for seq, *_ in batch):020d}.jsonl"
            self._lines = self._bytes = 0
        new = self._lines == 0
        append_lines(self._segment, data, sync=True)
        if new:
            fsync_directory(self.directory)  # the new segment's name is durable too
        self._lines += count
        self._bytes += len(data)


@dataclass
class _Slot:
    done: bool = False
    error: OSError | None = None


def delivery_line(
    sequence: int, delivery_id: str, event: str, received_at: str, text: str
) -> bytes:
    """A delivery's line: its envelope, then the body (JSON ignores the line breaks that
    may stand between its tokens; none can be inside a string, so they become spaces)."""
    envelope = json.dumps(
        {
            "version": INBOX_VERSION,
            "sequence": sequence,
            "delivery": delivery_id,
            "event": event,
            "receivedAt": received_at,
        },
        separators=(",", ":"),
    )
    body = text.replace("\r", " ").replace("\n", " ")
    return (envelope[:-1]).encode() + _PAYLOAD_KEY + body.encode("utf-8") + b"}\n"


def scan(segment: Path, data: bytes) -> Iterator[InboxEntry]:
    """The deliveries of a segment's bytes, a line cut short or unreadable skipped."""
    offset = 0
    while (end := data.find(b"\n", offset)) >= 0:
        entry = _entry(segment, data, offset, end + 1)
        if entry is not None:
            yield entry
        offset = end + 1


def _entry(segment: Path, data: bytes, start: int, end: int) -> InboxEntry | None:
    cut = data.find(_PAYLOAD_KEY, start, end)
    if cut < 0:
        return None
    try:
        envelope: object = json.loads(data[start:cut] + b"}")
    except ValueError:
        return None
    if not isinstance(envelope, dict):
        return None
    said = cast(dict[str, object], envelope)
    sequence, delivery, event = said.get("sequence"), said.get("delivery"), said.get("event")
    if not (isinstance(sequence, int) and isinstance(delivery, str) and isinstance(event, str)):
        return None
    return InboxEntry(sequence, event, delivery, segment, start, end - start)
