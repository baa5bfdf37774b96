"""One directory of per-work-item JSON records: naming, collisions, listing, locking.

Shared by the session registry (``local/``) and the work-item store
(``portable/``). A ref's file is ``<slug>.json`` unless another ref already
holds that name, in which case it is ``<slug>~<8 hex>.json``. Only names that
look like records are ever listed; everything else belongs to someone else.

A file written before refs were lowercased may carry a mixed-case name
(``github-Octo-App-15.json``): it is its ref's *legacy name*, found when no file
under the lowercase name holds the ref, and written back under its own name (never
renamed, never shadowed by a second file). See ``docs/decisions/015``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TypeVar

from the_loop.fsio import locked
from the_loop.ref import WorkItemRef, is_record_file_name

#: Reads the ref the named record file stores; None when the file is unreadable or names none.
StoredRef = Callable[[str], "str | None"]
Loaded = TypeVar("Loaded")


class _Snapshot:
    """One directory as first seen inside a ``snapshot()`` block: names and loaded files."""

    def __init__(self) -> None:
        self.names: set[str] | None = None
        self.records: list[str] | None = None
        self.loaded: dict[str, Any] = {}


class RecordDirectory:
    """Record files of one store under ``directory``, with their locks under ``locks_dir``
    (default ``<parent>/locks/<directory name>``, as ``StateLayout`` lays them out).

    Files are addressed by name (``<slug>.json``); :meth:`path` makes the ``Path`` of
    one when a caller needs it. Loaders get the file's path as a string: a listing of
    ten thousand records builds no ``Path`` object per file.
    """

    def __init__(self, directory: Path, locks_dir: Path | None = None) -> None:
        self.directory = Path(directory)
        self.locks_dir = (
            Path(locks_dir) if locks_dir else self.directory.parent / "locks" / self.directory.name
        )
        self._prefix = os.path.join(self.directory, "")
        self._snapshot: _Snapshot | None = None
        self._snapshot_depth = 0
        self._mixed_case: tuple[tuple[int, ...], list[str]] | None = None

    def path(self, name: str) -> Path:
        """The path of the file ``name`` of this directory."""
        return self.directory / name

    def resolve(self, ref: WorkItemRef, stored_ref: StoredRef) -> str:
        """The name of the file that holds (or will hold) ``ref``'s record.

        The plain name when it is free or stores this ref (or is unreadable and
        no disambiguated file exists); otherwise the disambiguated name.
        """
        plain = plain_name(ref)
        if not self.exists(plain):
            other = disambiguated_name(ref)
            return other if self.exists(other) else plain
        owner = stored_ref(plain)
        if owner == ref.ref:
            return plain
        other = disambiguated_name(ref)
        if owner is None and not self.exists(other):
            return plain
        return other

    def locate(
        self,
        ref: WorkItemRef,
        loader: Callable[[str], Loaded],
        stored_ref: Callable[[Loaded], str | None],
        stranger: Callable[[Loaded], bool],
    ) -> tuple[str, Loaded]:
        """The name of ``ref``'s file (as :meth:`resolve` picks it) and what ``loader`` made
        of it, reading each candidate once.

        A stranger's file (a symlink, FIFO or directory) at the plain name is stepped
        around to the disambiguated one. The caller checks whether the file stores another ref.
        """
        seen: dict[str, Loaded] = {}

        def read(name: str) -> Loaded:
            if name not in seen:
                seen[name] = self.load(name, loader)
            return seen[name]

        plain = plain_name(ref)
        if self.exists(plain) and stored_ref(read(plain)) == ref.ref:
            return plain, seen[plain]  # what ``resolve`` picks, without asking again
        other = disambiguated_name(ref)
        if not (self.exists(other) and stored_ref(read(other)) == ref.ref):
            for legacy in self.legacy_names(ref):
                if stored_ref(read(legacy)) == ref.ref:
                    return legacy, seen[legacy]
        name = self.resolve(ref, lambda candidate: stored_ref(read(candidate)))
        loaded = read(name)
        if name == plain and stranger(loaded):
            name = disambiguated_name(ref)
            loaded = read(name)
        return name, loaded

    def legacy_names(self, ref: WorkItemRef, *, refresh: bool = True) -> list[str]:
        """``ref``'s legacy (mixed-case) record names present in the directory, sorted.

        The mixed-case names are listed once and listed again when the directory's stat
        has changed since (``refresh``; without it, a name gone since is still skipped):
        this release never makes one, so a listing of a directory it keeps changing is
        not taken again for a caller that can live with one made earlier.
        """
        stamp = self._stamp()
        if stamp is None:
            return []
        cached = self._mixed_case
        if cached is None or (refresh and cached[0] != stamp):
            try:
                names = os.listdir(self.directory)
            except OSError:
                names = []
            mixed = [name for name in names if name != name.lower() and is_record_file_name(name)]
            cached = self._mixed_case = (stamp, sorted(mixed))
        found = [name for name in cached[1] if is_legacy_name_for(name, ref)]
        return [name for name in found if os.path.lexists(self._prefix + name)]

    def _stamp(self) -> tuple[int, ...] | None:
        """The directory's stat, as the mixed-case listing is keyed by it; None when gone."""
        try:
            info = os.stat(self.directory)
        except OSError:
            return None
        return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def exists(self, name: str) -> bool:
        """``os.path.lexists`` of the file ``name`` (from the snapshot, inside one)."""
        snapshot = self._snapshot
        if snapshot is None:
            return os.path.lexists(self._prefix + name)
        if snapshot.names is None:
            try:
                snapshot.names = set(os.listdir(self.directory))
            except OSError:
                snapshot.names = set()
        return name in snapshot.names

    def load(self, name: str, loader: Callable[[str], Loaded]) -> Loaded:
        """``loader(path)`` for the file ``name``; inside a snapshot, once per file."""
        snapshot = self._snapshot
        if snapshot is None:
            return loader(self._prefix + name)
        loaded = snapshot.loaded
        if name not in loaded:
            loaded[name] = loader(self._prefix + name)
        return loaded[name]

    @contextlib.contextmanager
    def snapshot(self) -> Generator[None]:
        """Within the block, reads see the directory as first read in it.

        Each file is listed and loaded at most once; values loaded are shared, so
        callers must not change them. For read-only phases (a listing, a dry run,
        the selection of ``reset --all``): taking a lock ends the snapshot, so every
        read from then on goes to the disk.
        """
        if self._snapshot_depth == 0:
            self._snapshot = _Snapshot()
        self._snapshot_depth += 1
        try:
            yield
        finally:
            self._snapshot_depth -= 1
            if self._snapshot_depth == 0:
                self._snapshot = None

    @contextlib.contextmanager
    def lock(self, ref: WorkItemRef) -> Generator[None]:
        """The record lock; refs that share a slug share it, so resolution is serialised too.

        What a holder changes is this release's own (lowercase names, or a record written
        back under the name it has): the listing of mixed-case names, when it was current
        as the lock was taken, stays current after, so a run of new records never lists
        the directory once per record.
        """
        self._end_snapshot()
        with locked(self.locks_dir / f"{ref.slug}.lock"):
            before = self._stamp()
            try:
                yield
            finally:
                cached = self._mixed_case
                if cached is not None and before is not None and cached[0] == before:
                    after = self._stamp()
                    if after is not None:
                        self._mixed_case = (after, cached[1])

    def lock_named(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A store-wide lock (e.g. for the index)."""
        self._end_snapshot()
        return locked(self.locks_dir / f"{name}.lock")

    def _end_snapshot(self) -> None:
        # A writer reads the disk, and what it writes must not be hidden by a snapshot.
        self._snapshot = None

    def record_names(self) -> list[str]:
        """The name of every file that looks like a record, sorted; never raises."""
        snapshot = self._snapshot
        if snapshot is not None and snapshot.records is not None:
            return list(snapshot.records)
        try:
            with os.scandir(self.directory) as listing:
                entries = list(listing)
        except OSError:
            return []
        names: list[str] = []
        for entry in entries:
            if is_record_file_name(entry.name):
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False):
                        names.append(entry.name)
        names.sort()
        if snapshot is not None:
            snapshot.records = names
            snapshot.names = {entry.name for entry in entries}
            return list(names)
        return names


def plain_name(ref: WorkItemRef) -> str:
    """``<slug>.json``: the name of ``ref``'s record file unless another ref holds it."""
    return f"{ref.slug}.json"


def disambiguated_name(ref: WorkItemRef) -> str:
    """``<slug>~<8 hex>.json``: the name used when another ref already holds the plain one."""
    return f"{ref.disambiguated_slug}.json"


def is_named_for(name: str, ref: WorkItemRef) -> bool:
    """Whether ``name`` is ``ref``'s plain or disambiguated record file name, or a legacy
    (mixed-case) spelling of one."""
    slug = ref.slug
    if name == f"{slug}.json" or name == f"{ref.disambiguated_slug}.json":
        return True
    return is_legacy_name_for(name, ref)


def is_legacy_name_for(name: str, ref: WorkItemRef) -> bool:
    """Whether ``name`` is a mixed-case spelling of ``ref``'s plain name, or of a
    disambiguated one (whose hash was taken of the ref as then spelled)."""
    lowered = name.lower()
    if lowered == name or not is_record_file_name(name):
        return False
    slug = ref.slug
    if lowered == f"{slug}.json":
        return True
    return lowered.startswith(f"{slug}~") and len(lowered) == len(slug) + len("~12345678.json")


def name_rank(name: str, ref: WorkItemRef) -> int:
    """Which of several files holding ``ref`` is its record: the lowest rank wins (0 the
    plain name, 1 the disambiguated one, 2 a legacy name), as :meth:`RecordDirectory.locate`
    picks it."""
    if name == plain_name(ref):
        return 0
    return 1 if name == disambiguated_name(ref) else 2
