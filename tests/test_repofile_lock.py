"""The repository file's lock lives outside the work tree (issue 31): in the checkout's
git directory, or the one a worktree's ``.git`` file names, so ``git status`` shows the
state file and nothing of the-loop's locking; beside the file where there is no git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile

ITEM = WorkItemRef.parse("github:octo/app#15")


def _git(cwd: Path, *argv: str) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _repository(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _git(
        path,
        "-c",
        "user.email=a@b.c",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    return path


def _touch(state_file: WorkItemStateFile) -> None:
    state_file.update(lambda state: None)


def test_in_a_checkout_the_lock_is_in_its_git_directory(tmp_path: Path) -> None:
    checkout = _repository(tmp_path / "app")
    state_file = WorkItemStateFile(checkout, ITEM)
    _touch(state_file)
    assert state_file.lock_path.parent == checkout / ".git" / "the-loop"
    assert state_file.lock_path.exists()
    status = _git(checkout, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == [f"?? docs/specs/{ITEM.slug}/work-item-state.json"]


def test_in_a_worktree_the_lock_is_in_the_git_directory_its_git_file_names(tmp_path: Path) -> None:
    main = _repository(tmp_path / "app")
    tree = tmp_path / "tree"
    _git(main, "worktree", "add", "-q", "-b", "work", str(tree))
    state_file = WorkItemStateFile(tree, ITEM)
    _touch(state_file)
    assert (tree / ".git").is_file()
    assert state_file.lock_path.is_relative_to(main / ".git" / "worktrees")
    status = _git(tree, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == [f"?? docs/specs/{ITEM.slug}/work-item-state.json"]


def test_without_git_the_lock_is_beside_the_file(tmp_path: Path) -> None:
    state_file = WorkItemStateFile(tmp_path, ITEM)
    _touch(state_file)
    assert state_file.lock_path == state_file.directory / ".work-item-state.json.lock"
