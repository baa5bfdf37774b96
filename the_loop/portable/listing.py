"""Every portable record at once: the listable ones, and ``index.json`` derived from them.

Reads go through the store's :class:`~the_loop.records.directory.RecordDirectory`, so a
snapshot serves them; :class:`~the_loop.portable.store.WorkItemStore` decides when the
index gets one entry spliced in (after a write, when its stamp says it can be trusted)
and when it is rebuilt from every record (otherwise, and once per batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from the_loop.fsio import DirectorySyncs, read_bytes, remove_file, write_text
from the_loop.portable.format import LoadedRecord, RecordSummary, Section, load_record, summarize
from the_loop.portable.index import splice
from the_loop.records.directory import (
    RecordDirectory,
    disambiguated_name,
    is_named_for,
    name_rank,
    plain_name,
)
from the_loop.records.rows import rows_document
from the_loop.ref import WorkItemRef

#: (ref, file name, record) of one listable record.
Listed = tuple[WorkItemRef, str, Section]


class RecordListing:
    """The records of ``directory`` taken together; problems go to ``warn`` when asked."""

    def __init__(self, directory: RecordDirectory, warn: Callable[[str], None]) -> None:
        self._directory = directory
        self._warn = warn

    def listable(self, *, warn: bool) -> list[Listed]:
        """Every readable record named for the ref it stores, sorted by ref; one read
        per file. The index, temp files and strangers' files are never listed."""
        found: dict[str, Listed] = {}
        for name in self._directory.record_names():
            loaded = self._load(name)
            item = loaded.item
            if loaded.status == "ok" and item is not None:
                if is_named_for(name, item):
                    self._keep(found, (item, name, loaded.record), warn=warn)
                    continue
                loaded = LoadedRecord(
                    "foreign", {}, item, f"it names {item.ref}, not its file name"
                )
            if warn and loaded.status != "absent":
                self._warn(f"skipping {self._directory.path(name)}: {loaded.problem}")
        return [found[ref] for ref in sorted(found)]

    def _keep(self, found: dict[str, Listed], listed: Listed, *, warn: bool) -> None:
        """Keep ``listed`` unless a file of better rank (``name_rank``) holds its ref."""
        item, name, _ = listed
        held = found.get(item.ref)
        if held is None or name_rank(name, item) < name_rank(held[1], item):
            found[item.ref] = listed
        if held is not None and warn:
            kept, left = sorted((held[1], name), key=lambda other: name_rank(other, item))
            self._warn(
                f"{self._directory.path(left)} holds {item.ref} too "
                f"(an older spelling); {kept} is used, the other left alone"
            )

    def summaries(self, *, warn: bool) -> list[tuple[RecordSummary, str]]:
        """Every listable record as the index lists it, with its file name, sorted by ref."""
        return [
            (summarize(item, name, record), name) for item, name, record in self.listable(warn=warn)
        ]

    def unreadable_refs(self) -> set[str]:
        """Refs of records that cannot be read but still name, in their file name, the ref
        they store."""
        found: set[str] = set()
        for name in self._directory.record_names():
            loaded = self._load(name)
            item = loaded.item
            if loaded.status == "unreadable" and item is not None and is_named_for(name, item):
                found.add(item.ref)
        return found

    def rebuild_index(self, index_path: Path, *, syncs: DirectorySyncs | None = None) -> None:
        """Rewrite ``index_path`` from the records (removed when none is left); the caller
        holds the index lock. One entry per line, left alone when its bytes would not change."""
        summaries = self.summaries(warn=False)
        text = rows_document("workItems", (summary.to_dict() for summary, _ in summaries))
        _replace_index(index_path, text if summaries else None, syncs)

    def entry_for(self, item: WorkItemRef, *, gone: str = "") -> dict[str, Any] | None:
        """``item``'s index entry as a rebuild makes it, reading only the files that can
        list it (its plain, its disambiguated, then its legacy names, in rank order, but
        ``gone``, a file about to be deleted); None when none."""
        entry = self._entry_among((plain_name(item), disambiguated_name(item)), item, gone)
        if entry is None:  # a legacy name is looked for only when no lowercase one lists it
            legacy = self._directory.legacy_names(item, refresh=False)
            entry = self._entry_among(legacy, item, gone)
        return entry

    def _entry_among(
        self, names: Iterable[str], item: WorkItemRef, gone: str
    ) -> dict[str, Any] | None:
        for name in names:
            if name == gone:
                continue
            loaded = self._load(name)
            if loaded.status == "ok" and loaded.item is not None and loaded.item.ref == item.ref:
                return summarize(loaded.item, name, loaded.record).to_dict()
        return None

    def update_entry(
        self,
        index_path: Path,
        item: WorkItemRef,
        *,
        gone: str = "",
        syncs: DirectorySyncs | None = None,
    ) -> None:
        """Splice ``item``'s entry (as if file ``gone`` were deleted) into the index the store
        last wrote; the caller holds the index lock. ``ValueError`` when the index is not in
        the store's layout."""
        existing = read_bytes(index_path)
        text = existing.decode("utf-8") if existing is not None else None
        entry = self.entry_for(item, gone=gone)
        _replace_index(index_path, splice(text, item.ref, entry), syncs, existing)

    @staticmethod
    def remove_index(index_path: Path) -> None:
        """Remove the index (until a rebuild); the caller holds the index lock."""
        remove_file(index_path)

    def _load(self, name: str) -> LoadedRecord:
        return self._directory.load(name, load_record)


def _replace_index(
    index_path: Path,
    text: str | None,
    syncs: DirectorySyncs | None,
    existing: bytes | None = None,
) -> None:
    """Write ``text`` as the index (None: remove it), unless its bytes are already there."""
    if text is None:
        remove_file(index_path, syncs=syncs)
        return
    current = existing if existing is not None else read_bytes(index_path)
    if current is None or current != text.encode("utf-8"):
        write_text(index_path, text, syncs=syncs)
