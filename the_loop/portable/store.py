"""The portable work-item store: one JSON record per work item under ``portable/``.

A record holds independent sections (``control``, ``poll``, ``pullRequests``,
``channels``; the retired ``graph`` is read only). Every change is a locked
read-modify-write of the sections it names, and the seal-vs-delete rule lives in
:meth:`WorkItemStore.write_sections` only. Keys another release wrote are kept by every
write; only a reset removes them. ``index.json`` is derived from the records: failing to
rewrite it is a warning, never the failure of the write that changed a record.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection, Generator, Mapping
from pathlib import Path
from typing import Any, cast

from the_loop.errors import describe_error, or_ignore_warnings
from the_loop.fsio import DirectorySyncs, read_bytes, remove_file, write_json
from the_loop.layout import LegacyLayout
from the_loop.portable.format import (
    CHANNELS,
    CONTROL,
    FALLBACK_SECTIONS,
    GRAPH,
    INDEX_FILE,
    POLL,
    PULL_REQUESTS,
    READABLE_SECTIONS,
    SEALED,
    SECTIONS,
    ForeignRecordError,
    LegacyTree,
    LoadedRecord,
    RecordSummary,
    Section,
    WriteAction,
    WriteResult,
    check_writable,
    effective_section,
    foreign_keys,
    holds,
    ledger_key,
    load_record,
)
from the_loop.portable.index import IndexStamp
from the_loop.portable.listing import RecordListing
from the_loop.records.directory import RecordDirectory
from the_loop.records.tree import copy_json
from the_loop.ref import RefLike, WorkItemRef, as_ref

__all__ = [
    "CHANNELS",
    "CONTROL",
    "GRAPH",
    "INDEX_FILE",
    "POLL",
    "PULL_REQUESTS",
    "READABLE_SECTIONS",
    "SEALED",
    "SECTIONS",
    "ForeignRecordError",
    "RecordSummary",
    "Section",
    "WorkItemRef",
    "WorkItemStore",
    "WriteResult",
    "as_ref",
]


def _stored_ref(loaded: LoadedRecord) -> str | None:
    return loaded.item.ref if loaded.item is not None else None


class WorkItemStore:
    """Portable records under ``root``; locks under ``locks_dir`` (``<parent>/locks/<name>``).

    Every write updates ``index.json``: its one entry when the stamp says the index
    matched the records before (:mod:`~the_loop.portable.index`), else by a rebuild;
    inside ``with store.batch():`` it is rebuilt once at the end and directory syncs are
    deferred to then. An index write that fails is reported to ``on_warning`` (once
    until one succeeds) and never raised by a write. One instance per thread.
    """

    def __init__(
        self,
        root: Path,
        legacy: LegacyLayout | None = None,
        *,
        locks_dir: Path | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.legacy = legacy
        self._directory = RecordDirectory(self.root, locks_dir)
        self.locks_dir = self._directory.locks_dir
        self._legacy = LegacyTree(legacy)
        self._warn = or_ignore_warnings(on_warning)
        self._listing = RecordListing(self._directory, self._warn)
        self._batch_depth = 0
        self._batch_syncs: DirectorySyncs | None = None
        self._index_stale = False
        self._index_warned = False
        self._index_depth = 0
        self._stamp = IndexStamp(self.locks_dir / "index.stamp", self.root, self.index_path)

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    # -- reading -------------------------------------------------------------

    def path_for(self, ref: RefLike) -> Path:
        """The file that holds (or would hold) ``ref``'s record."""
        return self._directory.path(self._locate(as_ref(ref))[0])

    def record_status(self, ref: RefLike) -> str:
        """``absent``, ``ok`` or ``unreadable`` (which a reset counts as found and removes)."""
        status = self._locate(as_ref(ref))[1].status
        return status if status in ("absent", "ok") else "unreadable"

    def read(self, ref: RefLike) -> Section:
        """The raw record; ``{}`` when absent, or unreadable (with a warning)."""
        return self._read_loaded(as_ref(ref)).record

    def section(self, ref: RefLike, name: str) -> Section | None:
        """One section, falling back to the legacy tree while absent and not sealed."""
        if name not in READABLE_SECTIONS:
            raise ValueError(f"unknown section {name!r}; expected one of {READABLE_SECTIONS}")
        item = as_ref(ref)
        loaded = self._read_loaded(item)
        if loaded.status not in ("ok", "absent"):
            return None
        return effective_section(loaded.record, name, self._legacy_for(loaded.record, item, name))

    def load(self, ref: RefLike) -> tuple[str, dict[str, Section | None]]:
        """``(record_status(ref), name -> section(ref, name))`` from one read; never warns.

        The sections are empty when the record is unreadable.
        """
        status, sections, _foreign = self.load_with_foreign(ref)
        return status, sections

    def load_with_foreign(
        self, ref: RefLike
    ) -> tuple[str, dict[str, Section | None], tuple[str, ...]]:
        """:meth:`load` and :meth:`foreign_keys` from the same one read; never warns."""
        item = as_ref(ref)
        loaded = self._locate(item)[1]
        if loaded.status not in ("ok", "absent"):
            return "unreadable", {}, ()
        record = loaded.record
        legacy: dict[str, Section] = {}
        if record.get(SEALED) is not True and any(n not in record for n in FALLBACK_SECTIONS):
            legacy = self._legacy.sections_for(item)
        sections = {n: effective_section(record, n, legacy) for n in READABLE_SECTIONS}
        return loaded.status, sections, foreign_keys(record)

    def exclusive(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A store-wide lock named ``name``, for an invariant that spans records.

        Take it before any record lock (never the other way round).
        """
        if not name.isalpha() or name in ("index",):
            raise ValueError(f"invalid store lock name {name!r}")
        return self._directory.lock_named(name)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """A block in which each record file is listed and read at most once.

        For read-only phases; see :meth:`~the_loop.records.directory.RecordDirectory.snapshot`.
        """
        return self._directory.snapshot()

    def legacy_holds(self, ref: RefLike) -> bool:
        """Whether the legacy tree still holds a control record or poll ledger for ``ref``."""
        return bool(self._legacy.sections_for(as_ref(ref)))

    def unreadable_refs(self) -> set[str]:
        """Refs of records that cannot be read but still name, in their file name, the ref
        they store (a reset of that ref counts them as found and removes them)."""
        return self._listing.unreadable_refs()

    def legacy_refs(self) -> set[str]:
        """Refs the read-only legacy tree still holds something for (sealed or not)."""
        return self._legacy.refs()

    def refs(self) -> dict[str, Path]:
        """Canonical ref -> file of every readable record, sealed ones included.

        Never the index, temp files, strangers' files or unreadable records (warned about).
        """
        path = self._directory.path
        return {summary.ref: path(name) for summary, name in self._listing.summaries(warn=True)}

    def summaries(self) -> list[RecordSummary]:
        """Every readable record as the index lists it, sorted by ref (no warnings)."""
        return [summary for summary, _name in self._listing.summaries(warn=False)]

    def refs_holding(self, names: Collection[str], *, foreign: bool = False) -> set[str]:
        """Refs of the readable records in which any section of ``names`` holds an object
        (or, with ``foreign``, which hold any key another release wrote).

        What ``summaries()`` would say, without building a summary per record.
        """
        return {
            item.ref
            for item, _name, record in self._listing.listable(warn=False)
            if any(holds(name, record.get(name)) for name in names)
            or (foreign and bool(foreign_keys(record)))
        }

    def foreign_keys(self, ref: RefLike) -> tuple[str, ...]:
        """The keys of ``ref``'s record that another release wrote (kept by every write but
        ``write_sections(..., drop_foreign=True)``); none when absent or unreadable."""
        loaded = self._locate(as_ref(ref))[1]
        return foreign_keys(loaded.record) if loaded.status == "ok" else ()

    def pull_request_owners(self) -> dict[str, str]:
        """Each pull request ref a ``pullRequests`` map holds, to the work item holding it:
        from ``index.json`` when its stamp says it lists the records (one read), else from
        every record."""
        if self.index_trusted():
            listed = _owners_in_index(read_bytes(self.index_path))
            if listed is not None:
                return listed
        found: dict[str, str] = {}
        for summary, _name in self._listing.summaries(warn=False):  # sorted by ref, as the index
            for pr in summary.pull_requests:
                if pr != summary.ref:
                    found.setdefault(pr, summary.ref)  # the first owner, as owner_of said
        return found

    def owner_of(self, ref: RefLike) -> str | None:
        """The work item whose ``pullRequests`` map holds ``ref``, or None (scans the records)."""
        pr = as_ref(ref).ref
        for summary, _name in self._listing.summaries(warn=False):
            if pr in summary.pull_requests and summary.ref != pr:
                return summary.ref
        return None

    def pull_request_ledger(self, owner: RefLike, pr: RefLike) -> Section | None:
        """``pr``'s poll ledger in ``owner``'s ``pullRequests`` map, or None."""
        ledgers = self.section(owner, PULL_REQUESTS) or {}
        key = ledger_key(ledgers, as_ref(pr))
        return None if key is None else ledgers[key]

    # -- writing -------------------------------------------------------------

    def write_section(
        self, ref: RefLike, name: str, data: Section | None, *, syncs: DirectorySyncs | None = None
    ) -> WriteResult:
        """Replace one section (``None`` clears it); see :meth:`write_sections`."""
        return self.write_sections(ref, {name: data}, syncs=syncs)

    def write_sections(
        self,
        ref: RefLike,
        changes: Mapping[str, Section | None],
        *,
        syncs: DirectorySyncs | None = None,
        drop_foreign: bool = False,
    ) -> WriteResult:
        """Replace several sections in one locked read-modify-write; others stay as on disk.

        ``None`` is a tombstone. When no section holds an object any more the file is
        deleted, or sealed (``{ref, url, sealed}``) while the legacy tree holds something
        for the ref; keys another release wrote are kept (and keep the file) unless
        ``drop_foreign``. ``OSError`` propagates; ``ValueError`` for an unknown section.
        """
        fixed = dict(changes)
        return self._modify(
            as_ref(ref), tuple(fixed), lambda _current: fixed, syncs, drop_foreign=drop_foreign
        )

    def update_section(
        self,
        ref: RefLike,
        name: str,
        change: Callable[[Section | None], Section | None],
        *,
        syncs: DirectorySyncs | None = None,
    ) -> WriteResult:
        """Locked read-modify-write of one section: ``change(current)`` gives the new value.

        ``current`` is read from disk under the lock (legacy fallback included); ``change``
        must not call back into the store.
        """
        return self._modify(
            as_ref(ref), (name,), lambda current: {name: change(current[name])}, syncs
        )

    def update_sections(
        self,
        ref: RefLike,
        names: tuple[str, ...],
        compute: Callable[[dict[str, Section | None]], Mapping[str, Section | None]],
    ) -> WriteResult:
        """Locked read-modify-write of several sections: ``compute(current)`` gives the
        changed ones (an empty mapping changes nothing); ``compute`` must not call back."""
        return self._modify(as_ref(ref), names, compute, None)

    def update_pull_request_ledger(
        self,
        owner: RefLike,
        pr: RefLike,
        change: Callable[[Section | None], Section | None],
        *,
        syncs: DirectorySyncs | None = None,
    ) -> WriteResult:
        """Locked read-modify-write of one key of ``owner``'s ``pullRequests`` map."""
        pr_ref = as_ref(pr)

        def change_map(current: Section | None) -> Section | None:
            ledgers = dict(current or {})
            key = ledger_key(ledgers, pr_ref)
            ledger = ledgers.pop(key) if key is not None else None
            updated = change(ledger)
            if updated is not None:
                ledgers[pr_ref.ref] = updated
            return ledgers or None

        return self.update_section(owner, PULL_REQUESTS, change_map, syncs=syncs)

    def write_pull_request_ledger(
        self, owner: RefLike, pr: RefLike, data: Section | None
    ) -> WriteResult:
        """Set (or with ``None`` remove) ``pr``'s ledger in ``owner``'s ``pullRequests`` map."""
        return self.update_pull_request_ledger(owner, pr, lambda _ledger: data)

    def drop(self, ref: RefLike, *, syncs: DirectorySyncs | None = None) -> bool:
        """Clear every section (the retired ``graph`` too); True when anything changed."""
        changes: dict[str, Section | None] = dict.fromkeys(READABLE_SECTIONS)
        return self.write_sections(ref, changes, syncs=syncs).changed

    @contextlib.contextmanager
    def batch(self) -> Generator[None]:
        """Defer the index rebuild and directory syncs to the end of the outermost batch."""
        if self._batch_depth == 0:
            self._batch_syncs = DirectorySyncs()
            self._index_stale = False
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self._end_batch()

    def rebuild_index(self, *, syncs: DirectorySyncs | None = None) -> None:
        """Rewrite ``index.json`` from the directory (removed when no record is left).

        One entry per line, so a ``git diff`` of the index shows one line per changed
        item; the file is left alone when its bytes would not change. Every rebuild comes
        here, and saves the stamp that lets the next write update one entry only.
        """
        with self._holding_index():
            self._stamp.discard()
            self._listing.rebuild_index(self.index_path, syncs=syncs)
            self._stamp.save()

    def index_trusted(self) -> bool:
        """Whether ``index.json`` lists the records as they are, as far as its stamp can
        tell (:mod:`~the_loop.portable.index`): two stats and one small read, no lock."""
        try:
            return self._stamp.matches()
        except OSError:
            return False

    def heal_index(self) -> bool:
        """Rebuild ``index.json`` unless its stamp holds (checked again under the index
        lock); True when it was rebuilt. ``OSError`` when it cannot be."""
        with self._holding_index():
            if self.index_trusted():
                return False
            self.rebuild_index()
            return True

    # -- internals -----------------------------------------------------------

    def _locate(self, item: WorkItemRef) -> tuple[str, LoadedRecord]:
        """The name of the file for ``item`` and what it holds (reading each candidate once)."""
        name, loaded = self._directory.locate(
            item, load_record, _stored_ref, lambda loaded: loaded.status == "stranger"
        )
        if loaded.item is not None and loaded.item is not item and loaded.item != item:
            problem = f"it holds the record of {loaded.item.ref}"
            loaded = LoadedRecord("foreign", {}, loaded.item, problem)
        return name, loaded

    def _read_loaded(self, item: WorkItemRef) -> LoadedRecord:
        name, loaded = self._locate(item)
        if loaded.status not in ("ok", "absent"):
            path = self._directory.path(name)
            self._warn(f"{item.ref}: ignoring unreadable record {path}: {loaded.problem}")
        return loaded

    def _legacy_for(self, record: Section, item: WorkItemRef, name: str) -> dict[str, Section]:
        if name not in FALLBACK_SECTIONS or name in record or record.get(SEALED) is True:
            return {}
        return self._legacy.sections_for(item)

    def _modify(
        self,
        item: WorkItemRef,
        names: tuple[str, ...],
        compute: Callable[[dict[str, Section | None]], Mapping[str, Section | None]],
        syncs: DirectorySyncs | None,
        *,
        drop_foreign: bool = False,
    ) -> WriteResult:
        for name in names:
            check_writable(name, None)
        with self._directory.lock(item):
            name, loaded = self._locate(item)
            path = self._directory.path(name)
            record = self._writable_record(item, path, loaded)
            legacy = self._legacy.sections_for(item)
            current = {name: effective_section(record, name, legacy) for name in names}
            held = tuple(name for name in READABLE_SECTIONS if holds(name, current.get(name)))
            changes = dict(compute(copy_json(current)))
            for name, value in changes.items():
                check_writable(name, value)
            extras = {} if drop_foreign else {key: record[key] for key in foreign_keys(record)}
            new_record = self._merge(item, record, changes, legacy, extras)
            with self._holding_index():  # every change of the directory, so the stamp holds
                trusted = self._take_stamp()
                if new_record is None and loaded.status != "absent":
                    trusted = self._unlist(item, path.name, trusted)
                action = self._commit(path, loaded, new_record, syncs or self._batch_syncs)
                self._index_changed(item if trusted else None)
        removed = tuple(name for name in held if name in changes and not holds(name, changes[name]))
        dropped = tuple(key for key in foreign_keys(record) if key not in extras)
        return WriteResult(
            item.ref, action, path.name, held, removed, loaded.status == "unreadable", dropped
        )

    def _writable_record(self, item: WorkItemRef, path: Path, loaded: LoadedRecord) -> Section:
        if loaded.status in ("stranger", "foreign"):
            raise ForeignRecordError(f"{item.ref}: refusing to change {path}: {loaded.problem}")
        if loaded.status == "unreadable":
            self._warn(f"{item.ref}: replacing unreadable record {path}: {loaded.problem}")
        return loaded.record

    @staticmethod
    def _merge(
        item: WorkItemRef,
        record: Section,
        changes: Mapping[str, Section | None],
        legacy: Mapping[str, Section],
        extras: Mapping[str, object],
    ) -> Section | None:
        """The record after ``changes``: the seal-vs-delete rule. None means delete.

        ``extras`` (the keys another release wrote that stay) follow the sections, and
        keep the file when no section holds anything.
        """
        sections = {name: record[name] for name in READABLE_SECTIONS if name in record}
        if record.get(SEALED) is True:
            # Unsealing must not let the legacy tree back in: tombstone its sections instead.
            for name in FALLBACK_SECTIONS:
                sections.setdefault(name, None)
        for name, value in changes.items():
            if name == GRAPH:
                sections.pop(GRAPH, None)
            else:
                sections[name] = value if holds(name, value) else None
        head: Section = {"ref": item.ref, **({"url": item.url} if item.url else {})}
        holding = any(holds(name, value) for name, value in sections.items()) or any(
            name not in sections for name in legacy
        )
        if holding:
            ordered = {name: sections[name] for name in READABLE_SECTIONS if name in sections}
            return {**head, **ordered, **extras}
        if legacy:
            return {**head, SEALED: True, **extras}
        return {**head, **extras} if extras else None

    @staticmethod
    def _commit(
        path: Path, loaded: LoadedRecord, new_record: Section | None, syncs: DirectorySyncs | None
    ) -> WriteAction:
        if new_record is None:
            if loaded.status == "absent":
                return "unchanged"
            remove_file(path, syncs=syncs)
            return "deleted"
        old = loaded.record
        if loaded.status == "ok" and new_record == old and list(new_record) == list(old):
            return "unchanged"
        write_json(path, new_record, syncs=syncs)
        return "sealed" if new_record.get(SEALED) is True else "written"

    @contextlib.contextmanager
    def _holding_index(self) -> Generator[None]:
        """The index lock, taken once however deeply nested (``flock`` is not reentrant)."""
        if self._index_depth:
            yield
            return
        with self._directory.lock_named("index"):
            self._index_depth += 1
            try:
                yield
            finally:
                self._index_depth -= 1

    def _take_stamp(self) -> bool:
        """Whether the index may be updated one entry at a time (see :class:`IndexStamp`)."""
        try:
            return self._stamp.take()
        except OSError:
            return False

    def _unlist(self, item: WorkItemRef, name: str, trusted: bool) -> bool:
        """Before file ``name`` of ``item`` is deleted: its entry out of the trusted index, or
        (in a batch, or when the index is not trusted) the index removed, so no entry ever
        names a record that is gone. Whether the index is still trusted; never raises (a
        failure is reported by the index update that follows)."""
        if trusted and not self._batch_depth:
            with contextlib.suppress(OSError, ValueError):  # else: removed, below
                self._listing.update_entry(self.index_path, item, gone=name)
                return True
        with contextlib.suppress(OSError):
            self._listing.remove_index(self.index_path)
        return False

    def _index_changed(self, trusted: WorkItemRef | None) -> None:
        if self._batch_depth:
            self._index_stale = True
        else:
            self._refresh_index(trusted)

    def _refresh_index(
        self, trusted: WorkItemRef | None = None, syncs: DirectorySyncs | None = None
    ) -> None:
        """Update the derived index: ``trusted``'s entry alone when given, else a rebuild.
        An ``OSError`` is a warning (once until an update succeeds), never the failure of
        the write that made the index stale."""
        try:
            if trusted is None or not self._update_entry(trusted, syncs):
                self.rebuild_index(syncs=syncs)
        except OSError as error:
            if not self._index_warned:
                self._index_warned = True
                self._warn(
                    f"could not rebuild the derived {self.index_path}: {describe_error(error)}; "
                    "the records are as reported, and the next write rebuilds the index"
                )
            return
        self._index_warned = False

    def _update_entry(self, item: WorkItemRef, syncs: DirectorySyncs | None) -> bool:
        """Splice ``item``'s entry into the trusted index; False when it is not in our layout."""
        try:
            self._listing.update_entry(self.index_path, item, syncs=syncs)
        except ValueError:
            return False
        self._stamp.save()
        return True

    def _end_batch(self) -> None:
        syncs, self._batch_syncs = self._batch_syncs, None
        try:
            if self._index_stale:
                self._index_stale = False
                self._refresh_index(syncs=syncs)
        finally:
            if syncs is not None:
                syncs.flush()


def _owners_in_index(data: bytes | None) -> dict[str, str] | None:
    """The pull requests to their owners as ``index.json`` lists them (None: unreadable)."""
    if data is None:
        return {}
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    items = cast(dict[str, Any], document).get("workItems") if isinstance(document, dict) else None
    if not isinstance(items, list):
        return None
    found: dict[str, str] = {}
    for entry in cast(list[Any], items):
        if not isinstance(entry, dict):
            continue
        fields = cast(dict[str, Any], entry)
        owner, prs = fields.get("ref"), fields.get("pullRequests", [])
        if isinstance(owner, str) and isinstance(prs, list):
            for pr in cast(list[Any], prs):
                if isinstance(pr, str) and pr != owner:
                    found.setdefault(pr, owner)
    return found
