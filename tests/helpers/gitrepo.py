"""Real git repositories for tests: a local bare repository stands in for the remote."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

_IDENTITY = (
    "-c",
    "user.name=the-loop tests",
    "-c",
    "user.email=tests@the-loop.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
)


def git(cwd: Path, *args: str) -> str:
    """Run ``git <args>`` in ``cwd`` with a fixed identity; return stdout; raise on failure."""
    completed = subprocess.run(
        ["git", *_IDENTITY, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if completed.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {completed.stderr.strip()}")
    return completed.stdout


def write_files(directory: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``directory``."""
    for name, text in files.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def make_remote(
    tmp_path: Path,
    name: str = "app",
    files: Mapping[str, str] | None = None,
    branches: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """A bare repository ``<tmp_path>/remotes/<name>.git`` with one commit on ``main``.

    Each entry of ``branches`` adds a branch with one more commit (its files) on
    top of ``main``. HEAD of the bare repository names ``main``.
    """
    remote = tmp_path / "remotes" / f"{name}.git"
    remote.parent.mkdir(parents=True, exist_ok=True)
    git(remote.parent, "init", "--bare", "--quiet", remote.name)
    scratch = tmp_path / "remotes" / f".{name}-scratch"
    scratch.mkdir()
    git(scratch, "init", "--quiet")
    write_files(scratch, files or {"README.md": f"# {name}\n"})
    git(scratch, "add", "--all")
    git(scratch, "commit", "--quiet", "-m", "initial commit")
    git(scratch, "push", "--quiet", str(remote), "main")
    for branch, branch_files in (branches or {}).items():
        git(scratch, "checkout", "--quiet", "-b", branch, "main")
        write_files(scratch, branch_files)
        git(scratch, "add", "--all")
        git(scratch, "commit", "--quiet", "-m", f"work on {branch}")
        git(scratch, "push", "--quiet", str(remote), branch)
    return remote


def commit_files(checkout: Path, files: Mapping[str, str], message: str = "change") -> None:
    """Write ``files`` in ``checkout`` and commit them (no push)."""
    write_files(checkout, files)
    git(checkout, "add", "--all")
    git(checkout, "commit", "--quiet", "-m", message)
