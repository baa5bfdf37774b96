"""The poll reader's comment cursor of each repository, the ids of the comments
the-loop posted and when each watched pull request's reviews were last read, in
``local/poll-cursors.json`` (machine-local, locked, atomic)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from the_loop.fsio import locked, read_json, write_json

CURSOR_FILE = "poll-cursors.json"
#: Per repository, each watched pull request's ``updated_at`` its reviews were read at.
REVIEWS_READ = "reviewsRead"


@dataclass
class FileCursors:
    """The per-repository comment cursors and the posted ids, in ``local/poll-cursors.json``."""

    path: Path
    lock_path: Path
    _data: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        self._data = self._read()

    def _read(self) -> dict[str, Any]:
        try:
            loaded = read_json(self.path)
        except (OSError, ValueError):
            loaded = None
        return cast(dict[str, Any], loaded) if isinstance(loaded, dict) else {}

    def _repositories(self) -> dict[str, str]:
        return _repositories(self._data)

    def get(self, repository: str) -> str | None:
        value = self._repositories().get(repository)
        return value if isinstance(value, str) else None

    def set(self, repository: str, cursor: str) -> None:
        def change(data: dict[str, Any]) -> None:
            data["repositories"] = {**_repositories(data), repository: cursor}

        self._change(change)

    def reviews_read(self, repository: str) -> dict[int, str]:
        """Each watched pull request's ``updated_at`` when its reviews were last read."""
        marks = _reviews_read(self._data).get(repository)
        if not isinstance(marks, dict):
            return {}
        found = cast(dict[Any, Any], marks).items()
        return {int(n): v for n, v in found if isinstance(v, str) and str(n).isdigit()}

    def set_reviews_read(self, repository: str, read: Mapping[int, str]) -> None:
        marks = {str(number): stamp for number, stamp in sorted(read.items())}

        def change(data: dict[str, Any]) -> None:
            data[REVIEWS_READ] = {**_reviews_read(data), repository: marks}

        self._change(change)

    def posted(self) -> frozenset[int]:
        return _posted(self._data)

    def remember_posted(self, comment_id: int) -> None:
        def change(data: dict[str, Any]) -> None:
            data["posted"] = sorted({*_posted(data), comment_id})[-1000:]

        self._change(change)

    def _change(self, change: Callable[[dict[str, Any]], None]) -> None:
        """One locked read-modify-write: another reader's cursor or id is never rolled back."""
        with locked(self.lock_path):
            data = self._read()
            change(data)
            write_json(self.path, data)
        self._data = data


def _repositories(data: dict[str, Any]) -> dict[str, str]:
    found = data.get("repositories")
    return cast(dict[str, str], found) if isinstance(found, dict) else {}


def _reviews_read(data: dict[str, Any]) -> dict[str, Any]:
    found = data.get(REVIEWS_READ)
    return cast(dict[str, Any], found) if isinstance(found, dict) else {}


def _posted(data: dict[str, Any]) -> frozenset[int]:
    ids = data.get("posted")
    if not isinstance(ids, list):
        return frozenset()
    return frozenset(i for i in cast(list[Any], ids) if isinstance(i, int))
