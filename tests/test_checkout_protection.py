"""Issue 12: the agent's work is never lost by default.

Through ``main([...])`` with real tmux and real git (a local bare repository as the
remote): each session's checkout is on its own branch ``loop/<slug>``; ``stop``,
``close``, ``cleanup`` keep a checkout holding uncommitted changes or unpushed commits
and say so with the counts, their dry runs state the same counts, and ``--force`` (or
``routing.workspace.removeDirtyCheckouts``) removes it and says what was discarded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.gitrepo import commit_files, git
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_sessions_integration import ITEM, TARGET, Loop

BRANCH = "loop/github-octo-app-15"


@pytest.fixture
def loop(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> Loop:
    world = Loop(tmp_path, tmux_socket)
    world.configure_routing()
    return world


def _start(loop: Loop) -> None:
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert wait_until(lambda: "ready" in loop.tmux().capture(TARGET))


def _kept(path: Path, holding: str) -> str:
    return f"{ITEM}: kept the checkout {path}: {holding} — `--force` removes it\n"


@pytest.mark.parametrize("verb", ["stop", "close"])
def test_a_close_keeps_a_checkout_holding_an_uncommitted_file_and_says_so_with_the_counts(
    loop: Loop, verb: str
) -> None:
    _start(loop)
    (loop.worktree / "new.txt").write_text("x\n")
    code, out, err = loop.output("sessions", verb, "--work-item", ITEM)
    assert (code, err) == (0, "")
    assert out.endswith(_kept(loop.worktree, "1 uncommitted file"))
    assert f"closed the command session; kept tmux {TARGET} for its transcript\n" in out
    assert (loop.worktree / "new.txt").read_text() == "x\n"
    assert loop.listing()[0]["status"] == "closed"  # the rest of the close went on
    assert loop.tmux().liveness(TARGET) == "dead"


def test_stop_force_removes_a_checkout_holding_work_and_says_what_was_discarded(
    loop: Loop,
) -> None:
    _start(loop)
    (loop.worktree / "new.txt").write_text("x\n")
    (loop.worktree / "README.md").write_text("changed\n")
    code, out, _ = loop.output(
        "sessions", "stop", "--work-item", ITEM, "--force", "--format", "json"
    )
    [item] = json.loads(out)["items"]
    assert (code, item["checkoutRemoved"]) == (0, True)
    [checkout] = item["checkouts"]
    assert (checkout["removed"], checkout["uncommittedFiles"], checkout["forcedBy"]) == (
        True,
        2,
        "--force",
    )
    assert not loop.worktree.exists()
    _start(loop)
    (loop.worktree / "new.txt").write_text("x\n")
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM, "--force")
    assert out.endswith(
        f"{ITEM}: removed the checkout {loop.worktree} — 1 uncommitted file was discarded "
        "(--force)\n"
    )
    assert not loop.worktree.exists()


def test_a_clean_checkout_is_removed_and_the_line_says_clean(loop: Loop) -> None:
    _start(loop)
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0
    assert out.endswith(f"{ITEM}: removed the checkout {loop.worktree} (clean)\n")
    assert not loop.worktree.exists()


def test_the_config_key_removes_checkouts_holding_work_on_an_unattended_machine(
    loop: Loop,
) -> None:
    loop.configure_routing(workspace={"removeDirtyCheckouts": True})
    _start(loop)
    (loop.worktree / "new.txt").write_text("x\n")
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0
    assert out.endswith(
        f"{ITEM}: removed the checkout {loop.worktree} — 1 uncommitted file was discarded "
        "(routing.workspace.removeDirtyCheckouts)\n"
    )
    assert not loop.worktree.exists()


def test_cleanup_keeps_a_checkout_holding_an_uncommitted_file_and_its_dry_run_says_the_same(
    loop: Loop,
) -> None:
    _start(loop)
    (loop.worktree / "new.txt").write_text("x\n")
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--dry-run")
    assert code == 0
    assert f"{ITEM}: would keep the checkout {loop.worktree}: 1 uncommitted file — " in out
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM)
    assert code == 0
    assert out == (
        f"{ITEM}: ended tmux session {TARGET}\n"
        + _kept(loop.worktree, "1 uncommitted file")
        + f"{ITEM}: removed the session record\n"
        f"{ITEM}: cleaned up\n"
    )
    assert (loop.worktree / "new.txt").read_text() == "x\n"
    [cleaned] = loop.events_named("session.cleaned")
    assert (cleaned["checkouts"], cleaned["checkouts_kept"]) == ([], [str(loop.worktree)])
    code, out, _ = loop.output(
        "sessions", "cleanup", "--work-item", ITEM, "--force", "--format", "json"
    )
    [report] = json.loads(out)["items"]
    assert (code, report["checkoutsRemoved"], report["checkoutsKept"]) == (
        0,
        [str(loop.worktree)],
        [],
    )
    assert not loop.worktree.exists()


def test_an_unpushed_commit_counts_and_after_a_forced_removal_stays_on_the_branch(
    loop: Loop,
) -> None:
    _start(loop)
    commit_files(loop.worktree, {"work.txt": "the agent's work\n"}, "work")
    (loop.worktree / "new.txt").write_text("x\n")
    holding = "1 uncommitted file, 1 unpushed commit"
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--dry-run")
    assert f"{ITEM}: would keep the checkout {loop.worktree}: {holding} — " in out
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM)
    assert code == 0 and _kept(loop.worktree, holding) in out
    assert loop.worktree.is_dir()
    forced = ["sessions", "cleanup", "--work-item", ITEM, "--force"]
    code, out, _ = loop.output(*forced, "--dry-run")
    assert (
        f"{ITEM}: would remove the checkout {loop.worktree} — 1 uncommitted file would be "
        f"discarded; 1 unpushed commit would stay on branch {BRANCH} of the shared clone "
        "(--force)\n"
    ) in out
    code, out, _ = loop.output(*forced)
    assert (
        f"{ITEM}: removed the checkout {loop.worktree} — 1 uncommitted file was discarded; "
        f"1 unpushed commit stays on branch {BRANCH} of the shared clone (--force)\n"
    ) in out
    assert not loop.worktree.exists()
    shared = loop.workspace / "github.com" / "octo" / "app"
    assert git(shared, "show", f"{BRANCH}:work.txt") == "the agent's work\n"


def test_a_session_works_on_its_own_branch_which_a_restart_and_a_new_start_reuse(
    loop: Loop,
) -> None:
    _start(loop)
    assert git(loop.worktree, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    commit_files(loop.worktree, {"work.txt": "the agent's work\n"}, "work")
    loop.tmux().kill(TARGET)
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0  # restarts the agent
    assert git(loop.worktree, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    assert loop.run("sessions", "stop", "--work-item", ITEM, "--force") == 0
    assert not loop.worktree.exists()
    _start(loop)
    assert git(loop.worktree, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    assert (loop.worktree / "work.txt").read_text() == "the agent's work\n"


def test_the_clone_strategy_puts_the_checkout_on_its_own_branch_too(loop: Loop) -> None:
    loop.configure_routing(workspace={"strategy": "clone"})
    _start(loop)
    clone = loop.workspace / ".work-items" / "github-octo-app-15" / "github.com" / "octo" / "app"
    assert git(clone, "symbolic-ref", "--short", "HEAD").strip() == BRANCH
    commit_files(clone, {"work.txt": "the agent's work\n"}, "work")
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0 and _kept(clone, "1 unpushed commit") in out
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--force")
    assert (
        f"{ITEM}: removed the checkout {clone} — 1 unpushed commit was discarded (--force)\n"
    ) in out
    assert not clone.exists()


def test_a_branch_asked_for_still_wins_over_the_loop_branch(loop: Loop) -> None:
    remote = loop.remote_repository()
    scratch = loop.tmp_path / "pusher"
    git(loop.tmp_path, "clone", "--quiet", str(remote), str(scratch))
    git(scratch, "checkout", "--quiet", "-b", "feature")
    commit_files(scratch, {"f.txt": "f\n"}, "feature")
    git(scratch, "push", "--quiet", "origin", "feature")
    assert loop.run("sessions", "start", "--work-item", ITEM, "--branch", "feature") == 0
    assert git(loop.worktree, "symbolic-ref", "--short", "HEAD").strip() == "feature"
