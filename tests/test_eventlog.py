"""The append-only event log: envelope, one write per line, and the catalogue."""

from __future__ import annotations

import ast
import json
import multiprocessing
import re
from pathlib import Path

from the_loop.errors import ignore_warning, or_ignore_warnings
from the_loop.eventlog.log import ENVELOPE_KEYS, EVENT_TYPES, NO_EVENTS, EventLog, or_no_events
from the_loop.eventlog.query import query_events

PACKAGE = Path(__file__).resolve().parents[1] / "the_loop"


def test_an_event_is_one_compact_line_with_the_envelope_first(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "logs" / "events.jsonl", source="sessions")
    assert log.emit("session.reset", work_item="github:o/r#1", removed=["session"])
    line = (tmp_path / "logs" / "events.jsonl").read_text()
    assert line.endswith("\n") and line.count("\n") == 1
    event = json.loads(line)
    assert list(event)[:5] == list(ENVELOPE_KEYS)
    assert event["source"] == "sessions" and event["level"] == "info"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["ts"])


def test_event_fields_can_never_overwrite_the_envelope(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", source="sessions")
    log.emit("session.reset", event="forged", pid=1, source="evil", work_item="x")
    event = query_events(tmp_path / "events.jsonl").events[0]
    assert event["event"] == "session.reset"
    assert event["source"] == "sessions"
    assert event["shadowed"] == {"event": "forged", "pid": 1, "source": "evil"}


def test_emitting_appends_and_never_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"event":"old"}\nnot json\n')
    EventLog(path).emit("session.closed", work_item="x")
    data = path.read_bytes()
    assert data.startswith(b'{"event":"old"}\nnot json\n')
    read = query_events(path)
    assert [e["event"] for e in read.events] == ["old", "session.closed"]
    assert read.corrupt == 1


def test_an_unwritable_log_reports_false_instead_of_raising(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").mkdir()
    assert EventLog(tmp_path / "events.jsonl").emit("session.closed") is False


def _emit_many(path: str, worker: int) -> None:
    log = EventLog(Path(path), source=f"w{worker}")
    for index in range(200):
        log.emit("session.touched", index=index, padding="x" * 500)


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_emit_many, args=(str(path), n)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    read = query_events(path)
    assert read.corrupt == 0
    assert len(read.events) == 800


def _emit_calls() -> list[tuple[str, ast.Call]]:
    """Every ``<something>.emit(...)`` call in the package, with where it is."""
    calls: list[tuple[str, ast.Call]] = []
    for source in PACKAGE.rglob("*.py"):
        tree = ast.parse(source.read_text(), filename=str(source))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "emit"
            ):
                calls.append((f"{source}:{node.lineno}", node))
    return calls


def test_every_emitted_event_type_is_catalogued() -> None:
    emitted = {
        call.args[0].value
        for _, call in _emit_calls()
        if call.args and isinstance(call.args[0], ast.Constant)
    }
    assert emitted, "the scan found no emit() calls at all"
    assert emitted <= set(EVENT_TYPES), sorted(str(name) for name in emitted - set(EVENT_TYPES))


def test_every_emit_call_names_its_event_with_a_literal() -> None:
    for where, call in _emit_calls():
        assert call.args and isinstance(call.args[0], ast.Constant), where


def test_no_emit_call_passes_an_envelope_key_as_a_field() -> None:
    for where, call in _emit_calls():
        names = {keyword.arg for keyword in call.keywords} - {"level"}
        assert not names & set(ENVELOPE_KEYS), where


def test_the_null_event_log_writes_nothing_and_reports_no_failure(tmp_path: Path) -> None:
    before = sorted(tmp_path.rglob("*"))
    assert NO_EVENTS.emit("session.closed", work_item="x") is True
    assert or_no_events(None) is NO_EVENTS
    log = EventLog(tmp_path / "events.jsonl")
    assert or_no_events(log) is log
    assert sorted(tmp_path.rglob("*")) == before


def test_the_no_op_warning_sink_stands_in_for_none() -> None:
    heard: list[str] = []
    assert or_ignore_warnings(None) is ignore_warning
    assert or_ignore_warnings(heard.append) == heard.append
    ignore_warning("dropped")
    assert heard == []


def _splat_keywords(name: str) -> set[str]:
    """The keywords every call of a function or method called ``name`` passes."""
    return {
        keyword.arg
        for source in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(source.read_text(), filename=str(source)))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == name
        for keyword in node.keywords
        if keyword.arg is not None
    }


def _emitted_fields() -> list[tuple[str, str, set[str]]]:
    """Each emit call's event and field names; a ``**extra`` splat of the enclosing
    function's keyword parameter stands for the keywords its callers pass."""
    found: list[tuple[str, str, set[str]]] = []
    for source in PACKAGE.rglob("*.py"):
        tree = ast.parse(source.read_text(), filename=str(source))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "emit"):
                    continue
                assert isinstance(call.args[0], ast.Constant)
                names = {keyword.arg for keyword in call.keywords} - {"level"}
                if None in names:
                    kwarg = function.args.kwarg
                    assert kwarg is not None, f"{source}:{call.lineno} splats a local mapping"
                    names = (names - {None}) | _splat_keywords(function.name)
                where = f"{source}:{call.lineno}"
                found.append((where, str(call.args[0].value), {str(name) for name in names}))
    return found


def test_every_emitted_event_field_is_named_in_its_catalogue_entry() -> None:
    emitted = _emitted_fields()
    unnamed: list[tuple[str, str, list[str]]] = []
    for where, event, names in emitted:
        meaning = EVENT_TYPES[event]
        missing = sorted(name for name in names if not re.search(rf"\b{name}\b", meaning))
        if missing:
            unnamed.append((where, event, missing))
    assert unnamed == []
    assert any(event == "session.spawned" and "resumed" in names for _, event, names in emitted)
