"""A real reset: a session spawned by ``sessions start`` (real tmux, a real git worktree,
a stand-in agent) reset by ``sessions reset --work-item ...``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import wait_until
from tests.reset_world import World, process_gone
from the_loop.portable.store import POLL
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")


@pytest.fixture
def world(tmp_path: Path, tmux_socket: str) -> World:
    return World(tmp_path, tmux_socket)


def _start(world: World) -> list[int]:
    assert world.run("sessions", "start", "--work-item", ITEM.ref, "--no-comment") == 0
    tmux = world.tmux()
    assert wait_until(lambda: "ready" in tmux.capture(world.target(ITEM)))
    pids = tmux.pane_pids(world.target(ITEM))
    assert pids and world.worktree(ITEM).is_dir()
    world.store.write_section(ITEM, POLL, {"seenComments": ["IC_1"], "commentAttempts": {}})
    return pids


def test_reset_ends_the_agent_removes_the_worktree_and_forgets_the_item(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """R5.4 end to end: the agent is gone, the worktree removed, the record and sections
    gone, one session.reset appended, and the earlier log bytes identical."""
    pids = _start(world)
    earlier = world.layout.event_log.read_bytes()
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref) == 0
    out = capsys.readouterr().out
    assert out == (
        f"{ITEM.ref}: ended a live command session\n"
        f"{ITEM.ref}: removed the checkout {world.worktree(ITEM)} (clean)\n"
        f"{ITEM.ref}: reset — removed session, control, poll\n"
        f"{ITEM.ref}: kept tmux {world.target(ITEM)} for the transcript (a reset never ends "
        f"one); `the-loop sessions cleanup --work-item '{ITEM.ref}'` ends it\n"
        "reset 1 work item\n"
    )
    assert all(process_gone(pid) for pid in pids)
    assert world.tmux().liveness(world.target(ITEM)) in ("dead", "absent")
    assert not world.worktree(ITEM).exists()
    assert world.registry.find_by_work_item(ITEM, include_closed=True) is None
    assert not world.store.path_for(ITEM).exists()
    log = world.layout.event_log.read_bytes()
    assert log.startswith(earlier)
    appended = [json.loads(line) for line in log[len(earlier) :].splitlines()]
    resets = [event for event in appended if event["event"] == "session.reset"]
    assert len(resets) == 1
    assert resets[0]["removed"] == ["workspace", "session", "control", "poll"]
    assert resets[0]["was_live"] is True and resets[0]["ended"] is True


def test_with_keep_checkout_on_close_the_worktree_stays_and_is_not_claimed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """R5.4: a kept checkout is never reported as removed."""
    world.configure_routing(keepCheckoutOnClose=True)
    pids = _start(world)
    (world.worktree(ITEM) / "notes.txt").write_text("work in progress\n")
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref, "--dry-run") == 0
    dry = capsys.readouterr().out
    assert "checkout" not in dry
    assert world.run("sessions", "reset", "--work-item", ITEM.ref) == 0
    out = capsys.readouterr().out
    assert "the checkout" not in out
    assert f"{ITEM.ref}: reset — removed session, control, poll" in out
    assert all(process_gone(pid) for pid in pids)
    assert (world.worktree(ITEM) / "notes.txt").read_text() == "work in progress\n"


def test_a_dry_run_reports_uncommitted_files_and_unpushed_commits(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Beyond the design: a dry run states the counts a real run would act on."""
    _start(world)
    worktree = world.worktree(ITEM)
    for name in ("a.txt", "b.txt", "c.txt"):
        (worktree / name).write_text(name)
    capsys.readouterr()
    assert world.run("sessions", "reset", "--all", "--dry-run") == 0
    out = capsys.readouterr().out
    assert (
        f"{ITEM.ref}: would keep the checkout {worktree}: 3 uncommitted files — "
        "`--force` removes it\n"
    ) in out
    assert worktree.is_dir() and world.tmux().liveness(world.target(ITEM)) == "live"
    subprocess.run(["git", "-C", str(worktree), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(worktree), "commit", "-qm", "wip"], check=True)
    assert world.run("sessions", "reset", "--all", "--dry-run", "--format", "json") == 0
    [planned] = json.loads(capsys.readouterr().out)["items"][0]["checkouts"]
    assert (planned["path"], planned["kept"]) == (str(worktree), True)
    assert (planned["uncommittedFiles"], planned["unpushedCommits"]) == (2, 1)


def test_reset_keeps_a_checkout_holding_work_and_says_so_and_force_removes_it(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: a real reset never claims a loss; the uncommitted file survives it."""
    _start(world)
    worktree = world.worktree(ITEM)
    (worktree / "new.txt").write_text("x\n")
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref) == 0
    out = capsys.readouterr().out
    assert out == (
        f"{ITEM.ref}: ended a live command session\n"
        f"{ITEM.ref}: kept the checkout {worktree}: 1 uncommitted file — `--force` removes it\n"
        f"{ITEM.ref}: reset — removed session, control, poll\n"
        f"{ITEM.ref}: kept tmux {world.target(ITEM)} for the transcript (a reset never ends "
        f"one); `the-loop sessions cleanup --work-item '{ITEM.ref}'` ends it\n"
        "reset 1 work item\n"
    )
    assert (worktree / "new.txt").read_text() == "x\n"
    lines = world.layout.event_log.read_text(encoding="utf-8").splitlines()
    [reset] = [event for event in map(json.loads, lines) if event["event"] == "session.reset"]
    assert "workspace" not in reset["removed"]
    _start(world)  # the kept checkout is reused as it is
    assert (worktree / "new.txt").read_text() == "x\n"
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref, "--force", "--dry-run") == 0
    assert (
        f"{ITEM.ref}: would remove the checkout {worktree} — 1 uncommitted file would be "
        "discarded (--force)\n"
    ) in capsys.readouterr().out
    assert worktree.is_dir()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref, "--force") == 0
    assert (
        f"{ITEM.ref}: removed the checkout {worktree} — 1 uncommitted file was discarded "
        "(--force)\n"
    ) in capsys.readouterr().out
    assert not worktree.exists()


def test_a_closed_record_whose_agent_still_runs_is_ended_by_reset(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Crash safety: a close interrupted after the record was closed leaves the agent
    running; reset sees the live tmux pane, ends it, then forgets the record."""
    pids = _start(world)
    world.registry.close(ITEM, reason="interrupted")
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref, "--dry-run") == 0
    assert f"{ITEM.ref}: would end a live command session" in capsys.readouterr().out
    assert world.run("sessions", "reset", "--work-item", ITEM.ref) == 0
    out = capsys.readouterr().out
    assert f"{ITEM.ref}: ended a live command session" in out
    assert all(process_gone(pid) for pid in pids)
    assert not world.worktree(ITEM).exists()


def test_an_agent_the_close_path_leaves_running_is_never_reported_as_ended(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """cli.md: "ended a live session" only when it really ended. With killHarnessOnClose
    false the close path keeps the agent: reset says so, exits 1, and names cleanup."""
    world.configure_routing(tmux={"killHarnessOnClose": False})
    pids = _start(world)
    capsys.readouterr()
    assert world.run("sessions", "reset", "--work-item", ITEM.ref) == 1
    captured = capsys.readouterr()
    assert "ended a live" not in captured.out
    assert (
        f"{ITEM.ref}: error: could not end the session: the agent still runs in tmux "
        f"{world.target(ITEM)} (routing.tmux.killHarnessOnClose is false)"
    ) in captured.err
    assert not any(process_gone(pid) for pid in pids)
    assert world.run("sessions", "cleanup", "--work-item", ITEM.ref) == 0
    assert wait_until(lambda: all(process_gone(pid) for pid in pids))
