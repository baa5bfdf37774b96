"""The portable record format: section names, shape checks, reading record files.

Also what a read makes of an absent section (:func:`effective_section`: the legacy
fallback), what one write reports (:class:`WriteResult`), and the legacy tree of
older releases (``sessions/control/<slug>.json``, ``sessions/poll-state.json`` and,
older still, ``<root>/poll-state.json``), which is never written.
:mod:`the_loop.portable.store` builds the store on top; import the names from there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from the_loop.fsio import read_bounded_object
from the_loop.layout import LegacyLayout
from the_loop.records.directory import RecordDirectory
from the_loop.records.tree import MAX_NESTING, copy_json, nesting_exceeds
from the_loop.ref import WorkItemRef

CONTROL = "control"
POLL = "poll"
PULL_REQUESTS = "pullRequests"
CHANNELS = "channels"
#: Retired: read for items frozen by older releases, never written (only cleared).
GRAPH = "graph"
#: The writable sections, in file order.
SECTIONS = (CONTROL, POLL, PULL_REQUESTS, CHANNELS)
#: Every section a record may hold, in file order.
READABLE_SECTIONS = (*SECTIONS, GRAPH)
INDEX_FILE = "index.json"
SEALED = "sealed"
#: Sections that fall back to the legacy tree while absent from an unsealed record.
FALLBACK_SECTIONS = (CONTROL, POLL)
#: Sections that are maps (one object per key); an empty map holds nothing.
MAP_SECTIONS = (PULL_REQUESTS, CHANNELS)
#: The keys of a record that are not sections.
HEAD_KEYS = ("ref", "url", SEALED)

Section = dict[str, Any]


@dataclass(frozen=True)
class LoadedRecord:
    """One file as read: status ``absent|ok|unreadable|stranger|foreign`` and its record.

    ``record`` is the parsed object only when ``ok``; ``item`` is the ref the file
    names whenever it names a valid one (even when the rest is malformed).
    """

    status: str
    record: Section
    item: WorkItemRef | None = None
    problem: str = ""


ABSENT = LoadedRecord("absent", {})


@dataclass(frozen=True)
class RecordSummary:
    """One readable record as the index lists it."""

    ref: str
    url: str
    file: str
    sections: tuple[str, ...]
    pull_requests: tuple[str, ...]
    sealed: bool

    def to_dict(self) -> dict[str, Any]:
        """The ``index.json`` entry (state.md §5)."""
        entry: dict[str, Any] = {"ref": self.ref}
        if self.url:
            entry["url"] = self.url
        entry["file"] = self.file
        entry["sections"] = list(self.sections)
        if self.pull_requests:
            entry["pullRequests"] = list(self.pull_requests)
        if self.sealed:
            entry[SEALED] = True
        return entry


WriteAction = Literal["written", "deleted", "sealed", "unchanged"]


class ForeignRecordError(OSError):
    """The file a ref resolves to belongs to someone else; it is never changed."""


@dataclass(frozen=True)
class WriteResult:
    """What one write did: ``action``, and which requested sections held an object before."""

    ref: str
    action: WriteAction
    file: str
    held_before: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced_unreadable: bool = False
    #: Keys another release wrote that this write removed (only ever ``drop_foreign``).
    foreign_removed: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.action != "unchanged"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "action": self.action,
            "file": self.file,
            "heldBefore": list(self.held_before),
            "removed": list(self.removed),
            "replacedUnreadable": self.replaced_unreadable,
            "foreignRemoved": list(self.foreign_removed),
        }


def parse_ref(value: object) -> WorkItemRef | None:
    """The ref ``value`` spells, or None when it is not a valid ref string.

    Goes through :meth:`WorkItemRef.parse` and so shares its cache: the ref a session
    record names is parsed once, and found there again for the item's portable record.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        return WorkItemRef.parse(value)
    except ValueError:
        return None


def holds(name: str, value: object) -> bool:
    """Whether a section value holds an object (an empty map holds nothing)."""
    if not isinstance(value, dict):
        return False
    return name not in MAP_SECTIONS or len(cast(Section, value)) > 0


def section_problem(name: str, value: object) -> str:
    """Why ``value`` cannot be section ``name`` (an object or null; map entries objects)."""
    if value is None:
        return ""
    if not isinstance(value, dict):
        return f"its {name!r} section is not an object"
    entries = cast(Section, value).values()
    if name in MAP_SECTIONS and not all(isinstance(entry, dict) for entry in entries):
        return f"an entry of its {name!r} section is not an object"
    return ""


def foreign_keys(record: Mapping[str, object]) -> tuple[str, ...]:
    """The keys of ``record`` we do not own (another release wrote them), in file order.

    Every write keeps them; only a reset removes them, with the rest of the record.
    """
    if record.keys() <= _OWN_KEYS:  # the common case, told without a loop in Python
        return ()
    return tuple(key for key in record if key not in _OWN_KEYS)


#: Every key of a record we own: its head and its sections.
_OWN_KEYS = frozenset((*HEAD_KEYS, *READABLE_SECTIONS))


def load_record(path: str | Path) -> LoadedRecord:
    """Read one portable record file (one ``open`` + ``json.load``), checking its shape.

    A file nested deeper than :data:`~the_loop.records.tree.MAX_NESTING` is unreadable
    (and still names its ref, so a reset finds and removes it).
    """
    status, data, problem = read_bounded_object(path)
    if status == "absent":
        return ABSENT
    if data is None:
        return LoadedRecord(status, {}, problem=problem)
    if not isinstance(data, dict):
        return LoadedRecord("unreadable", {}, problem="it is not a JSON object")
    record = cast(Section, data)
    item = parse_ref(record.get("ref"))
    if item is None:
        return LoadedRecord("unreadable", {}, problem="it names no valid work item")
    problem = problem or _shape_problem(record)
    return LoadedRecord("unreadable" if problem else "ok", {} if problem else record, item, problem)


def _shape_problem(record: Section) -> str:
    """Why ``record``'s sections or seal cannot be ours, or ""."""
    for name in READABLE_SECTIONS:
        value: object = record.get(name)
        # A plain object needs no check unless it is a map of entries.
        if value is not None and (name in MAP_SECTIONS or not isinstance(value, dict)):
            problem = section_problem(name, value)
            if problem:
                return problem
    if not isinstance(record.get(SEALED, False), bool):
        return "its 'sealed' flag is not a boolean"
    return ""


def effective_section(record: Section, name: str, legacy: Mapping[str, Section]) -> Section | None:
    """Section ``name`` as a read returns it: the record's own (``None`` for a tombstone);
    while absent from an unsealed record, the ``legacy`` tree's for a fallback section."""
    if name in record:
        return cast("Section | None", record[name])
    if record.get(SEALED) is True or name not in FALLBACK_SECTIONS:
        return None
    return legacy.get(name)


def check_writable(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` may be written as section ``name``."""
    if name == GRAPH:
        if value is not None:
            raise ValueError("the retired 'graph' section is never written (it may be cleared)")
        return
    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; expected one of {SECTIONS}")
    problem = section_problem(name, value)
    if not problem and nesting_exceeds(value, MAX_NESTING - 1):
        problem = f"it nests deeper than a record may ({MAX_NESTING} levels)"
    if problem:
        raise ValueError(f"cannot write section {name!r}: {problem}")


def summarize(item: WorkItemRef, file: str, record: Section) -> RecordSummary:
    """The index entry of a readable record."""
    ledgers = cast(Section, record.get(PULL_REQUESTS) or {})
    pull_requests = sorted({pr.ref for pr in map(parse_ref, ledgers) if pr is not None})
    return RecordSummary(
        ref=item.ref,
        url=item.url,
        file=file,
        sections=tuple(name for name in READABLE_SECTIONS if holds(name, record.get(name))),
        pull_requests=tuple(pull_requests),
        sealed=record.get(SEALED) is True,
    )


def ledger_key(ledgers: Mapping[str, Any], pr: WorkItemRef) -> str | None:
    """The key of ``pr``'s entry in a ``pullRequests`` map, whatever its spelling."""
    if pr.ref in ledgers:
        return pr.ref
    return next((key for key in ledgers if parse_ref(key) == pr), None)


class LegacyTree:
    """The read-only tree of older releases: control files and the shared poll-state files."""

    def __init__(self, layout: LegacyLayout | None) -> None:
        self.layout = layout
        self._poll_stamp: tuple[int, ...] | None = None
        self._poll_items: dict[str, Section] = {}
        self._controls = RecordDirectory(layout.control_dir) if layout is not None else None

    def sections_for(self, item: WorkItemRef) -> dict[str, Section]:
        """The legacy ``control`` / ``poll`` objects held for ``item`` (fresh copies)."""
        if self.layout is None:
            return {}
        found: dict[str, Section] = {}
        control = self._control(item)
        if control is not None:
            found[CONTROL] = control
        poll = self._poll_items_now(self.layout).get(item.ref)
        if poll is not None:
            found[POLL] = copy_json(poll)
        return found

    def refs(self) -> set[str]:
        """Every ref the legacy tree holds a control record or poll ledger for."""
        if self.layout is None:
            return set()
        found = set(self._poll_items_now(self.layout))
        try:
            names = sorted(os.listdir(self.layout.control_dir))
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".json"):
                continue
            status, data, _ = read_bounded_object(self.layout.control_dir / name)
            if status == "ok" and isinstance(data, dict):
                record = cast(Section, data)
                item = parse_ref(record.get("ref", record.get("workItem")))
                if item is not None:
                    found.add(item.ref)
        return found

    def _control(self, item: WorkItemRef) -> Section | None:
        # A control file counts only when it stores this very ref (slugs collide); upstream
        # named it after the ref as then spelled, so a mixed-case name is looked for last.
        controls = self._controls
        if controls is None:
            return None
        for name in _control_names(controls, item):
            status, data, _ = read_bounded_object(controls.path(name))
            if status != "ok" or not isinstance(data, dict):
                continue
            record = cast(Section, data)
            if parse_ref(record.get("ref", record.get("workItem"))) == item:
                return record
        return None

    def _poll_items_now(self, layout: LegacyLayout) -> dict[str, Section]:
        # The shared files hold every item: parse them once per change, not once per item.
        # For an item in both, ``sessions/poll-state.json`` (the newer place) wins.
        stamp: list[int] = []
        for path in layout.poll_states:
            try:
                info = os.stat(path)
            except OSError:
                stamp += (0, 0, 0, 0)
                continue
            stamp += (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if tuple(stamp) != self._poll_stamp:
            merged: dict[str, Section] = {}
            for path in layout.poll_states:
                for ref, ledger in _parse_poll_items(path).items():
                    merged.setdefault(ref, ledger)
            self._poll_items = merged
            self._poll_stamp = tuple(stamp)
        return self._poll_items


def _parse_poll_items(path: Path) -> dict[str, Section]:
    status, data, _ = read_bounded_object(path)
    items = cast(Section, data).get("items") if status == "ok" and isinstance(data, dict) else None
    if not isinstance(items, dict):
        return {}
    parsed: dict[str, Section] = {}
    for key, value in cast(Section, items).items():
        item = parse_ref(key)
        if item is not None and isinstance(value, dict):
            parsed.setdefault(item.ref, cast(Section, value))
    return parsed


def _control_names(controls: RecordDirectory, item: WorkItemRef) -> Iterator[str]:
    """The names a legacy control file of ``item`` may have; the directory is listed for
    mixed-case ones only when the lowercase names are asked past."""
    yield f"{item.slug}.json"
    yield f"{item.disambiguated_slug}.json"
    yield from controls.legacy_names(item)
