"""The poller's kept listing of each repository's items, in ``local/poll-watched.json``.

Machine-local, like the comment cursors: it says what GitHub listed here, and its
cursor is GitHub's own ``updated_at``. Read once per cycle; written only when a
cycle changed a listing, atomically and under its lock, merged into what the file
holds then. An unreadable file counts as empty (the next cycle reads in full); a
stranger's file (a symlink, a directory) is never read or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from the_loop.adapters.local_file import read_local_map
from the_loop.fsio import locked, write_json
from the_loop.layout import WATCHED_FILE, StateLayout
from the_loop.polling.watch_cache import FORMAT_VERSION, RepositoryListing


class FileWatchCache:
    """:class:`~the_loop.polling.reads.WatchCache` over one JSON file."""

    def __init__(self, path: Path, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path
        self._repositories: dict[str, Any] | None = None

    @classmethod
    def for_layout(cls, layout: StateLayout) -> FileWatchCache:
        return cls(layout.local_dir / WATCHED_FILE, layout.local_locks_dir / "poll-watched.lock")

    def get(self, repository: str) -> RepositoryListing | None:
        """The listing kept for ``repository``; None when there is none or it is unreadable."""
        if self._repositories is None:
            self._repositories = self._read()
        try:
            return RepositoryListing.from_dict(self._repositories[repository])
        except (KeyError, ValueError):
            return None

    def put(self, repository: str, listing: RepositoryListing) -> None:
        """Keep ``listing`` durably; the other repositories' listings on disk are kept."""
        with locked(self.lock_path):
            repositories = self._read()
            repositories[repository] = listing.to_dict()
            document = {"version": FORMAT_VERSION, "repositories": repositories}
            write_json(self.path, document, indent=None)
        self._repositories = repositories

    def _read(self) -> dict[str, Any]:
        return read_local_map(self.path, "repositories")
