"""The poll reader's comment cursor of each repository and the ids of the comments
the-loop posted, in ``local/poll-cursors.json`` (machine-local, locked, atomic)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from the_loop.fsio import locked, read_json, write_json

CURSOR_FILE = "poll-cursors.json"


@dataclass
class FileCursors:
    """The per-repository comment cursors and the posted ids, in ``local/poll-cursors.json``."""

    path: Path
    lock_path: Path
    _data: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        try:
            loaded = read_json(self.path)
        except (OSError, ValueError):
            loaded = None
        self._data = cast(dict[str, Any], loaded) if isinstance(loaded, dict) else {}

    def _repositories(self) -> dict[str, str]:
        found = self._data.get("repositories")
        return cast(dict[str, str], found) if isinstance(found, dict) else {}

    def get(self, repository: str) -> str | None:
        value = self._repositories().get(repository)
        return value if isinstance(value, str) else None

    def set(self, repository: str, cursor: str) -> None:
        self._data["repositories"] = {**self._repositories(), repository: cursor}
        self._save()

    def posted(self) -> frozenset[int]:
        ids = self._data.get("posted")
        return (
            frozenset(i for i in cast(list[Any], ids) if isinstance(i, int))
            if isinstance(ids, list)
            else frozenset()
        )

    def remember_posted(self, comment_id: int) -> None:
        self._data["posted"] = sorted({*self.posted(), comment_id})[-1000:]
        self._save()

    def _save(self) -> None:
        with locked(self.lock_path):
            write_json(self.path, self._data)
