"""A state root whose record writes fail for real, whoever runs the tests.

For an ordinary user the directories are made read-only. Root writes through a
read-only mode, so for root every record's lock file becomes a directory instead:
each locked write then fails with an ``OSError`` before it touches the record, as a
read-only directory makes it fail for anyone else. Spawn locks are left alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

STORES = ("local", "portable")


@contextlib.contextmanager
def writes_refused(root: Path) -> Iterator[None]:
    """Within the block, writing (or removing) a record under ``root`` raises ``OSError``."""
    if os.geteuid() != 0:
        directories = [root, *(path for path in root.rglob("*") if path.is_dir())]
        for directory in directories:
            directory.chmod(0o555)
        try:
            yield
        finally:
            for directory in directories:
                directory.chmod(0o755)
        return
    blocked = _lock_paths(root)
    for lock in blocked:
        if lock.is_file():
            lock.unlink()
        lock.mkdir(parents=True, exist_ok=True)
    try:
        yield
    finally:
        for lock in blocked:
            shutil.rmtree(lock, ignore_errors=True)


def _lock_paths(root: Path) -> list[Path]:
    """The lock file of every record in both stores."""
    return [
        root / "locks" / store / f"{record.stem}.lock"
        for store in STORES
        for record in sorted((root / store).glob("*.json"))
        if record.name != "index.json"
    ]
