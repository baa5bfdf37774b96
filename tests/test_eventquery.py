"""Unit tests for the event-log reader: filters, ``--since`` parsing, the backlog, following."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from the_loop.eventlog.log import EventLog, read_events
from the_loop.eventlog.query import (
    EventFilter,
    follow_events,
    follow_lines,
    parse_since,
    query_events,
)
from the_loop.ref import WorkItemRef

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
REF = WorkItemRef.parse("github:octo/repo#15")


def line(**fields: Any) -> bytes:
    return (json.dumps(fields, separators=(",", ":")) + "\n").encode()


def event(name: str = "session.closed", **fields: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "ts": "2026-11-29T11:00:00.000Z",
        "source": "sessions",
        "event": name,
        "level": "info",
        "pid": 1,
    }
    return envelope | fields


def append(path: Path, data: bytes) -> Callable[[], None]:
    def action() -> None:
        with open(path, "ab") as handle:
            handle.write(data)

    return action


class Script:
    """An injected ``sleep``/``stop`` pair: each sleep runs the next action; stop when done."""

    def __init__(self, *actions: Callable[[], None]) -> None:
        self.pending = list(actions)
        self.sleeps = 0

    def sleep(self, _seconds: float) -> None:
        self.sleeps += 1
        if self.pending:
            self.pending.pop(0)()

    def stop(self) -> bool:
        return not self.pending


# --- --since -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T10:00:00Z", datetime(2026, 11, 29, 10, 0, tzinfo=UTC)),
        ("2026-11-29T10:00:00", datetime(2026, 11, 29, 10, 0, tzinfo=UTC)),
        ("2026-11-29T12:00:00+02:00", datetime(2026, 11, 29, 10, 0, tzinfo=UTC)),
        ("2026-11-29", datetime(2026, 11, 29, 0, 0, tzinfo=UTC)),
        ("2026-11-29T10:00:00.250Z", datetime(2026, 11, 29, 10, 0, 0, 250000, tzinfo=UTC)),
    ],
)
def test_an_iso_since_is_read_as_utc_unless_it_carries_an_offset(
    text: str, expected: datetime
) -> None:
    assert parse_since(text, now=NOW) == expected


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("45s", timedelta(seconds=45)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
    ],
)
def test_a_relative_since_counts_back_from_now(text: str, age: timedelta) -> None:
    assert parse_since(text, now=NOW) == NOW - age


@pytest.mark.parametrize("text", ["", "yesterday", "3x", "-2h", "2 h", "2026-13-01", "1.5h"])
def test_a_bad_since_raises_a_value_error_naming_the_value(text: str) -> None:
    with pytest.raises(ValueError, match="invalid --since") as caught:
        parse_since(text, now=NOW)
    assert repr(text) in str(caught.value)
    assert "\n" not in str(caught.value)


# --- filters -----------------------------------------------------------------------------


def test_an_empty_filter_matches_every_event() -> None:
    assert EventFilter().matches(event())
    assert EventFilter().matches({"event": "foreign"})


def test_type_patterns_are_shell_globs_and_any_one_may_match() -> None:
    wanted = EventFilter(types=("session.*", "comment.posted"))
    assert wanted.matches(event("session.reset"))
    assert wanted.matches(event("comment.posted"))
    assert not wanted.matches(event("comment.failed"))
    assert not wanted.matches(event("workspace.cleaned"))


def test_type_patterns_are_case_sensitive() -> None:
    assert not EventFilter(types=("Session.*",)).matches(event("session.reset"))


def test_a_work_item_matches_any_spelling_of_the_same_ref() -> None:
    wanted = EventFilter(work_item=REF)
    assert wanted.matches(event(work_item="github:octo/repo#15"))
    assert wanted.matches(event(work_item="github:github.com/octo/repo#15"))
    assert not wanted.matches(event(work_item="github:octo/repo#16"))
    assert not wanted.matches(event(work_item="not a ref"))
    assert not wanted.matches(event(work_item=15))
    assert not wanted.matches(event())


def test_a_source_must_match_exactly() -> None:
    assert EventFilter(source="poll").matches(event(source="poll"))
    assert not EventFilter(source="poll").matches(event(source="poller"))


def test_a_minimum_level_keeps_that_level_and_above() -> None:
    wanted = EventFilter(min_level="warning")
    assert [
        level
        for level in ("debug", "info", "warning", "error")
        if wanted.matches(event(level=level))
    ] == ["warning", "error"]


def test_an_unknown_or_missing_level_ranks_as_info() -> None:
    assert EventFilter(min_level="info").matches({"event": "x", "level": "loud"})
    assert EventFilter(min_level="info").matches({"event": "x"})
    assert not EventFilter(min_level="warning").matches({"event": "x", "level": "loud"})


def test_since_keeps_events_at_or_after_the_moment_and_drops_undated_ones() -> None:
    wanted = EventFilter(since=datetime(2026, 11, 29, 11, 0, tzinfo=UTC))
    assert wanted.matches(event(ts="2026-11-29T11:00:00.000Z"))
    assert wanted.matches(event(ts="2026-11-29T11:00:00.001Z"))
    assert not wanted.matches(event(ts="2026-11-29T10:59:59.999Z"))
    assert not wanted.matches(event(ts="garbage"))
    assert not wanted.matches({"event": "x"})


def test_every_criterion_must_hold() -> None:
    wanted = EventFilter(types=("session.*",), work_item=REF, min_level="warning")
    assert wanted.matches(event("session.reset", level="error", work_item=REF.ref))
    assert not wanted.matches(event("session.reset", level="info", work_item=REF.ref))


# --- the backlog -------------------------------------------------------------------------


def test_a_missing_log_is_an_empty_result_that_says_it_was_not_found(tmp_path: Path) -> None:
    result = query_events(tmp_path / "absent.jsonl")
    assert result.events == ()
    assert result.corrupt == 0
    assert not result.found
    assert result.to_dict() == {"events": [], "corrupt": 0}


def test_corrupt_lines_are_counted_and_blank_lines_ignored(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(line(event="a") + b"not json\n\n[1,2]\n" + b'{"no":"event"}\n' + b"\xff\n")
    result = query_events(log)
    assert [item["event"] for item in result.events] == ["a"]
    assert result.corrupt == 4


def test_a_limit_keeps_the_last_matches(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(line(event="a", n=n) for n in range(5)) + line(event="b"))
    result = query_events(log, EventFilter(types=("a",)), limit=2)
    assert [item["n"] for item in result.events] == [3, 4]


def test_a_partial_trailing_line_is_left_for_the_follower(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    whole = line(event="a")
    log.write_bytes(whole + b'{"event":"b"')
    result = query_events(log)
    assert [item["event"] for item in result.events] == ["a"]
    assert result.corrupt == 0
    assert result.end_offset == len(whole)


def test_read_events_applies_keyword_filters(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", "sessions")
    log.emit("session.reset", work_item=REF.ref)
    log.emit("session.reset", work_item="github:octo/repo#16")
    log.emit("comment.posted", work_item=REF.ref)
    read = read_events(log.path, types=("session.*",), work_item=REF)
    assert [(item["event"], item["work_item"]) for item in read.events] == [
        ("session.reset", REF.ref)
    ]
    assert len(read_events(log.path).events) == 3


# --- following ---------------------------------------------------------------------------


def test_a_line_written_in_two_halves_is_yielded_once_and_whole(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"")
    whole = line(event="session.spawned", work_item=REF.ref)
    seen: list[bytes] = []
    seen_at_each_sleep: list[int] = []
    script = Script(append(log, whole[:10]), append(log, whole[10:]))

    def sleep(seconds: float) -> None:
        seen_at_each_sleep.append(len(seen))
        script.sleep(seconds)

    for item in follow_lines(log, sleep=sleep, stop=script.stop):
        seen.append(item)
    assert seen == [whole]
    assert seen_at_each_sleep == [0, 0]


def test_the_follower_starts_at_the_offset_it_is_given(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    backlog = line(event="old")
    log.write_bytes(backlog)
    script = Script(append(log, line(event="new")))
    lines = list(follow_lines(log, offset=len(backlog), sleep=script.sleep, stop=script.stop))
    assert lines == [line(event="new")]


def test_the_follower_waits_for_a_log_that_does_not_exist_yet(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "events.jsonl"

    def create() -> None:
        log.parent.mkdir()
        log.write_bytes(line(event="first"))

    script = Script(lambda: None, create)
    assert list(follow_lines(log, sleep=script.sleep, stop=script.stop)) == [line(event="first")]


def test_several_lines_arriving_in_one_poll_are_yielded_in_order(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    script = Script(append(log, line(event="a") + line(event="b") + b'{"event":'))
    lines = list(follow_lines(log, sleep=script.sleep, stop=script.stop))
    assert lines == [line(event="a"), line(event="b")]


def test_a_truncated_log_is_followed_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(line(event="old", padding="x" * 40))

    def truncate() -> None:
        log.write_bytes(line(event="fresh"))

    script = Script(truncate)
    lines = list(follow_lines(log, offset=log.stat().st_size, sleep=script.sleep, stop=script.stop))
    assert lines == [line(event="fresh")]


def test_a_replaced_log_is_followed_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(line(event="old"))

    def replace() -> None:
        fresh = tmp_path / "fresh.jsonl"
        fresh.write_bytes(line(event="new-one") + line(event="new-two"))
        fresh.replace(log)

    script = Script(lambda: None, replace)
    lines = list(follow_lines(log, offset=log.stat().st_size, sleep=script.sleep, stop=script.stop))
    assert lines == [line(event="new-one"), line(event="new-two")]


def test_following_events_filters_and_reports_corrupt_lines(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    corrupt: list[bytes] = []
    script = Script(
        append(log, line(event="session.reset", n=1) + b"oops\n" + line(event="comment.posted")),
        append(log, b"\n" + line(event="session.closed", n=2)),
    )
    events = list(
        follow_events(
            log,
            EventFilter(types=("session.*",)),
            sleep=script.sleep,
            stop=script.stop,
            on_corrupt=corrupt.append,
        )
    )
    assert [item["n"] for item in events] == [1, 2]
    assert corrupt == [b"oops\n"]


def test_the_follower_polls_at_the_interval_it_is_given(tmp_path: Path) -> None:
    intervals: list[float] = []
    script = Script(lambda: None)

    def sleep(seconds: float) -> None:
        intervals.append(seconds)
        script.sleep(seconds)

    list(follow_lines(tmp_path / "none.jsonl", sleep=sleep, stop=script.stop, interval=0.25))
    assert intervals == [0.25]


def _imported_modules(module: ModuleType) -> set[str]:
    """Every module ``module``'s source imports, at any depth of its body."""
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_query_reads_the_log_without_importing_its_writer() -> None:
    """No cycle: the writer may offer the published ``read_events`` over the query, but
    the query builds on the shared line format only."""
    import the_loop.eventlog.lines
    import the_loop.eventlog.log
    import the_loop.eventlog.query

    assert "the_loop.eventlog.log" not in _imported_modules(the_loop.eventlog.query)
    assert "the_loop.eventlog.log" not in _imported_modules(the_loop.eventlog.lines)
    assert "the_loop.eventlog.query" not in _imported_modules(the_loop.eventlog.lines)
