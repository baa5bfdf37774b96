"""``sessions reset`` end to end through ``main([...])`` on real state roots.

Gherkin docstrings name the requirement of seed design 000 each test proves.
Live sessions here have no tmux behind them; the real-tmux end-to-end reset
lives in ``test_reset_e2e.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.eventlog.query import query_events
from the_loop.layout import legacy_layout
from the_loop.portable.store import POLL
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/repo#15")
OTHER = WorkItemRef.parse("github:octo/repo#21")
STRANGERS = ("notes.txt", "README.json", "x.json", ".github-octo-repo-15.json.abc.tmp")
STATE_DIRS = ("", "local", "portable", "logs", "locks", "locks/local", "locks/portable", "sessions")


class Machine(World):
    """A state root at ``<tmp>/state`` and a config file naming it (the shared world).

    ``routing`` is merged over a tmux that cannot run; ``document`` adds top-level keys.
    """

    def __init__(
        self, tmp_path: Path, routing: dict[str, Any] | None = None, **document: Any
    ) -> None:
        tmux = {"tmux": {"binary": "/nonexistent/tmux-for-tests"}}
        super().__init__(tmp_path, {"routing": {**tmux, **(routing or {})}, **document})

    def run(self, *argv: str) -> int:
        """``the-loop sessions reset <argv>`` on this machine's config."""
        return super().run("sessions", "reset", *argv)

    def session(self, ref: WorkItemRef, status: str = "closed") -> None:
        self.registry.register(
            Session(work_item=ref, harness="claude", harness_session_id="s", cwd="/nowhere")
        )
        if status == "closed":
            self.registry.close(ref)
        elif status == "paused":
            self.registry.pause(ref)

    def armed(self, ref: WorkItemRef) -> None:
        self.control.record(ref, "start", source="cli", actor="me")
        self.store.write_section(ref, POLL, {"seenComments": ["IC_1"], "commentAttempts": {}})

    def snapshot(self) -> dict[str, bytes]:
        root = self.layout.root
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and "locks" not in p.parts
        }

    def strangers(self) -> list[Path]:
        placed: list[Path] = []
        for name in STATE_DIRS:
            directory = self.layout.root / name
            directory.mkdir(parents=True, exist_ok=True)
            for name in STRANGERS:
                path = directory / name
                path.write_text("not yours\n")
                placed.append(path)
        return placed


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def test_reset_one_item(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    """Given an item with a closed session and armed portable state
    When I reset it
    Then its record and sections are gone and the output lists them (exit 0)."""
    machine.session(ITEM)
    machine.armed(ITEM)
    assert machine.run("--work-item", ITEM.ref) == 0
    out = capsys.readouterr().out
    assert out == f"{ITEM.ref}: reset — removed session, control, poll\nreset 1 work item\n"
    assert machine.registry.find_by_work_item(ITEM, include_closed=True) is None
    assert not machine.store.path_for(ITEM).exists()


def test_reset_several_items_and_a_ref_named_twice_once(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given two items  When I reset both, one named twice  Then each is reset once."""
    machine.armed(ITEM)
    machine.armed(OTHER)
    assert (
        machine.run("--work-item", ITEM.ref, "--work-item", OTHER.ref, "--work-item", ITEM.ref) == 0
    )
    out = capsys.readouterr().out
    assert out.count(f"{ITEM.ref}: reset") == 1
    assert out.endswith("reset 2 work items\n")
    resets = [
        e for e in query_events(machine.layout.event_log).events if e["event"] == "session.reset"
    ]
    assert len(resets) == 2


def test_reset_all(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    """Given state for several items  When I reset --all  Then every item is reset (exit 0)."""
    machine.session(ITEM)
    machine.armed(OTHER)
    assert machine.run("--all") == 0
    assert capsys.readouterr().out.endswith("reset 2 work items\n")
    assert machine.run("--all") == 1
    err = capsys.readouterr().err
    assert "nothing to reset: this machine holds no work-item state" in err


def test_dry_run_changes_nothing_and_never_uses_the_past_tense(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given a live item and an armed one  When I reset --all --dry-run
    Then nothing changes and the report is in the future tense."""
    machine.session(ITEM, "active")
    machine.armed(ITEM)
    machine.armed(OTHER)
    before = machine.snapshot()
    assert machine.run("--all", "--dry-run") == 0
    out = capsys.readouterr().out
    assert machine.snapshot() == before
    assert out == (
        f"{ITEM.ref}: would end a live claude session\n"
        f"{ITEM.ref}: would remove session, control, poll\n"
        f"{OTHER.ref}: would remove control, poll\n"
        "would reset 2 work items (dry run — nothing was changed)\n"
    )
    for word in ("removed", "ended", "reset —"):
        assert word not in out


def test_no_selector_is_a_usage_error(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    """R2.3: neither --work-item nor --all → exit 2; a bare reset never resets everything."""
    machine.armed(ITEM)
    before = machine.snapshot()
    assert machine.run() == 2
    assert machine.snapshot() == before
    assert "one of the arguments --work-item --all is required" in capsys.readouterr().err


def test_both_selectors_is_a_usage_error(machine: Machine) -> None:
    """R2.4: --work-item and --all together → exit 2, nothing removed."""
    machine.armed(ITEM)
    before = machine.snapshot()
    assert machine.run("--all", "--work-item", ITEM.ref) == 2
    assert machine.snapshot() == before


@pytest.mark.parametrize(
    "bad",
    [
        "github:octo/repo/x#1",
        "github:../repo#1",
        "github:octo/..#1",
        "github:-octo/repo#1",
        "github:octo/re\x00po#1",
        "github:/octo/repo#1",
        "/etc/passwd",
        "github:octo/repo#0",
    ],
)
def test_a_bad_ref_anywhere_means_exit_2_and_nothing_removed(
    machine: Machine, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """R2.6 and Security (argv → path): every ref is parsed before anything is removed."""
    machine.session(ITEM)
    machine.armed(ITEM)
    before = machine.snapshot()
    assert machine.run("--work-item", ITEM.ref, "--work-item", bad) == 2
    assert machine.snapshot() == before
    assert "expected" in capsys.readouterr().err


def test_an_item_with_no_state_says_nothing_to_reset(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """R1.6: an item with nothing → 'nothing to reset' on stderr, exit 1."""
    machine.armed(OTHER)
    assert machine.run("--work-item", ITEM.ref, "--work-item", OTHER.ref) == 1
    captured = capsys.readouterr()
    assert f"{ITEM.ref}: nothing to reset\n" in captured.err
    assert f"{OTHER.ref}: reset — removed control, poll" in captured.out


def test_strangers_files_survive_dry_run_and_real_all(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Security § --all enumeration: a stranger's file in any state directory is not a record."""
    machine.session(ITEM)
    machine.armed(ITEM)
    placed = machine.strangers()
    assert machine.run("--all", "--dry-run") == 0
    assert machine.run("--all") == 0
    for path in placed:
        assert path.read_text() == "not yours\n"
    assert "reset 1 work item" in capsys.readouterr().out


def test_the_event_log_is_appended_to_never_rewritten(machine: Machine) -> None:
    """Security § Append-only audit: earlier log bytes are identical after a reset."""
    machine.armed(ITEM)
    log = machine.layout.event_log
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as handle:
        handle.write(b'{"event":"earlier","ts":"2026-01-01T00:00:00.000Z"}\ncorrupt line\n')
    earlier = log.read_bytes()
    assert machine.run("--work-item", ITEM.ref) == 0
    after = log.read_bytes()
    assert after.startswith(earlier)
    new = [json.loads(line) for line in after[len(earlier) :].splitlines()]
    assert [event["event"] for event in new] == ["session.reset"]
    assert new[0]["removed"] == ["control", "poll"] and new[0]["work_item"] == ITEM.ref


def test_a_pre_issue_128_tree_leaves_a_sealed_record(machine: Machine) -> None:
    """R3.1: with a legacy tree, the record is sealed instead of leaving a resurrectable gap."""
    legacy = legacy_layout(machine.layout)
    legacy.control_dir.mkdir(parents=True)
    (legacy.control_dir / f"{ITEM.slug}.json").write_text(
        json.dumps({"ref": ITEM.ref, "command": "start", "source": "comment"})
    )
    legacy.poll_state.write_text(json.dumps({"items": {ITEM.ref: {"seenComments": ["a"]}}}))
    assert machine.run("--work-item", ITEM.ref) == 0
    sealed = json.loads(machine.store.path_for(ITEM).read_text())
    assert sealed == {"ref": ITEM.ref, "url": ITEM.url, "sealed": True}
    assert not machine.control.start_requested(ITEM)
    assert machine.store.section(ITEM, POLL) is None
    assert (legacy.control_dir / f"{ITEM.slug}.json").exists()


def test_a_running_daemon_is_warned_about(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """R5.1: a live pid in gh-webhook.pid or poll.pid → a warning, the reset still runs."""
    machine.armed(ITEM)
    machine.layout.pidfile.write_text(f"{os.getpid()}\n")
    machine.layout.poll_pidfile.write_text("999999999\n")
    assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    err = capsys.readouterr().err
    assert (
        f"warning: the webhook receiver looks like it is running ({machine.layout.pidfile} "
        f"names the live pid {os.getpid()}, which holds no lock on it: another program"
    ) in err
    assert "poller" not in err
    assert machine.run("--work-item", ITEM.ref) == 0
    assert "warning: the webhook receiver" in capsys.readouterr().err


def test_a_webhook_receiver_holding_its_lock_is_warned_about_by_its_lock(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20: the warning means `the-loop webhook`, found by the lock it holds."""
    from the_loop.dispatch.daemons import DaemonLock, receiver_files

    machine.armed(ITEM)
    lock = DaemonLock(receiver_files(machine.layout))
    lock.acquire()
    try:
        assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    finally:
        lock.release()
    err = capsys.readouterr().err
    held = machine.layout.webhook_lock
    assert (
        f"the webhook receiver looks like it is running (pid {os.getpid()} holds the lock on "
        f"{held})"
    ) in err
    assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    assert "webhook receiver" not in capsys.readouterr().err


def test_a_running_api_server_is_warned_about_for_what_it_shows(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30: `the-loop serve` is warned about as the other daemons are, for what it
    does (it writes no record, but shows what it read)."""
    from the_loop.dispatch.daemons import DaemonLock, server_files

    machine.armed(ITEM)
    lock = DaemonLock(server_files(machine.layout))
    lock.acquire()
    try:
        assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    finally:
        lock.release()
    err = capsys.readouterr().err
    held = machine.layout.serve_lock
    assert (
        f"the API server looks like it is running (pid {os.getpid()} holds the lock on {held}); "
        "it writes no record"
    ) in err
    assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    assert "API server" not in capsys.readouterr().err


def test_a_live_pid_in_poll_pid_that_holds_no_lock_is_warned_about_and_said_so(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 18, item 11: a poller of an older release takes no lock; its live pid warns."""
    machine.armed(ITEM)
    machine.layout.poll_pidfile.write_text(f"{os.getpid()}\n")
    assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    err = capsys.readouterr().err
    assert (
        f"warning: the poller looks like it is running ({machine.layout.poll_pidfile} names "
        f"the live pid {os.getpid()}, which holds no lock on it: a poller of an older release"
    ) in err


def test_a_poller_holding_the_lock_is_warned_about_by_its_lock(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 18, item 11: the lock is the other evidence, and the warning names it."""
    from the_loop.dispatch.daemons import DaemonLock, poller_files

    machine.armed(ITEM)
    lock = DaemonLock(poller_files(machine.layout))
    lock.acquire()
    try:
        assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    finally:
        lock.release()
    err = capsys.readouterr().err
    held = machine.layout.poll_lock
    assert (
        f"the poller looks like it is running (pid {os.getpid()} holds the lock on {held})" in err
    )


def test_require_start_command_off_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R5.2: requireStartCommand false with spawning enabled → a warning, also on a dry run."""
    machine = Machine(
        tmp_path, {"spawnOnUnmatched": "always", "control": {"requireStartCommand": False}}
    )
    machine.armed(ITEM)
    assert machine.run("--all", "--dry-run") == 0
    assert "warning: requireStartCommand is off" in capsys.readouterr().err
    quiet = Machine(tmp_path / "q")
    quiet.armed(ITEM)
    assert quiet.run("--all", "--dry-run") == 0
    assert "requireStartCommand" not in capsys.readouterr().err


def test_json_output_is_one_document(machine: Machine, capsys: pytest.CaptureFixture[str]) -> None:
    """The --format json report: the envelope, one item per ResetOutcome.to_dict()."""
    machine.session(ITEM)
    assert machine.run("--work-item", ITEM.ref, "--work-item", OTHER.ref, "--format", "json") == 1
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert (document["command"], document["ok"]) == ("sessions reset", False)
    assert document["summary"] == {"dryRun": False} and document["warnings"] == []
    first, second = document["items"]
    assert first["ref"] == ITEM.ref and first["removed"] == ["session"] and first["ok"]
    assert second["found"] is False


def test_a_live_session_without_a_dispatcher_is_said_once_and_records_still_reset(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Design § Error handling: dispatcher cannot be built → reported once, records reset."""
    machine.session(ITEM, "active")
    machine.session(OTHER, "paused")
    assert machine.run("--all") == 1
    captured = capsys.readouterr()
    assert captured.err.count("warning: cannot end live sessions") == 1
    assert f"{ITEM.ref}: error: could not end the session" in captured.err
    assert "ended a live" not in captured.out
    assert f"{ITEM.ref}: reset — removed session" in captured.out
    assert machine.registry.list_sessions() == []


def test_a_records_only_reset_never_builds_the_dispatcher(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Design § Components: the dispatcher is built only when a live session is found."""
    machine.session(ITEM, "closed")
    assert machine.run("--work-item", ITEM.ref) == 0
    assert "cannot end live sessions" not in capsys.readouterr().err


def test_an_unwritable_record_fails_its_item_and_the_others_go_on(
    machine: Machine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R2.5 fault injection: OSError on one item's unlink → per-item error, exit 1,
    the other items reset, and the report never names a piece still on disk."""
    machine.session(ITEM)
    machine.armed(ITEM)
    machine.session(OTHER)
    machine.armed(OTHER)
    doomed = {str(machine.registry.path_for(ITEM)), str(machine.store.path_for(ITEM))}
    real_unlink = os.unlink

    def failing_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(path) in doomed:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", failing_unlink)
    assert machine.run("--all") == 1
    captured = capsys.readouterr()
    assert (
        f"{ITEM.ref}: error: could not remove the session record: Permission denied" in captured.err
    )
    assert f"{ITEM.ref}: reset" not in captured.out
    assert f"{OTHER.ref}: reset — removed session, control, poll" in captured.out
    assert machine.registry.path_for(ITEM).exists() and machine.store.path_for(ITEM).exists()
    assert captured.out.endswith("reset 1 work item, 1 failed\n")


def test_reset_posts_nothing_to_the_ticket_even_with_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Design § Why it posts no comment: with a token and an API configured, reset
    makes no request at all (decision 002)."""
    import http.server
    import threading

    requests: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            requests.append(self.path)
            self.send_response(201)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        api = f"http://127.0.0.1:{server.server_address[1]}"
        machine = Machine(tmp_path, integrations={"github": {"apiUrl": api}})
        monkeypatch.setenv("GITHUB_TOKEN", "secret-token")
        machine.session(ITEM)
        machine.armed(ITEM)
        # The API answers: a pause (while the machine holds the item) posts once.
        assert World.run(machine, "sessions", "pause", "--work-item", ITEM.ref) == 0
        assert machine.run("--work-item", ITEM.ref) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert requests == [f"/repos/{ITEM.owner}/{ITEM.repo}/issues/{ITEM.number}/comments"]


def test_a_leading_dash_ref_given_with_equals_is_refused_by_the_ref_parser(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Security § argv → path: a leading '-' reaches WorkItemRef.parse and is refused."""
    machine.armed(ITEM)
    before = machine.snapshot()
    assert machine.run(f"--work-item={ITEM.ref}", "--work-item=-github:octo/repo#1") == 2
    assert "invalid work item '-github:octo/repo#1'" in capsys.readouterr().err
    assert machine.snapshot() == before


def test_all_on_a_clean_machine_still_prints_one_json_document(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """cli.md: JSON is one document on stdout, also when there is nothing to reset."""
    assert machine.run("--all", "--format", "json") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "version": 1,
        "command": "sessions reset",
        "ok": False,
        "summary": {"dryRun": False},
        "items": [],
        "warnings": [],
        "errors": ["nothing to reset: this machine holds no work-item state"],
    }
    assert "nothing to reset: this machine holds no work-item state" in captured.err


def test_an_index_that_cannot_be_rewritten_is_a_warning_and_the_reset_stands(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11 point 11: the index is derived, so failing to rewrite it is one warning
    line, never the failure of a reset that took effect (exit 0, no traceback)."""
    machine.armed(ITEM)
    machine.store.rebuild_index()
    machine.layout.portable_index.unlink()
    machine.layout.portable_index.mkdir()
    assert machine.run("--work-item", ITEM.ref) == 0
    captured = capsys.readouterr()
    assert f"{ITEM.ref}: reset — removed control, poll" in captured.out
    assert captured.err.count("could not rebuild the derived") == 1
    assert "error:" not in captured.err
    assert "Traceback" not in captured.err


def test_a_failing_seal_write_is_reported_and_claims_nothing(
    machine: Machine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R2.5 fault injection on a write: the seal rewrite fails → per-item error, exit 1,
    and the portable pieces are not named as removed."""
    legacy = legacy_layout(machine.layout)
    legacy.control_dir.mkdir(parents=True)
    (legacy.control_dir / f"{ITEM.slug}.json").write_text(
        json.dumps({"ref": ITEM.ref, "command": "start", "source": "comment"})
    )
    machine.session(ITEM)
    machine.armed(OTHER)
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(dst) == str(machine.store.path_for(ITEM)):
            raise OSError(28, "No space left on device", os.fspath(dst))
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing_replace)
    assert machine.run("--all") == 1
    captured = capsys.readouterr()
    assert f"{ITEM.ref}: reset — removed session\n" in captured.out
    assert f"{ITEM.ref}: error: could not clear the work-item record: No space" in captured.err
    assert f"{OTHER.ref}: reset — removed control, poll" in captured.out
    assert machine.control.start_requested(ITEM)


def test_a_failing_directory_sync_is_reported(
    machine: Machine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """State §6 durability: a removal that cannot be made durable is not a success."""
    machine.session(ITEM)
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    assert machine.run("--work-item", ITEM.ref) == 1
    assert "error: could not make the removals durable: Input/output error" in (
        capsys.readouterr().err
    )


def test_one_reset_builds_one_tmux_runner_for_the_liveness_check_and_the_close(
    machine: Machine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given a closed record naming a tmux session and a live session
    When I reset both  Then the tmux settings are read into one runner, once."""
    from the_loop.dispatch.tmux import TmuxRunner

    built: list[TmuxRunner] = []
    real = TmuxRunner.from_config

    def counting(config: Any, *, owner: str = "") -> TmuxRunner:
        built.append(real(config, owner=owner))
        return built[-1]

    monkeypatch.setattr(TmuxRunner, "from_config", counting)
    machine.registry.register(
        Session(work_item=ITEM, harness="claude", harness_session_id="s", tmux_target="loop-x")
    )
    machine.registry.close(ITEM)
    machine.session(OTHER, "active")

    machine.run("--work-item", ITEM.ref, "--work-item", OTHER.ref)

    assert "cannot end live sessions" in capsys.readouterr().err
    assert len(built) == 1
