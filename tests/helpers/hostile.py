"""A throw-away state root for the hostile-filesystem tests, and the CLI under a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.store import POLL, WorkItemStore
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
HANG_GUARD = 60  # seconds: a hang fails the test, it never stalls the suite


def run_cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, killed (and the test failed) if it hangs."""
    return subprocess.run(
        [sys.executable, "-m", "the_loop", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


def configure(tmp_path: Path, **state: object) -> tuple[Path, StateLayout]:
    """A config whose ``state`` section names a fresh root (plus ``state``'s keys)."""
    layout = StateLayout(tmp_path / "state")
    layout.root.mkdir()
    config = tmp_path / "cli-config.yaml"
    config.write_text(json.dumps({"state": {"root": str(layout.root), **state}}), "utf-8")
    return config, layout


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory``: file bytes, or where a link points."""
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        name = str(path.relative_to(directory))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


def seed(layout: StateLayout) -> None:
    """One work item with a poll section in the root's ``portable/``, written by the store."""
    store = WorkItemStore(layout.portable_dir, legacy_layout(layout))
    store.write_section(ITEM, POLL, {"seenComments": ["IC_1"], "commentAttempts": {}})
