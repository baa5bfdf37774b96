"""`the-loop events`: read, filter and follow the event log, or print its catalogue.

The handler turns the flags into an ``eventlog.query.EventFilter``, reads the backlog
and returns it for the renderer (a table, one JSON document or JSON lines); with
``--follow`` the result goes on yielding matching events as they are appended, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    FORMAT_JSON,
    FORMAT_JSONL,
    format_parent,
    load_context,
    note,
    path_argument,
    warn,
    work_item_type,
)
from the_loop.commands.render import Result
from the_loop.errors import UsageError
from the_loop.eventlog.log import ENVELOPE_KEYS, EVENT_TYPES, LEVELS

if TYPE_CHECKING:
    from datetime import datetime

    from the_loop.eventlog.query import EventFilter

HEADERS = ("ts", "level", "source", "event", "work_item", "fields")
#: Minimum column widths, so rows printed while following line up with the backlog.
MIN_WIDTHS: tuple[int, ...] = (24, 7, 8, 20, 20, 0)
SHOWN_KEYS = frozenset((*ENVELOPE_KEYS, "work_item"))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `events`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "events",
        parents=[format_parent(table=True, jsonl=True)],
        help="read, filter and follow the event log",
        description="Print the events of the append-only event log that match every filter.",
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        type=path_argument,
        help="event log to read (default: eventLog.path, else <state.root>/logs/events.jsonl)",
    )
    _add_filters(parser)
    parser.add_argument(
        "--follow",
        action="store_true",
        help="after the matching events, print new ones as they are appended (Ctrl-C ends)",
    )
    parser.add_argument(
        "--types",
        dest="catalogue",
        action="store_true",
        help="print the event type catalogue (--type patterns narrow it)",
    )
    parser.set_defaults(func=run)
    return parser


def _add_filters(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("filters (an event must match every one given)")
    group.add_argument(
        "--type",
        dest="types",
        metavar="PATTERN",
        action="append",
        default=[],
        help="event type matches this shell-style glob (repeatable: any one may match)",
    )
    group.add_argument(
        "--work-item", metavar="REF", type=work_item_type, help="about this work item"
    )
    group.add_argument(
        "--source", metavar="NAME", help="written by this process (sessions, poll...)"
    )
    group.add_argument(
        "--level", metavar="MIN", choices=LEVELS, help="level MIN or above: " + ", ".join(LEVELS)
    )
    group.add_argument(
        "--since",
        metavar="WHEN",
        type=since_type,
        help="at or after WHEN: an ISO timestamp or date (UTC unless it has an offset), "
        "or an age: 45s, 30m, 2h, 1d",
    )
    group.add_argument(
        "--limit", metavar="N", type=positive_int, help="only the last N matching events"
    )


def since_type(text: str) -> datetime:
    """argparse ``type=`` for ``--since``: ``ValueError`` becomes a usage error."""
    from the_loop.eventlog.query import parse_since

    try:
        return parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def positive_int(text: str) -> int:
    """argparse ``type=`` for a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def run(args: argparse.Namespace) -> Result:
    """The `events` handler: the matching backlog, and with ``--follow`` what comes after."""
    _warn_unknown_patterns(args.types)
    if args.catalogue:
        return _catalogue(args.types)
    if args.follow and args.format == FORMAT_JSON:
        raise UsageError("--follow streams events: use --format jsonl or text, not json")
    from the_loop.eventlog.query import query_events

    path: Path = args.file or load_context(args).layout.event_log
    event_filter = _event_filter(args)
    backlog = query_events(path, event_filter, limit=args.limit)
    if not backlog.found:
        note(
            f"waiting for {path} to appear" if args.follow else f"{path} does not exist: no events"
        )
    if backlog.corrupt:
        warn(f"skipped {backlog.corrupt} corrupt line(s) in {path}")
    textual = args.format not in (FORMAT_JSON, FORMAT_JSONL)
    if textual and backlog.found and not backlog.events and not args.follow:
        note(f"no matching events in {path}")
    if not args.follow:
        rows = [table_row(event) for event in backlog.events] if textual else []
        return Result(
            items=backlog.events,
            text=lambda: _table_lines(rows, follow=False)[0],
            summary={"corrupt": backlog.corrupt},
        )
    following = Following(path, event_filter, backlog.end_offset)
    return Result(
        items=itertools.chain(backlog.events, following.events()),
        text=lambda: following.lines(backlog.events),
        summary={"corrupt": backlog.corrupt},
        streaming=True,
    )


def _event_filter(args: argparse.Namespace) -> EventFilter:
    from the_loop.eventlog.query import EventFilter

    return EventFilter(
        types=tuple(args.types),
        work_item=args.work_item,
        source=args.source,
        min_level=args.level,
        since=args.since,
    )


class Following:
    """The events appended after ``offset`` that match, until Ctrl-C."""

    def __init__(self, path: Path, event_filter: EventFilter, offset: int) -> None:
        self.path, self.event_filter, self.offset = path, event_filter, offset

    def events(self) -> Iterator[dict[str, Any]]:
        import time  # looked up per call: `time.sleep` is the one process boundary here

        from the_loop.eventlog.query import follow_events

        def corrupt_line(_line: bytes) -> None:
            warn(f"skipped 1 corrupt line(s) in {self.path}")

        yield from follow_events(
            self.path,
            self.event_filter,
            offset=self.offset,
            sleep=time.sleep,
            on_corrupt=corrupt_line,
        )

    def lines(self, backlog: Iterable[Mapping[str, Any]]) -> Iterator[str]:
        """The backlog's table (header always), then one row per followed event."""
        lines, widths = _table_lines([table_row(event) for event in backlog], follow=True)
        yield from lines
        for event in self.events():
            yield _row_line(table_row(event), widths)


def _table_lines(rows: list[list[str]], *, follow: bool) -> tuple[list[str], list[int]]:
    """The header and rows (nothing when empty, unless following), and the column widths."""
    if not rows and not follow:
        return [], list(MIN_WIDTHS)
    widths = list(MIN_WIDTHS) if follow else [0] * len(HEADERS)
    for row in [list(HEADERS), *rows]:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    return [_row_line(row, widths) for row in [list(HEADERS), *rows]], widths


def _row_line(row: Sequence[str], widths: Iterable[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()


def table_row(event: Mapping[str, Any]) -> list[str]:
    """One table row: the envelope columns, the work item, then ``key=value`` of the rest."""
    fields = " ".join(
        f"{key}={_cell(value)}" for key, value in event.items() if key not in SHOWN_KEYS
    )
    return [
        _cell(event.get("ts", "-")),
        _cell(event.get("level", "-")),
        _cell(event.get("source") or "-"),
        _cell(event.get("event", "-")),
        _cell(event.get("work_item") or "-"),
        fields,
    ]


def _cell(value: object) -> str:
    """A value on one line: plain strings as they are, anything else as compact JSON."""
    if isinstance(value, str) and value and value.isprintable() and " " not in value:
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _catalogue(patterns: list[str]) -> Result:
    from the_loop.eventlog.query import matches_any

    catalogue = {
        name: meaning
        for name, meaning in EVENT_TYPES.items()
        if not patterns or matches_any(name, patterns)
    }
    width = max((len(name) for name in catalogue), default=0)
    return Result(
        items=[{"type": name, "meaning": meaning} for name, meaning in catalogue.items()],
        text=lambda: [f"{name.ljust(width)}  {meaning}" for name, meaning in catalogue.items()],
    )


def _warn_unknown_patterns(patterns: list[str]) -> None:
    from the_loop.eventlog.query import matches_any

    for pattern in patterns:
        if not any(matches_any(name, [pattern]) for name in EVENT_TYPES):
            warn(f"--type {pattern!r} matches no catalogued event type")
