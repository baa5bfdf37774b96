"""The armed work items of a store (their last control command is ``start``, ``resume``,
``contribute`` or ``do``), found at a cost that follows what changed, not the store's size.

The candidates are the entries of ``index.json`` that list a ``control`` section, read
again only when the index's stat changed; a candidate's record is read again only when
its file's stat changed. Both are remembered in a machine-local cache file. An index
its stamp does not vouch for is first rebuilt by the store from every record (a
warning says so when that changed it); when it cannot be, every record is read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from the_loop.errors import describe_error
from the_loop.fsio import locked, read_bytes, read_json, write_json
from the_loop.portable.control import ARMING
from the_loop.portable.format import parse_ref
from the_loop.portable.store import CONTROL, WorkItemStore
from the_loop.ref import WorkItemRef, is_record_file_name

#: The cache's name under ``local/``.
CACHE_FILE = "poll-armed.json"
CACHE_VERSION = 1
#: One candidate as the cache keeps it: [ref, file, stat of the file, armed].
Candidate = list[Any]


class ArmedRefs:
    """``armed()`` gives the armed refs of ``store``; the answer is computed once per
    instance (one poll cycle). ``cache_path`` is under ``local/``, written under
    ``lock_path`` and only when what it holds changed."""

    def __init__(
        self,
        store: WorkItemStore,
        cache_path: Path,
        lock_path: Path,
        warn: Callable[[str], None],
    ) -> None:
        self._store = store
        self._cache_path = cache_path
        self._lock_path = lock_path
        self._warn = warn
        self._found: tuple[WorkItemRef, ...] | None = None

    def __call__(self) -> Sequence[WorkItemRef]:
        if self._found is None:
            self._found = self._armed()
        return self._found

    def _armed(self) -> tuple[WorkItemRef, ...]:
        if not self._index_ready():
            return self._every_record()
        cache = self._load_cache()
        index_stat = _stat(self._store.index_path)
        known = _valid(cache.get("candidates")) or []
        candidates = known if cache.get("index") == index_stat else self._from_index(known)
        if candidates is None:
            return self._every_record()
        checked = [self._checked(candidate) for candidate in candidates]
        updated = {"version": CACHE_VERSION, "index": index_stat, "candidates": checked}
        if updated != cache:
            self._save_cache(updated)
        return tuple(_refs(c[0] for c in checked if c[3] is True))

    def _index_ready(self) -> bool:
        """Whether the index can be read for candidates: its stamp holds, or the store
        just rebuilt it (said in a warning when the rebuild changed what it lists)."""
        store = self._store
        if store.index_trusted():
            return True
        before = read_bytes(store.index_path)
        try:
            store.heal_index()
        except OSError as error:
            self._warn(
                f"could not rebuild {store.index_path} ({describe_error(error)}): "
                "reading every record to find the armed items"
            )
            return False
        if read_bytes(store.index_path) != before:
            self._warn(
                f"{store.index_path} did not match the records (a crash, a hand edit or "
                "another tool): rebuilt it from every record before looking for armed items"
            )
        return True

    def _from_index(self, known: list[Candidate]) -> list[Candidate] | None:
        """A candidate for every index entry listing ``control``: the ``known`` one for the
        same ref and file (its stat still to check), else ``[ref, file, None, None]``. None
        when the index is not the store's JSON."""
        raw = read_bytes(self._store.index_path)
        if raw is None:
            return []
        try:
            rows = cast(list[dict[str, Any]], json.loads(raw)["workItems"])
            listed = [
                [row["ref"], row["file"], None, None]
                for row in rows
                if CONTROL in row.get("sections", ())
            ]
        except (ValueError, TypeError, KeyError, AttributeError):
            listed = None
        candidates = _valid(listed)
        if candidates is None:
            self._warn(f"{self._store.index_path} is not the store's index: reading every record")
            return None
        by_file = {(c[0], c[1]): c for c in known}
        return [by_file.get((c[0], c[1]), c) for c in candidates]

    def _checked(self, candidate: Candidate) -> Candidate:
        """``candidate`` with its file's current stat, its record re-read when that changed."""
        ref, file, stat, armed = candidate
        now = _stat(self._store.root / str(file))
        if now == stat and isinstance(armed, bool):
            return candidate
        return [ref, file, now, now is not None and self._is_armed(str(ref))]

    def _is_armed(self, ref: str) -> bool:
        item = parse_ref(ref)
        control = self._store.section(item, CONTROL) if item is not None else None
        return control is not None and control.get("command") in ARMING

    def _every_record(self) -> tuple[WorkItemRef, ...]:
        """The store's own validated read: every record holding ``control``."""
        holding = sorted(self._store.refs_holding((CONTROL,)))
        return tuple(_refs(ref for ref in holding if self._is_armed(ref)))

    def _load_cache(self) -> dict[str, Any]:
        try:
            loaded = read_json(self._cache_path)
        except (OSError, ValueError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        cache = cast(dict[str, Any], loaded)
        return cache if cache.get("version") == CACHE_VERSION else {}

    def _save_cache(self, cache: dict[str, Any]) -> None:
        """Best-effort: a cache that cannot be written costs the next cycle re-reads only."""
        try:
            with locked(self._lock_path):
                write_json(self._cache_path, cache, indent=None)
        except OSError as error:
            self._warn(f"could not write {self._cache_path}: {describe_error(error)}")


def _stat(path: Path) -> list[int] | None:
    """What tells a file changed: inode, size, mtime and ctime (None: not there)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _valid(candidates: object) -> list[Candidate] | None:
    """``candidates`` when each is ``[ref, file name, stat or None, armed or None]``."""
    if not isinstance(candidates, list):
        return None
    for candidate in cast(list[object], candidates):
        if not isinstance(candidate, list) or len(cast(list[object], candidate)) != 4:
            return None
        ref, file, stat, armed = cast(list[object], candidate)
        if not (isinstance(ref, str) and isinstance(file, str) and is_record_file_name(file)):
            return None
        if not (stat is None or isinstance(stat, list)) or not (
            armed is None or isinstance(armed, bool)
        ):
            return None
    return cast(list[Candidate], candidates)


def _refs(names: Iterable[object]) -> list[WorkItemRef]:
    return [ref for ref in map(parse_ref, names) if ref is not None]
