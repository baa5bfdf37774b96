"""One directory of per-work-item JSON records: naming, collisions, listing, locking.

Shared by the session registry (``local/``) and the work-item store
(``portable/``). A ref's file is ``<slug>.json`` unless another ref already
holds that name, in which case it is ``<slug>~<8 hex>.json``. Only names that
look like records are ever listed; everything else belongs to someone else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator
from pathlib import Path

from the_loop.fsio import locked
from the_loop.sessions.ref import WorkItemRef, is_record_file_name

#: Reads the ref a record file stores; None when the file is unreadable or names none.
StoredRef = Callable[[Path], "str | None"]


class RecordDirectory:
    """Record files of one store under ``directory``, with their locks under ``locks_dir``."""

    def __init__(self, directory: Path, locks_dir: Path) -> None:
        self.directory = Path(directory)
        self.locks_dir = Path(locks_dir)

    def plain_path(self, ref: WorkItemRef) -> Path:
        return self.directory / f"{ref.slug}.json"

    def disambiguated_path(self, ref: WorkItemRef) -> Path:
        return self.directory / f"{ref.disambiguated_slug}.json"

    def resolve(self, ref: WorkItemRef, stored_ref: StoredRef) -> Path:
        """The file that holds (or will hold) ``ref``'s record.

        The plain name when it is free or stores this ref (or is unreadable and
        no disambiguated file exists); otherwise the disambiguated name.
        """
        plain = self.plain_path(ref)
        other = self.disambiguated_path(ref)
        if not os.path.lexists(plain):
            return other if os.path.lexists(other) else plain
        owner = stored_ref(plain)
        if owner == ref.ref:
            return plain
        if owner is None and not os.path.lexists(other):
            return plain
        return other

    @contextlib.contextmanager
    def lock(self, ref: WorkItemRef) -> Generator[None]:
        """The record lock; refs that share a slug share it, so resolution is serialised too."""
        with locked(self.locks_dir / f"{ref.slug}.lock"):
            yield

    def lock_named(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A store-wide lock (e.g. for the index)."""
        return locked(self.locks_dir / f"{name}.lock")

    def record_files(self) -> list[Path]:
        """Every file whose name looks like a record, sorted by name; never raises."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return []
        files: list[Path] = []
        for entry in entries:
            if is_record_file_name(entry.name):
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False):
                        files.append(Path(entry.path))
        files.sort(key=lambda path: path.name)
        return files
