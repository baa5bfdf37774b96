"""The records of one directory as last parsed, each file read again only when its stat
says it changed: every store writes a record by replacing it (a new inode), so the
inode, size and modification time of each entry tell a changed record from one that
is not, and a read of the board costs a listing and a stat per record, not a parse."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from the_loop.fsio import is_temp_name

T = TypeVar("T")
#: A directory changed more recently than this may change again within one tick of the
#: file system's clock, unseen by its modification time: it is listed anew.
RACY_SECONDS = 0.1


class FileCache(Generic[T]):
    """``load(path)`` of each ``*.json`` record of ``directory`` (never the index, a temp
    file or anything but a regular file), kept by file name."""

    def __init__(self, directory: Path, load: Callable[[str], T]) -> None:
        self.directory = directory
        self._load = load
        self._files: dict[str, tuple[tuple[int, int, int], T]] = {}
        self._seen: tuple[int, int] | None = None
        #: Whether the last listing came within a tick of the directory's change (so a
        #: change in that same tick could hide behind an unchanged time): list again.
        self._racy = True
        #: The files changed within a tick of the last listing: read again next time.
        self._racy_files: set[str] = set()

    def forget(self) -> None:
        """Trust nothing kept: the next :meth:`keyed` reads every file again."""
        self._files, self._seen, self._racy, self._racy_files = {}, None, True, set()

    def unchanged(self) -> bool:
        """Whether the directory's entries are as when last listed (its inode and time
        alike, and that time not so recent that a change could hide in its tick)."""
        try:
            info = os.stat(self.directory)
        except OSError:
            return self._seen is None and not self._files
        return self._seen == (info.st_ino, info.st_mtime_ns) and not self._racy

    def files(self) -> dict[str, T]:
        """Every record as parsed now: file name to what ``load`` made of it."""
        return {name: parsed for name, (_key, parsed) in self.keyed().items()}

    def keyed(self) -> dict[str, tuple[tuple[int, int, int], T]]:
        """Every record as parsed now, with the stat it was parsed at (inode, size,
        time): file name to both."""
        listed_at = time.time_ns()
        try:
            info = os.stat(self.directory)
            entries = list(os.scandir(self.directory))
        except OSError:
            self.forget()
            return {}
        racy_after = listed_at - RACY_SECONDS * 1e9
        racy_files: set[str] = set()
        kept: dict[str, tuple[tuple[int, int, int], T]] = {}
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or name == "index.json" or is_temp_name(name):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            held = self._files.get(name)
            if held is None or held[0] != key or name in self._racy_files:
                held = (key, self._load(entry.path))
            kept[name] = held
            if stat.st_mtime_ns >= racy_after:
                racy_files.add(name)  # changed within a tick of this listing: read it again
        self._files, self._seen = kept, (info.st_ino, info.st_mtime_ns)
        self._racy, self._racy_files = info.st_mtime_ns >= racy_after, racy_files
        return dict(kept)


__all__ = ["FileCache"]
