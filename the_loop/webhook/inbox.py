"""The receiver's inbox: every accepted delivery, durable before it is answered, until processed.

``<local>/webhook-inbox/`` holds append-only segments, ``<first sequence>.jsonl``: one line
per delivery, ``{"version": 1, "sequence": …, "delivery": …, "event": …, "receivedAt": …,
"payload": …}``, the payload being the body GitHub signed (its line breaks between tokens,
which JSON ignores, written as spaces). Lines are appended by :func:`the_loop.fsio.append_lines`
and fsynced before :meth:`Inbox.store` returns; the deliveries of threads storing at once
share one append and one fsync (a group commit). The sequence is the arrival time in
nanoseconds, strictly increasing, so segments and lines sort in arrival order. A segment
takes at most :data:`SEGMENT_LINES` lines or :data:`SEGMENT_BYTES` bytes; each run of the
receiver starts a new one. ``processed.json`` keeps the ids processed, the last
:data:`PROCESSED_KEPT`.

Processing reads :meth:`Inbox.pending` (arrival order) and :meth:`Inbox.read`, then
:meth:`Inbox.mark_processed`; :meth:`Inbox.compact` removes the segments whose deliveries
are all processed and rewrites the others without them, the newest (which the receiver
may be appending to) left as it is. A crash between marking and compacting leaves lines
that are marked: not pending, and gone at the next compaction. A line cut short by a
crash was never answered 202 and is skipped. One receiver stores at a time (its pidfile
lock); the processing side holds the inbox lock.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from the_loop.fsio import (
    DirectorySyncs,
    is_temp_name,
    locked,
    open_regular,
    parse_json,
    read_object,
    read_regular,
    remove_file,
    write_json,
    write_text,
)
from the_loop.webhook.journal import (
    INBOX_VERSION,
    SEGMENT_BYTES,
    SEGMENT_LINES,
    SEGMENT_NAME,
    InboxEntry,
    Journal,
    delivery_line,
    scan,
)

__all__ = [
    "INBOX_VERSION",
    "PROCESSED_KEPT",
    "SEGMENT_BYTES",
    "SEGMENT_LINES",
    "Delivery",
    "Inbox",
    "InboxEntry",
    "NewDelivery",
]

PROCESSED_NAME = "processed.json"
#: How many processed delivery ids are kept to answer a re-sent delivery as a duplicate.
PROCESSED_KEPT = 10_000
#: How many ids stored since the receiver started it remembers beside those on disk.
REMEMBERED = 10_000
#: A temporary file a compaction killed mid-write left is removed once this old (seconds).
TEMP_MAX_AGE = 600.0


@dataclass(frozen=True)
class NewDelivery:
    """A delivery to store: GitHub's event name and delivery id, its body, when it came."""

    event: str
    delivery_id: str
    text: str
    received_at: str


@dataclass(frozen=True)
class Delivery:
    """A stored delivery: GitHub's event name and delivery id, when it arrived, its payload."""

    delivery_id: str
    event: str
    sequence: int
    received_at: str
    payload: dict[str, Any]


class Inbox:
    """The deliveries of one state root (``directory``), and the lock of its processing side.

    The receiving side (:meth:`open`, :meth:`store`) may be called from many threads of the
    one receiver; the processing side (:meth:`pending`, :meth:`read`,
    :meth:`mark_processed`, :meth:`compact`) from any process.
    """

    def __init__(self, directory: Path, *, lock_path: Path) -> None:
        self.directory = directory
        self.lock_path = lock_path
        self._guard = threading.Lock()
        self._known: dict[str, None] = {}
        self._writing: dict[str, threading.Event] = {}
        self._last_sequence = 0
        self._remember_at_most = REMEMBERED
        self._journal = Journal(directory)
        #: Set each time a delivery is stored: the processing side of this process waits on it.
        self.arrived = threading.Event()

    # -- the receiving side -------------------------------------------------------------

    def open(self) -> None:
        """Remember the ids already here (stored or processed) and the last sequence; the
        next delivery starts a new segment."""
        entries = list(self._entries())
        known = [entry.delivery_id for entry in entries] + self.processed_ids()
        with self._guard:
            self._known = dict.fromkeys(known)
            self._remember_at_most = REMEMBERED + len(self._known)
            self._last_sequence = max((entry.sequence for entry in entries), default=0)
        self._journal.restart()

    def store(self, *, event: str, delivery_id: str, text: str, received_at: str) -> bool:
        """Append the delivery (``text``: its JSON body as sent) and fsync it; False,
        writing nothing, when its id is stored, processed or stored since :meth:`open`."""
        return self.store_many([NewDelivery(event, delivery_id, text, received_at)])[0]

    def store_many(self, deliveries: Sequence[NewDelivery]) -> list[bool]:
        """:meth:`store` for each of ``deliveries``, the new ones in one append and one
        fsync; True for each one stored, False for each already here (or twice in the list).

        An id another thread is writing is waited for, then decided. ``OSError``
        propagates, and none of the ids it was writing is remembered.
        """
        stored = [False] * len(deliveries)
        undecided = list(range(len(deliveries)))
        while undecided:
            mine, busy, undecided = self._claim(deliveries, undecided)
            if mine:
                lines = [
                    delivery_line(seq, d.delivery_id, d.event, d.received_at, d.text)
                    for _, d, _, seq in mine
                ]
                try:
                    self._journal.append(max(seq for *_, seq in mine), b"".join(lines), len(lines))
                except BaseException:
                    for _, delivery, done, _ in mine:
                        self._finish(delivery.delivery_id, done, stored=False)
                    raise
                for index, delivery, done, _ in mine:
                    self._finish(delivery.delivery_id, done, stored=True)
                    stored[index] = True
                self.arrived.set()
            for event in busy:
                event.wait()
        return stored

    def _claim(
        self, deliveries: Sequence[NewDelivery], indexes: list[int]
    ) -> tuple[
        list[tuple[int, NewDelivery, threading.Event, int]], list[threading.Event], list[int]
    ]:
        """Of ``indexes``: those this call writes (with their sequence), the writes of other
        threads to wait for, and the indexes to decide once they end."""
        mine: list[tuple[int, NewDelivery, threading.Event, int]] = []
        busy: list[threading.Event] = []
        later: list[int] = []
        claimed: set[str] = set()
        with self._guard:
            for index in indexes:
                delivery = deliveries[index]
                key = delivery.delivery_id
                if key in claimed or key in self._known:
                    continue
                other = self._writing.get(key)
                if other is not None:
                    busy.append(other)
                    later.append(index)
                    continue
                claimed.add(key)
                done = self._writing[key] = threading.Event()
                sequence = self._last_sequence = max(time.time_ns(), self._last_sequence + 1)
                mine.append((index, delivery, done, sequence))
        return mine, busy, later

    def _finish(self, delivery_id: str, done: threading.Event, *, stored: bool) -> None:
        with self._guard:
            del self._writing[delivery_id]
            if stored:
                self._known[delivery_id] = None
                while len(self._known) > self._remember_at_most:
                    del self._known[next(iter(self._known))]
        done.set()

    # -- the processing side ------------------------------------------------------------

    def pending(self) -> list[InboxEntry]:
        """The deliveries not marked processed, in arrival order."""
        processed = set(self.processed_ids())
        found = [entry for entry in self._entries() if entry.delivery_id not in processed]
        return sorted(found, key=lambda entry: entry.sequence)

    def read(self, entry: InboxEntry) -> Delivery:
        """The delivery ``entry`` names. ``FileNotFoundError`` once its segment is compacted
        away; ``ValueError`` for a line that is no longer that delivery."""
        fd = open_regular(entry.path)
        try:
            raw = os.pread(fd, entry.length, entry.offset)
        finally:
            os.close(fd)
        document: object = parse_json(raw)
        stored = cast(dict[str, object], document) if isinstance(document, dict) else {}
        payload = stored.get("payload")
        if not (
            stored.get("version") == INBOX_VERSION
            and stored.get("delivery") == entry.delivery_id
            and isinstance(payload, dict)
        ):
            raise ValueError(f"{entry.path} no longer holds delivery {entry.delivery_id} there")
        return Delivery(
            delivery_id=entry.delivery_id,
            event=entry.event,
            sequence=entry.sequence,
            received_at=str(stored.get("receivedAt", "")),
            payload=cast(dict[str, Any], payload),
        )

    def mark_processed(self, delivery_ids: Iterable[str]) -> None:
        """Record ``delivery_ids`` as processed (one locked write), keeping the last
        :data:`PROCESSED_KEPT`; their lines stay until :meth:`compact`."""
        new = list(dict.fromkeys(delivery_ids))
        if not new:
            return
        with locked(self.lock_path):
            fresh = set(new)
            kept = [done for done in self.processed_ids() if done not in fresh] + new
            write_json(
                self.directory / PROCESSED_NAME,
                {"version": INBOX_VERSION, "processed": kept[-PROCESSED_KEPT:]},
                indent=None,
            )

    def compact(self) -> int:
        """Drop the processed deliveries from every segment but the newest (a segment left
        with none is removed), and temporary files a killed compaction left; return how
        many deliveries went."""
        with locked(self.lock_path):
            processed = set(self.processed_ids())
            syncs = DirectorySyncs()
            removed = sum(self._compact(path, processed, syncs) for path in self._segments()[:-1])
            self._remove_stale_temporaries(syncs)
            syncs.flush()
        return removed

    def _compact(self, segment: Path, processed: set[str], syncs: DirectorySyncs) -> int:
        status, data, _problem = read_regular(segment)
        if status != "ok":
            return 0
        entries = list(scan(segment, data))
        kept = [e for e in entries if e.delivery_id not in processed]
        if len(kept) == len(entries):
            return 0
        if kept:
            lines = b"".join(data[e.offset : e.offset + e.length] for e in kept)
            write_text(segment, lines.decode("utf-8"), syncs=syncs)
        else:
            remove_file(segment, syncs=syncs)
        return len(entries) - len(kept)

    def processed_ids(self) -> list[str]:
        """The ids marked processed, oldest first; none when the file is missing or unreadable."""
        status, document, _problem = read_object(self.directory / PROCESSED_NAME)
        if status != "ok" or not isinstance(document, dict):
            return []
        found = cast(dict[str, object], document).get("processed")
        if not isinstance(found, list):
            return []
        return [item for item in cast(list[object], found) if isinstance(item, str)]

    # -- both ---------------------------------------------------------------------------

    def _segments(self) -> list[Path]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [self.directory / name for name in sorted(names) if SEGMENT_NAME.match(name)]

    def _entries(self) -> Iterator[InboxEntry]:
        """Every whole delivery line of every segment, in arrival order."""
        for segment in self._segments():
            status, data, _problem = read_regular(segment)
            if status == "ok":
                yield from scan(segment, data)

    def _remove_stale_temporaries(self, syncs: DirectorySyncs) -> None:
        try:
            with os.scandir(self.directory) as listing:
                temporaries = [entry for entry in listing if is_temp_name(entry.name)]
        except FileNotFoundError:
            return
        now = time.time()
        for entry in temporaries:
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > TEMP_MAX_AGE:
                    remove_file(Path(entry.path), syncs=syncs)
