"""`the-loop events`: read, filter and follow the event log, or print its catalogue.

The handler turns the flags into an ``eventquery.EventFilter``, reads the backlog,
renders it as a table, one JSON document or JSON lines, and with ``--follow`` keeps
printing matching events as they are appended until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    FORMAT_JSON,
    FORMAT_TABLE,
    format_parent,
    load_context,
    note,
    print_json,
    warn,
    work_item_type,
)
from the_loop.errors import EXIT_OK, UsageError
from the_loop.eventlog import ENVELOPE_KEYS, EVENT_TYPES, LEVELS

if TYPE_CHECKING:
    from datetime import datetime

    from the_loop.eventquery import EventFilter

FORMAT_JSONL = "jsonl"
HEADERS = ("ts", "level", "source", "event", "work_item", "fields")
#: Minimum column widths, so rows printed while following line up with the backlog.
MIN_WIDTHS: tuple[int, ...] = (24, 7, 8, 20, 20, 0)
SHOWN_KEYS = frozenset((*ENVELOPE_KEYS, "work_item"))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `events`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "events",
        parents=[format_parent(FORMAT_TABLE, FORMAT_JSON, FORMAT_JSONL, default=FORMAT_TABLE)],
        help="read, filter and follow the event log",
        description="Print the events of the append-only event log that match every filter.",
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        type=Path,
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
    from the_loop.eventquery import parse_since

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


def run(args: argparse.Namespace) -> int:
    """The `events` handler."""
    _warn_unknown_patterns(args.types)
    if args.catalogue:
        return _print_catalogue(args.types, args.format)
    if args.follow and args.format == FORMAT_JSON:
        raise UsageError("--follow streams events: use --format jsonl or table, not json")
    from the_loop.eventquery import EventFilter

    path: Path = args.file or load_context(args).layout.event_log
    event_filter = EventFilter(
        types=tuple(args.types),
        work_item=args.work_item,
        source=args.source,
        min_level=args.level,
        since=args.since,
    )
    try:
        end_offset, widths = _print_backlog(path, event_filter, args)
        if args.follow:
            _follow(path, event_filter, args.format, offset=end_offset, widths=widths)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, like any Unix filter.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _print_backlog(
    path: Path, event_filter: EventFilter, args: argparse.Namespace
) -> tuple[int, list[int]]:
    """Print the matching events already in the log; return where a follower starts
    and the table's column widths."""
    from the_loop.eventquery import query_events

    result = query_events(path, event_filter, limit=args.limit)
    if not result.found:
        note(
            f"waiting for {path} to appear" if args.follow else f"{path} does not exist: no events"
        )
    if result.corrupt:
        warn(f"skipped {result.corrupt} corrupt line(s) in {path}")
    widths = list(MIN_WIDTHS)
    if args.format == FORMAT_JSON:
        print_json(result.to_dict())
    elif args.format == FORMAT_JSONL:
        for event in result.events:
            _print_jsonl(event)
    else:
        widths = _print_table(result.events, follow=args.follow)
        if result.found and not result.events and not args.follow:
            note(f"no matching events in {path}")
    return result.end_offset, widths


def _follow(
    path: Path, event_filter: EventFilter, output_format: str, *, offset: int, widths: list[int]
) -> None:
    """Print matching events as they are appended, until Ctrl-C."""
    import time  # looked up per call: `time.sleep` is the one process boundary here

    from the_loop.eventquery import follow_events

    def corrupt_line(_line: bytes) -> None:
        warn(f"skipped 1 corrupt line(s) in {path}")

    sys.stdout.flush()
    for event in follow_events(
        path, event_filter, offset=offset, sleep=time.sleep, on_corrupt=corrupt_line
    ):
        if output_format == FORMAT_JSONL:
            _print_jsonl(event)
        else:
            _print_row(table_row(event), widths)
        sys.stdout.flush()


def _print_jsonl(event: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")


def _print_table(events: Iterable[Mapping[str, Any]], *, follow: bool) -> list[int]:
    """Print the header and rows (nothing when empty, unless following); return the widths."""
    rows = [table_row(event) for event in events]
    if not rows and not follow:
        return list(MIN_WIDTHS)
    widths = list(MIN_WIDTHS) if follow else [0] * len(HEADERS)
    for row in [list(HEADERS), *rows]:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    for row in [list(HEADERS), *rows]:
        _print_row(row, widths)
    return widths


def _print_row(row: Sequence[str], widths: Iterable[int]) -> None:
    line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
    sys.stdout.write(line.rstrip() + "\n")


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


def _print_catalogue(patterns: list[str], output_format: str) -> int:
    from the_loop.eventquery import matches_any

    catalogue = {
        name: meaning
        for name, meaning in EVENT_TYPES.items()
        if not patterns or matches_any(name, patterns)
    }
    if output_format == FORMAT_JSON:
        print_json({"eventTypes": catalogue})
    elif output_format == FORMAT_JSONL:
        for name, meaning in catalogue.items():
            _print_jsonl({"type": name, "meaning": meaning})
    else:
        width = max((len(name) for name in catalogue), default=0)
        for name, meaning in catalogue.items():
            sys.stdout.write(f"{name.ljust(width)}  {meaning}\n")
    return EXIT_OK


def _warn_unknown_patterns(patterns: list[str]) -> None:
    from the_loop.eventquery import matches_any

    for pattern in patterns:
        if not any(matches_any(name, [pattern]) for name in EVENT_TYPES):
            warn(f"--type {pattern!r} matches no catalogued event type")
