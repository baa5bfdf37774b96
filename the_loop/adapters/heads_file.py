"""The poller's watched pull-request heads, in ``local/poll-heads.json``.

Machine-local, like the kept listing: per pull request (by its ref), its head SHA,
whether it is open, what its check runs and its combined status said when last read,
and which of the two an idle head asks next. Changes are staged during a cycle and
written by :meth:`FileHeads.save` in one locked read-modify-write, merged into what the
file holds then; an unreadable file counts as empty (every head is then asked in full
again); a stranger's file (a link, a directory) is never read or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from the_loop.adapters.local_file import read_local_map
from the_loop.fsio import locked, write_json
from the_loop.layout import StateLayout
from the_loop.polling.ci_ports import HeadState

HEADS_FILE = "poll-heads.json"
FORMAT_VERSION = 1


class FileHeads:
    """:class:`~the_loop.polling.ci_ports.HeadsCache` over one JSON file."""

    def __init__(self, path: Path, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path
        self._read_heads: dict[str, Any] | None = None
        self._staged: dict[str, HeadState | None] = {}

    @classmethod
    def for_layout(cls, layout: StateLayout) -> FileHeads:
        return cls(layout.local_dir / HEADS_FILE, layout.local_locks_dir / "poll-heads.lock")

    def get(self, pull_request: str) -> HeadState | None:
        """The state kept for ``pull_request`` (staged first); None when there is none or
        it is unreadable."""
        if pull_request in self._staged:
            return self._staged[pull_request]
        try:
            return HeadState.from_dict(self._heads()[pull_request])
        except (KeyError, ValueError):
            return None

    def put(self, pull_request: str, state: HeadState | None) -> None:
        """Stage ``state`` (None: forget the pull request) for the next :meth:`save`."""
        self._staged[pull_request] = state

    def known(self) -> list[str]:
        """Every pull request a state is kept or staged for."""
        kept = [ref for ref in self._heads() if ref not in self._staged]
        return kept + [ref for ref, state in self._staged.items() if state is not None]

    def save(self) -> None:
        """Write the staged states durably when they change what the file holds."""
        if not self._staged:
            return
        with locked(self.lock_path):
            heads = self._read()
            before = dict(heads)
            for ref, state in self._staged.items():
                if state is None:
                    heads.pop(ref, None)
                else:
                    heads[ref] = state.to_dict()
            if heads != before:
                write_json(self.path, {"version": FORMAT_VERSION, "heads": heads}, indent=None)
        self._read_heads, self._staged = heads, {}

    def _heads(self) -> dict[str, Any]:
        if self._read_heads is None:
            self._read_heads = self._read()
        return self._read_heads

    def _read(self) -> dict[str, Any]:
        return read_local_map(self.path, "heads")
