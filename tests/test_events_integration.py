"""`the-loop events` end to end: argv through ``main`` against real log files."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from the_loop.cli import main
from the_loop.eventlog.log import EVENT_TYPES, EventLog


def default_log() -> Path:
    """The log under the per-user state root: no ``.the-loop/`` is at or above the cwd."""
    return Path(os.environ["HOME"]) / ".the-loop" / "logs" / "events.jsonl"


def write_events(path: Path, *events: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        for item in events:
            handle.write(json.dumps(item, separators=(",", ":")) + "\n")


def stamped(name: str, ts: str = "2026-11-29T10:00:00.000Z", **fields: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = {"ts": ts, "source": "sessions", "event": name, "level": "info"}
    return envelope | {"pid": 7} | fields


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["events", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def jsonl(out: str) -> list[dict[str, Any]]:
    return [json.loads(text) for text in out.splitlines()]


@pytest.fixture
def sample_log(tmp_path: Path) -> Path:
    log = tmp_path / "events.jsonl"
    write_events(
        log,
        stamped("session.registered", work_item="github:octo/repo#15", harness="claude"),
        stamped("session.reset", level="warning", work_item="github:github.com/octo/repo#15"),
        stamped("comment.failed", level="error", source="poll", work_item="github:octo/lib#7"),
        stamped("session.closed", ts="2026-11-29T12:00:00.000Z", work_item="github:octo/lib#7"),
    )
    return log


def test_the_default_log_is_the_one_under_the_state_root(
    capsys: pytest.CaptureFixture[str],
) -> None:
    EventLog(default_log(), "sessions").emit("session.paused", work_item="github:octo/repo#15")
    code, out, err = run(capsys, "--format", "jsonl")
    assert code == 0
    assert err == ""
    assert [(item["event"], item["source"]) for item in jsonl(out)] == [
        ("session.paused", "sessions")
    ]


def test_the_configured_event_log_path_is_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configured = tmp_path / "elsewhere" / "trail.jsonl"
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"eventLog:\n  path: {configured}\n", encoding="utf-8")
    write_events(configured, stamped("session.resumed"))
    write_events(default_log(), stamped("session.paused"))
    code = main(["--config", str(config), "events", "--format", "jsonl"])
    assert code == 0
    assert [item["event"] for item in jsonl(capsys.readouterr().out)] == ["session.resumed"]


def test_the_table_shows_the_envelope_the_work_item_and_the_other_fields(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--file", str(sample_log), "--limit", "1", "--type", "session.reg*")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["ts", "level", "source", "event", "work_item", "fields"]
    assert row.split() == [
        "2026-11-29T10:00:00.000Z",
        "info",
        "sessions",
        "session.registered",
        "github:octo/repo#15",
        "harness=claude",
    ]


def test_json_is_one_document_with_the_events_and_the_corrupt_count(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(sample_log, "ab") as handle:
        handle.write(b"{torn\n")
    code, out, err = run(capsys, "--file", str(sample_log), "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert list(document) == ["version", "command", "ok", "summary", "items", "warnings", "errors"]
    assert (document["command"], document["summary"]) == ("events", {"corrupt": 1})
    assert document["warnings"] == [f"skipped 1 corrupt line(s) in {sample_log}"]
    assert [item["event"] for item in document["items"]] == [
        "session.registered",
        "session.reset",
        "comment.failed",
        "session.closed",
    ]
    assert err == f"warning: skipped 1 corrupt line(s) in {sample_log}\n"


def test_jsonl_is_one_compact_event_per_line_and_nothing_else(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--file", str(sample_log), "--format", "jsonl")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4
    assert all(": " not in text and json.loads(text)["event"] for text in lines)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--type", "session.*"], ["session.registered", "session.reset", "session.closed"]),
        (["--type", "comment.*", "--type", "*.closed"], ["comment.failed", "session.closed"]),
        (["--work-item", "github:octo/repo#15"], ["session.registered", "session.reset"]),
        (["--source", "poll"], ["comment.failed"]),
        (["--level", "warning"], ["session.reset", "comment.failed"]),
        (["--since", "2026-11-29T11:00:00Z"], ["session.closed"]),
        (["--since", "2026-11-29T13:00:00+02:00"], ["session.closed"]),
        (["--limit", "2"], ["comment.failed", "session.closed"]),
        (["--type", "session.*", "--limit", "1", "--level", "warning"], ["session.reset"]),
    ],
)
def test_filters_select_the_matching_events(
    sample_log: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: list[str]
) -> None:
    code, out, _ = run(capsys, "--file", str(sample_log), "--format", "jsonl", *argv)
    assert code == 0
    assert [item["event"] for item in jsonl(out)] == expected


def test_a_relative_since_keeps_only_recent_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    write_events(log, stamped("session.paused"))
    EventLog(log, "sessions").emit("session.resumed")
    code, out, _ = run(capsys, "--file", str(log), "--since", "30m", "--format", "jsonl")
    assert code == 0
    assert [item["event"] for item in jsonl(out)] == ["session.resumed"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--work-item", "gh:octo/repo#15"], "invalid work item"),
        (["--since", "yesterday"], "invalid --since 'yesterday'"),
        (["--limit", "0"], "expected a positive integer"),
        (["--limit", "many"], "expected a positive integer"),
        (["--level", "loud"], "invalid choice"),
        (["--format", "yaml"], "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    sample_log: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["events", "--file", str(sample_log), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err.splitlines()[-1]


def test_following_as_one_json_document_is_refused(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--file", str(sample_log), "--follow", "--format", "json")
    assert code == 2
    assert out == ""
    assert err.startswith("error: --follow")


def test_a_missing_log_is_an_empty_result_with_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "version": 1,
        "command": "events",
        "ok": True,
        "summary": {"corrupt": 0},
        "items": [],
        "warnings": [],
        "errors": [],
    }
    assert err == f"note: {default_log()} does not exist: no events\n"


def test_no_matches_is_exit_0_with_an_empty_table_and_a_note(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--file", str(sample_log), "--source", "nobody")
    assert code == 0
    assert out == ""
    assert err == f"note: no matching events in {sample_log}\n"


def test_a_pattern_no_catalogued_type_matches_is_warned_about(
    sample_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--file", str(sample_log), "--type", "sesion.*", "--format", "jsonl")
    assert code == 0
    assert "warning: --type 'sesion.*' matches no catalogued event type" in err


def test_types_prints_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--types")
    assert code == 0
    rows = out.splitlines()
    assert [row.split()[0] for row in rows] == list(EVENT_TYPES)
    assert rows[0].split(None, 1)[1] == next(iter(EVENT_TYPES.values()))


def test_types_as_json_is_the_catalogue_and_type_patterns_narrow_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "--types", "--format", "json")
    assert code == 0
    items = json.loads(out)["items"]
    assert {item["type"]: item["meaning"] for item in items} == EVENT_TYPES
    code, out, _ = run(capsys, "--types", "--type", "comment.*", "--format", "jsonl")
    assert code == 0
    assert [item["type"] for item in jsonl(out)] == ["comment.posted", "comment.failed"]


def interrupt_after(*actions: Callable[[], None]) -> Callable[[float], None]:
    """A stand-in for ``time.sleep``: runs one action per call, then acts as Ctrl-C."""
    pending = list(actions)

    def sleep(_seconds: float) -> None:
        if not pending:
            raise KeyboardInterrupt
        pending.pop(0)()

    return sleep


def test_follow_prints_the_backlog_then_new_matching_events_until_ctrl_c(
    sample_log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    torn = json.dumps(stamped("session.paused", work_item="github:octo/lib#7")).encode() + b"\n"

    def write(data: bytes) -> Callable[[], None]:
        def action() -> None:
            with open(sample_log, "ab") as handle:
                handle.write(data)

        return action

    monkeypatch.setattr(
        time,
        "sleep",
        interrupt_after(
            write(torn[:15]),
            write(torn[15:] + json.dumps(stamped("comment.posted")).encode() + b"\n"),
        ),
    )
    code, out, err = run(
        capsys,
        *("--file", str(sample_log), "--follow", "--format", "jsonl"),
        *("--work-item", "github:octo/lib#7", "--limit", "1"),
    )
    assert code == 130
    assert [item["event"] for item in jsonl(out)] == ["session.closed", "session.paused"]
    assert err == "interrupted\n"


def test_follow_waits_for_a_log_that_does_not_exist_yet(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        time,
        "sleep",
        interrupt_after(
            lambda: None, lambda: write_events(default_log(), stamped("session.spawned"))
        ),
    )
    code, out, err = run(capsys, "--follow")
    assert code == 130
    header, row = out.splitlines()
    assert header.split()[0] == "ts"
    assert row.split()[3] == "session.spawned"
    assert err.splitlines()[0] == f"note: waiting for {default_log()} to appear"
