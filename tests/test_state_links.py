"""Nothing follows a link out of the state root: lock files and the root's directories.

Every command runs in a child process under a timeout, so a hang fails the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.hostile import ITEM, configure, run_cli, seed, snapshot
from the_loop.fsio import StrangerFile, locked
from the_loop.layout import StateLayout


def test_a_dangling_lock_link_is_refused_and_its_target_never_created(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "victim"
    target.parent.mkdir()
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "item.lock").symlink_to(target)
    with (
        pytest.raises(StrangerFile, match="is a symbolic link, not a regular file"),
        locked(locks / "item.lock"),
    ):
        pass
    assert not target.exists()


def test_a_fifo_lock_file_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "item.lock")
    with (
        pytest.raises(StrangerFile, match="is a FIFO, not a regular file"),
        locked(tmp_path / "item.lock"),
    ):
        pass


def test_a_lock_directory_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "locks").symlink_to(elsewhere)
    with (
        pytest.raises(StrangerFile, match="is a symbolic link, not a directory"),
        locked(tmp_path / "locks" / "item.lock"),
    ):
        pass
    assert list(elsewhere.iterdir()) == []


def test_a_command_never_creates_the_target_of_a_dangling_lock_link(tmp_path: Path) -> None:
    config, layout = configure(tmp_path)
    seed(layout)  # the machine holds the item: a pause goes on to take its lock
    target = tmp_path / "victim"
    layout.portable_locks_dir.mkdir(parents=True, exist_ok=True)
    lock = layout.portable_locks_dir / f"{ITEM.slug}.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    result = run_cli(
        tmp_path, "--config", str(config), "sessions", "pause", "--work-item", ITEM.ref,
        "--no-comment",
    )  # fmt: skip
    assert result.returncode == 1
    assert "is a symbolic link, not a regular file" in result.stderr
    assert "Traceback" not in result.stderr
    assert not target.exists() and not target.is_symlink()


def _link_away(layout: StateLayout, name: str, tmp_path: Path) -> Path:
    """Move the root's ``name`` directory elsewhere, leaving a link in its place."""
    seed(layout)
    target = tmp_path / f"elsewhere-{name}"
    source = layout.root / name
    if not source.is_dir():
        source.mkdir()
        (source / "github-octo-app-15.json").write_text(json.dumps({"ref": ITEM.ref}), "utf-8")
    source.rename(target)
    source.symlink_to(target)
    return target


@pytest.mark.parametrize("name", ["portable", "local", "locks", "logs", "sessions"])
@pytest.mark.parametrize(
    "argv",
    [
        ("sessions", "reset", "--work-item", ITEM.ref),
        ("sessions", "reset", "--all"),
        ("sessions", "list"),
        ("sessions", "pause", "--work-item", ITEM.ref, "--no-comment"),
        (
            "sessions",
            "register",
            "--work-item",
            ITEM.ref,
            "--harness",
            "command",
            "--harness-session-id",
            "s1",
            "--cwd",
            ".",
        ),
    ],
)
def test_a_symlinked_state_directory_is_refused_and_its_target_untouched(
    tmp_path: Path, name: str, argv: tuple[str, ...]
) -> None:
    config, layout = configure(tmp_path)
    target = _link_away(layout, name, tmp_path)
    before = snapshot(target)
    result = run_cli(tmp_path, "--config", str(config), *argv)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {layout.root / name} is a symbolic link: the-loop does not follow links out "
        "of its state root (set state.followLinkedDirectories: true to allow it)\n"
    )
    assert snapshot(target) == before


def test_a_symlinked_portable_directory_is_followed_when_the_config_allows_it(
    tmp_path: Path,
) -> None:
    config, layout = configure(tmp_path, followLinkedDirectories=True)
    target = _link_away(layout, "portable", tmp_path)
    result = run_cli(
        tmp_path, "--config", str(config), "sessions", "reset", "--work-item", ITEM.ref
    )
    assert result.returncode == 0, result.stderr
    assert not (target / "github-octo-app-15.json").exists()
