"""Reading the event log: filters, ``--since`` parsing, the backlog and the follower.

Pure: nothing here prints, reads the config or writes the log. The follower is a
generator with an injected ``sleep`` and ``stop`` so it can be driven without a clock.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from the_loop.eventlog.lines import LEVELS, iter_event_lines, parse_event_line
from the_loop.fsio import open_regular
from the_loop.ref import WorkItemRef

DEFAULT_POLL_INTERVAL = 0.5
SINCE_SHAPE = "an ISO timestamp (2026-11-29T10:00:00Z or 2026-11-29) or an age (45s, 30m, 2h, 1d)"

_AGE = re.compile(r"([0-9]+)([smhd])\Z")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_DEFAULT_LEVEL = "info"

Event = dict[str, Any]


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """``--since`` as an aware UTC datetime: an ISO timestamp/date or an age before ``now``.

    A timestamp without an offset is read as UTC. Raises ``ValueError`` naming the value.
    """
    value = text.strip()
    age = _AGE.match(value)
    if age is not None:
        moment = now if now is not None else datetime.now(UTC)
        return moment - timedelta(**{_AGE_UNITS[age.group(2)]: int(age.group(1))})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"invalid --since {text!r}: expected {SINCE_SHAPE}") from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def event_time(event: Mapping[str, Any]) -> datetime | None:
    """The event's ``ts`` as an aware datetime, or None when it is missing or unreadable."""
    stamp = event.get("ts")
    if not isinstance(stamp, str):
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def level_rank(level: object) -> int:
    """Position of ``level`` in ``LEVELS``; anything unknown ranks as ``info``."""
    name = level if isinstance(level, str) and level in LEVELS else _DEFAULT_LEVEL
    return LEVELS.index(name)


def same_work_item(value: object, wanted: WorkItemRef) -> bool:
    """True when an event's ``work_item`` field names ``wanted`` (canonically, else verbatim)."""
    if not isinstance(value, str):
        return False
    try:
        return WorkItemRef.parse(value) == wanted
    except ValueError:
        return value == wanted.ref


@dataclass(frozen=True)
class EventFilter:
    """Which events to keep; every criterion left empty matches everything.

    ``types``: shell-style globs, any may match. ``min_level``: one of ``LEVELS``.
    ``since``: events at or after this moment (events without a readable ``ts`` never match).
    """

    types: tuple[str, ...] = ()
    work_item: WorkItemRef | None = None
    source: str | None = None
    min_level: str | None = None
    since: datetime | None = None

    def matches(self, event: Mapping[str, Any]) -> bool:
        """True when ``event`` meets every criterion."""
        if self.types and not matches_any(str(event.get("event", "")), self.types):
            return False
        if self.work_item is not None and not same_work_item(
            event.get("work_item"), self.work_item
        ):
            return False
        if self.source is not None and event.get("source") != self.source:
            return False
        if self.min_level is not None and level_rank(event.get("level")) < level_rank(
            self.min_level
        ):
            return False
        if self.since is not None:
            moment = event_time(event)
            return moment is not None and moment >= self.since
        return True


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """True when ``name`` matches one of the shell-style ``patterns`` (case-sensitive)."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True)
class EventQuery:
    """The matching events of a log, the corrupt-line count, and where reading stopped.

    ``end_offset`` is the byte offset just past the last complete line read: a
    follower started there sees every later line exactly once.
    """

    events: tuple[Event, ...] = ()
    corrupt: int = 0
    end_offset: int = 0
    found: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"events": list(self.events), "corrupt": self.corrupt}


def query_events(
    path: Path, event_filter: EventFilter | None = None, *, limit: int | None = None
) -> EventQuery:
    """The events of ``path`` that match, keeping the last ``limit`` when given.

    A missing file is an empty result with ``found`` False; blank lines are ignored,
    lines that are not events are counted in ``corrupt``; a trailing partial line is
    left for a follower.
    """
    wanted = event_filter or EventFilter()
    events: list[Event] = []
    corrupt = offset = 0
    try:
        for line in iter_event_lines(path):
            offset += len(line)
            if not line.strip():
                continue
            event = parse_event_line(line)
            if event is None:
                corrupt += 1
            elif wanted.matches(event):
                events.append(event)
    except FileNotFoundError:
        return EventQuery(found=False)
    if limit is not None:
        events = events[-limit:] if limit > 0 else []
    return EventQuery(events=tuple(events), corrupt=corrupt, end_offset=offset)


def never() -> bool:
    """The default ``stop`` predicate: follow until interrupted."""
    return False


@dataclass
class _Cursor:
    """Where a follower is in the file: byte offset, pending partial line, file identity."""

    offset: int = 0
    pending: bytes = b""
    identity: tuple[int, int] | None = None


def _read_new(path: Path, cursor: _Cursor) -> bytes:
    """Bytes appended since the cursor; a replaced or truncated file is read from its start.

    A FIFO or other non-regular file raises ``fsio.StrangerFile`` instead of blocking.
    """
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            status = os.fstat(handle.fileno())
            identity = (status.st_dev, status.st_ino)
            if cursor.identity is None:
                cursor.identity = identity
            elif identity != cursor.identity or status.st_size < cursor.offset:
                cursor.identity, cursor.offset, cursor.pending = identity, 0, b""
            handle.seek(cursor.offset)
            data = handle.read()
    except FileNotFoundError:
        return b""
    cursor.offset += len(data)
    return data


def follow_lines(
    path: Path,
    *,
    offset: int = 0,
    sleep: Callable[[float], None] = time.sleep,
    stop: Callable[[], bool] = never,
    interval: float = DEFAULT_POLL_INTERVAL,
) -> Iterator[bytes]:
    """Yield each complete line appended to ``path`` from ``offset`` on, exactly once and whole.

    Polls every ``interval`` through ``sleep``; a partial trailing line waits in a buffer
    until its newline arrives. A missing file is waited for. Ends when ``stop()`` is true
    (checked after each poll).
    """
    cursor = _Cursor(offset=offset)
    while True:
        data = _read_new(path, cursor)
        if data:
            *complete, cursor.pending = (cursor.pending + data).split(b"\n")
            for line in complete:
                yield line + b"\n"
        if stop():
            return
        sleep(interval)


def follow_events(
    path: Path,
    event_filter: EventFilter | None = None,
    *,
    offset: int = 0,
    sleep: Callable[[float], None] = time.sleep,
    stop: Callable[[], bool] = never,
    interval: float = DEFAULT_POLL_INTERVAL,
    on_corrupt: Callable[[bytes], None] | None = None,
) -> Iterator[Event]:
    """Yield each matching event appended to ``path`` from ``offset`` on (see ``follow_lines``).

    Lines that are not events are passed to ``on_corrupt`` and skipped.
    """
    wanted = event_filter or EventFilter()
    lines = follow_lines(path, offset=offset, sleep=sleep, stop=stop, interval=interval)
    for line in lines:
        if not line.strip():
            continue
        event = parse_event_line(line)
        if event is None:
            if on_corrupt is not None:
                on_corrupt(line)
        elif wanted.matches(event):
            yield event
