"""A hostile state root: a torn log tail, FIFOs and bad pidfiles, lines nested too deep.

Everything that could hang runs in a subprocess under a timeout, so a regression
fails the test instead of stalling the suite.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.hostile import HANG_GUARD, ITEM, configure, run_cli, seed
from the_loop.dispatch.daemons import pidfile_problems, read_pid
from the_loop.eventlog.log import EventLog, read_events
from the_loop.eventlog.query import follow_events
from the_loop.fsio import MAX_JSON_DEPTH, append_lines, read_object

FRAGMENT = b'{"ts":"x","event":"session.re'


# Point 2: the torn log tail


def test_an_event_after_someone_s_torn_last_line_starts_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    config, layout = configure(tmp_path)
    layout.event_log.parent.mkdir(parents=True)
    layout.event_log.write_bytes(FRAGMENT)
    assert EventLog(layout.event_log, "sessions").emit("session.reset", work_item=ITEM.ref)
    found = run_cli(
        tmp_path, "--config", str(config), "events", "--work-item", ITEM.ref, "--format", "json"
    )
    assert found.returncode == 0, found.stderr
    document = json.loads(found.stdout)
    assert [event["event"] for event in document["items"]] == ["session.reset"]
    assert document["summary"]["corrupt"] == 1
    assert layout.event_log.read_bytes().startswith(FRAGMENT + b"\n{")


def test_a_reset_after_a_torn_last_line_is_found_by_events(tmp_path: Path) -> None:
    config, layout = configure(tmp_path)
    layout.event_log.parent.mkdir(parents=True)
    layout.event_log.write_bytes(FRAGMENT)
    seed(layout)
    reset = run_cli(tmp_path, "--config", str(config), "sessions", "reset", "--work-item", ITEM.ref)
    assert reset.returncode == 0, reset.stderr
    found = run_cli(
        tmp_path, "--config", str(config), "events", "--work-item", ITEM.ref, "--format", "jsonl"
    )
    assert [json.loads(line)["event"] for line in found.stdout.splitlines()] == ["session.reset"]
    assert layout.event_log.read_bytes().startswith(FRAGMENT + b"\n")


def test_a_write_that_stops_short_leaves_the_log_exactly_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"event":"a"}\n' + FRAGMENT)
    before = log.read_bytes()
    calls: list[int] = []

    def disk_fills_up(fd: int, data: memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return os.write(fd, data[:7])  # a short write, as on a nearly full disk
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        append_lines(log, b'{"event":"b"}\n', write=disk_fills_up)
    assert len(calls) == 2
    assert log.read_bytes() == before


def test_a_write_that_writes_nothing_is_a_failure_not_a_loop(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"event":"a"}\n')
    with pytest.raises(OSError, match="stopped short"):
        append_lines(log, b'{"event":"b"}\n', write=lambda fd, data: 0)
    assert log.read_bytes() == b'{"event":"a"}\n'


def test_a_whole_line_is_appended_after_a_complete_last_line_without_a_blank_one(
    tmp_path: Path,
) -> None:
    log = tmp_path / "logs" / "events.jsonl"
    append_lines(log, b'{"event":"a"}\n')
    append_lines(log, b'{"event":"b"}\n')
    assert log.read_bytes() == b'{"event":"a"}\n{"event":"b"}\n'


# Point 3: special files


def test_events_on_a_fifo_log_is_one_error_line_not_a_hang(tmp_path: Path) -> None:
    config, layout = configure(tmp_path)
    layout.event_log.parent.mkdir(parents=True)
    os.mkfifo(layout.event_log)
    for form in ("text", "json", "jsonl"):
        result = run_cli(tmp_path, "--config", str(config), "events", "--format", form)
        assert result.returncode == 1
        assert result.stderr == f"error: {layout.event_log} is a FIFO, not a regular file\n"


def test_following_a_fifo_log_is_one_error_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    result = run_cli(tmp_path, "events", "--file", str(fifo), "--follow", "--format", "jsonl")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == f"error: {fifo} is a FIFO, not a regular file"


def test_emit_to_a_fifo_fails_at_once_and_writes_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    script = (
        "import sys; from pathlib import Path; from the_loop.eventlog.log import EventLog; "
        "sys.exit(0 if EventLog(Path(sys.argv[1])).emit('session.reset') is False else 1)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(fifo)], timeout=HANG_GUARD, check=False
    )
    assert result.returncode == 0
    assert fifo.is_fifo()


@pytest.mark.parametrize("selection", [["--work-item", ITEM.ref], ["--all"]])
def test_a_reset_with_a_fifo_log_refuses_once_and_resets_nothing(
    tmp_path: Path, selection: list[str]
) -> None:
    config, layout = configure(tmp_path)
    layout.event_log.parent.mkdir(parents=True)
    os.mkfifo(layout.event_log)
    seed(layout)
    record = layout.portable_dir / f"{ITEM.slug}.json"
    before = record.read_bytes()
    reset = run_cli(tmp_path, "--config", str(config), "sessions", "reset", *selection)
    assert reset.returncode == 1
    assert reset.stderr == (
        f"error: {layout.event_log} is a FIFO, not a regular file: no session.reset event "
        "can be appended to it, so nothing was reset\n"
    )
    assert record.read_bytes() == before
    assert layout.event_log.is_fifo()


def test_a_dry_run_with_a_fifo_log_warns_once(tmp_path: Path) -> None:
    config, layout = configure(tmp_path)
    layout.event_log.parent.mkdir(parents=True)
    os.mkfifo(layout.event_log)
    seed(layout)
    argv = ["--config", str(config), "sessions", "reset", "--all", "--dry-run"]
    result = run_cli(tmp_path, *argv)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "FIFO" in line] == [
        f"warning: {layout.event_log} is a FIFO, not a regular file: no session.reset event "
        "can be appended to it"
    ]


@pytest.mark.parametrize("pidfile", ["poll.pid", "gh-webhook.pid"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_fifo_pidfile_is_named_once_and_never_hangs_reset_all(
    tmp_path: Path, pidfile: str, dry_run: bool
) -> None:
    config, layout = configure(tmp_path)
    os.mkfifo(layout.root / pidfile)
    seed(layout)
    argv = ["--config", str(config), "sessions", "reset", "--all"]
    result = run_cli(tmp_path, *argv, *(["--dry-run"] if dry_run else []))
    assert result.returncode == 0, result.stderr
    named = [line for line in result.stderr.splitlines() if pidfile in line]
    assert named == [
        f"warning: cannot tell whether a daemon is running: {layout.root / pidfile}: "
        "it is a FIFO, not a regular file"
    ]


@pytest.mark.parametrize("content", ["99999999999999999999999\n", "²\n", "-5\n", "12abc\n"])
def test_a_pidfile_that_holds_no_pid_is_reported_not_a_traceback(
    tmp_path: Path, content: str
) -> None:
    config, layout = configure(tmp_path)
    layout.poll_pidfile.write_text(content, "utf-8")
    seed(layout)
    assert read_pid(layout.poll_pidfile) is None
    assert pidfile_problems(layout) == [f"{layout.poll_pidfile} does not hold a process id"]
    result = run_cli(tmp_path, "--config", str(config), "sessions", "reset", "--all")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "does not hold a process id" in result.stderr


def test_a_pidfile_of_a_running_process_is_still_read(tmp_path: Path) -> None:
    pidfile = tmp_path / "poll.pid"
    pidfile.write_text(f"{os.getpid()}\n", "utf-8")
    assert read_pid(pidfile) == os.getpid()


def test_a_fifo_record_is_a_stranger_s_file_read_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "github-octo-app-15.json")
    assert read_object(tmp_path / "github-octo-app-15.json") == (
        "stranger",
        None,
        "it is a FIFO, not a regular file",
    )


# Point 5 (read side): nesting bound for log lines and records


def _deep_log(tmp_path: Path) -> Path:
    log = tmp_path / "events.jsonl"
    log.write_bytes(
        b"[" * 100_000 + b"\n"
        + json.dumps({"event": "session.reset", "work_item": ITEM.ref}).encode() + b"\n"
    )  # fmt: skip
    return log


@pytest.mark.parametrize("form", ["text", "json", "jsonl"])
def test_a_log_line_nested_100000_deep_is_one_corrupt_line(tmp_path: Path, form: str) -> None:
    log = _deep_log(tmp_path)
    result = run_cli(tmp_path, "events", "--file", str(log), "--format", form)
    assert result.returncode == 0, result.stderr
    assert f"warning: skipped 1 corrupt line(s) in {log}" in result.stderr
    assert "session.reset" in result.stdout


def test_a_follower_skips_a_line_nested_too_deep_as_corrupt(tmp_path: Path) -> None:
    log = _deep_log(tmp_path)
    corrupt: list[bytes] = []
    events = list(follow_events(log, stop=lambda: True, on_corrupt=corrupt.append))
    assert [event["event"] for event in events] == ["session.reset"]
    assert len(corrupt) == 1


def test_nesting_just_past_the_limit_is_corrupt_and_at_the_limit_is_read(tmp_path: Path) -> None:
    def line(depth: int) -> bytes:
        return b'{"event":"x","deep":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"

    log = tmp_path / "events.jsonl"
    log.write_bytes(line(MAX_JSON_DEPTH) + line(MAX_JSON_DEPTH + 1))
    result = read_events(log)
    assert (len(result.events), result.corrupt) == (1, 1)


def test_a_record_nested_past_the_limit_is_unreadable_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    deep: object = {}
    for _ in range(600):
        deep = {"d": deep}
    path = tmp_path / "github-octo-app-15.json"
    path.write_text(json.dumps({"ref": ITEM.ref, "poll": deep}), "utf-8")
    status, data, problem = read_object(path)
    assert (status, data) == ("unreadable", None)
    assert f"deeper than {MAX_JSON_DEPTH} levels" in problem


def test_a_fifo_crash_log_is_named_and_the_traceback_goes_to_the_fallback(
    tmp_path: Path,
) -> None:
    config, layout = configure(tmp_path)
    layout.crash_log.parent.mkdir(parents=True)
    os.mkfifo(layout.crash_log)
    fallback_dir = tmp_path / "tmp"
    fallback_dir.mkdir()
    script = (
        "import argparse, sys; from the_loop.commands.crash import report_bug; "
        "print(report_bug(ValueError('kaboom'), argparse.Namespace(config=sys.argv[1]), []))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(config)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
        env={**os.environ, "TMPDIR": str(fallback_dir)},
    )
    assert result.returncode == 0, result.stderr
    fallback = fallback_dir / f"the-loop-crash-{os.getuid()}.log"
    assert f"{layout.crash_log} is a FIFO, not a regular file" in result.stdout
    assert f"details in {fallback}" in result.stdout
    assert "ValueError: kaboom" in fallback.read_text("utf-8")
    assert layout.crash_log.is_fifo()
