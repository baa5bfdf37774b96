"""The upgrade report: retired state locations still present on this machine.

Older releases kept state where the attribute rule no longer puts it: the legacy
``sessions/`` tree, a pull request's own portable record, the portable ``graph``
section and ``graph-state.json`` files. :func:`find_retired` lists each one found,
says whether the-loop still reads it (as a fallback) and what replaced it. It only
reads: it never writes, moves or deletes anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from the_loop.errors import TheLoopError, describe_error, or_ignore_warnings
from the_loop.fsio import is_temp_name, read_object
from the_loop.layout import LegacyLayout, StateLayout
from the_loop.portable.format import parse_ref
from the_loop.portable.store import CONTROL, GRAPH, POLL, SEALED, WorkItemStore
from the_loop.records.directory import is_named_for
from the_loop.ref import WorkItemRef, is_record_file_name
from the_loop.repofile.file import (
    LEGACY_STATE_FILE,
    SPECS_DIR,
    STATE_FILE,
    FrozenChoices,
    WorkItemStateFile,
    graph_section_choices,
)
from the_loop.sessions.registry import SessionRegistry

LEGACY_CONTROL = "legacy-control-record"
LEGACY_POLL_STATE = "legacy-poll-state"
OLDER_POLL_STATE = "older-poll-state"
LEGACY_SESSION_RECORD = "legacy-session-record"
LEGACY_TREE = "legacy-sessions-tree"
PULL_REQUEST_RECORD = "pull-request-record"
GRAPH_SECTION = "graph-section"
GRAPH_STATE_FILE = "graph-state-file"

#: Every kind of retired location: (what it is, what replaced it).
RETIRED_KINDS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        LEGACY_CONTROL: (
            "<root>/sessions/control/<slug>.json: a control record of an older release",
            "the control section of portable/<slug>.json",
        ),
        LEGACY_POLL_STATE: (
            "<root>/sessions/poll-state.json: every item's poll ledger in one file",
            "the poll section of each portable/<slug>.json",
        ),
        OLDER_POLL_STATE: (
            "<root>/poll-state.json: every item's poll ledger, before it moved under sessions/",
            "the poll section of each portable/<slug>.json",
        ),
        LEGACY_SESSION_RECORD: (
            "<root>/sessions/<slug>.json: a session record of an older release",
            "local/<slug>.json",
        ),
        LEGACY_TREE: (
            "<root>/sessions/: the legacy tree, holding nothing the-loop reads",
            "portable/ and local/",
        ),
        PULL_REQUEST_RECORD: (
            "portable/<pr slug>.json with a poll section: a pull request's own ledger, "
            "written before PR ledgers moved into their owner's record",
            "pullRequests.<pr ref> of the owner's portable/<slug>.json",
        ),
        GRAPH_SECTION: (
            "the graph section of portable/<slug>.json: choices frozen by an older release",
            "sessionPerPr, model and effort in docs/specs/<id>/work-item-state.json",
        ),
        GRAPH_STATE_FILE: (
            "docs/specs/<id>/graph-state.json in a checkout: the old repository file",
            "docs/specs/<id>/work-item-state.json beside it (its session block: local/<slug>.json)",
        ),
    }
)

#: Bounds of the scan for checkouts under the workspace root.
MAX_SCAN_DEPTH = 5
MAX_SCANNED_DIRECTORIES = 10_000
MAX_SPEC_DIRECTORIES = 1_000
#: Hidden directories of the workspace root that hold checkouts (``dispatch/workspace.py``).
_WORKSPACE_HIDDEN = (".worktrees", ".work-items")


@dataclass(frozen=True)
class RetiredLocation:
    """One retired location: its kind, path, the work item it concerns, whether it is read."""

    kind: str
    path: str
    read: bool
    detail: str = ""
    ref: str = ""

    @property
    def replaced_by(self) -> str:
        return RETIRED_KINDS[self.kind][1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "workItem": self.ref or None,
            "read": self.read,
            "replacedBy": self.replaced_by,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class UpgradeReport:
    """Every retired location found, and the checkouts that were scanned for them."""

    locations: tuple[RetiredLocation, ...] = ()
    checkouts: tuple[str, ...] = ()
    #: Directories the scan needed and could not read: while any, it is not clean.
    unscanned: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Nothing retired is left, as far as every place could be looked at."""
        return not self.locations and not self.unscanned

    @property
    def still_read(self) -> tuple[RetiredLocation, ...]:
        return tuple(location for location in self.locations if location.read)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "retired": [location.to_dict() for location in self.locations],
            "checkouts": list(self.checkouts),
            "unscanned": list(self.unscanned),
        }


def find_retired(
    *,
    layout: StateLayout,
    registry: SessionRegistry,
    store: WorkItemStore,
    checkouts: Iterable[Path] = (),
) -> UpgradeReport:
    """Every retired location under ``layout``'s root, in its portable records and in
    ``checkouts``; reads only."""
    unscanned: list[str] = []
    found = [
        *_legacy_tree(layout, store, unscanned),
        *_pull_request_records(registry, store),
        *_graph_sections(registry, store),
    ]
    scanned = _unique_directories(checkouts)
    for checkout in scanned:
        found.extend(_graph_state_files(checkout, unscanned))
    return UpgradeReport(tuple(found), tuple(str(path) for path in scanned), tuple(unscanned))


def default_checkouts(
    registry: SessionRegistry,
    workspace_root: Path | None,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> list[Path]:
    """The cwd of every session endpoint on this machine, then every checkout under
    ``workspace_root`` (a bounded walk that never enters a checkout)."""
    found = [
        Path(endpoint.cwd)
        for record in registry.list_sessions()
        for endpoint in record.endpoints()
        if endpoint.cwd
    ]
    if workspace_root is not None:
        found.extend(workspace_checkouts(workspace_root, on_warning=on_warning))
    return _unique_directories(found)


def workspace_checkouts(
    root: Path,
    *,
    max_depth: int = MAX_SCAN_DEPTH,
    limit: int = MAX_SCANNED_DIRECTORIES,
    on_warning: Callable[[str], None] | None = None,
) -> list[Path]:
    """Directories under ``root`` holding ``.git``, at most ``max_depth`` levels down.

    Never follows symlinks, never enters a checkout or an unrelated hidden directory,
    and stops (with a warning) after ``limit`` directories.
    """
    found: list[Path] = []
    level, visited = [root], 0
    for _depth in range(max_depth + 1):
        below: list[Path] = []
        for directory in level:
            visited += 1
            if visited > limit:
                or_ignore_warnings(on_warning)(
                    f"stopped looking for checkouts under {root} after {limit} dirs"
                )
                return found
            if directory != root and os.path.lexists(directory / ".git"):
                found.append(directory)
                continue
            below.extend(_subdirectories(directory, top=directory == root))
        level = below
    return found


# -- the legacy sessions/ tree ---------------------------------------------------


def _legacy_tree(
    layout: StateLayout, store: WorkItemStore, unscanned: list[str]
) -> list[RetiredLocation]:
    legacy = LegacyLayout(layout.root)
    tree = legacy.sessions_dir
    newer_refs = _poll_refs(legacy.poll_state)
    older = _legacy_poll_state(legacy.older_poll_state, OLDER_POLL_STATE, store, newer_refs)
    if not tree.is_dir() or _same_directory(tree, layout.local_dir, layout.portable_dir):
        return older
    found = [*_legacy_controls(legacy, store, unscanned)]
    found += _legacy_poll_state(legacy.poll_state, LEGACY_POLL_STATE, store, set())
    found += [
        RetiredLocation(LEGACY_SESSION_RECORD, str(path), False, "no longer read")
        for path in _record_files(tree, unscanned)
    ]
    if not found:
        found.append(RetiredLocation(LEGACY_TREE, str(tree), False, "no longer read"))
    return found + older


def _legacy_controls(
    legacy: LegacyLayout, store: WorkItemStore, unscanned: list[str]
) -> list[RetiredLocation]:
    found: list[RetiredLocation] = []
    for path in _record_files(legacy.control_dir, unscanned):
        status, data, _ = read_object(path)
        document = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        item = parse_ref(document.get("ref", document.get("workItem")))
        if status != "ok" or item is None:
            found.append(RetiredLocation(LEGACY_CONTROL, str(path), False, "names no work item"))
            continue
        named = is_named_for(path.name, item)
        read = named and _falls_back(store, item, CONTROL)
        found.append(RetiredLocation(LEGACY_CONTROL, str(path), read, _fallback(read), item.ref))
    return found


def _poll_refs(path: Path) -> list[WorkItemRef | None]:
    """The refs a legacy poll-state file holds ledgers for (None: a key that is no ref)."""
    status, data, _ = read_object(path)
    items = (
        cast(dict[str, Any], data).get("items")
        if status == "ok" and isinstance(data, dict)
        else None
    )
    return (
        [parse_ref(key) for key in cast(dict[str, Any], items)] if isinstance(items, dict) else []
    )


def _legacy_poll_state(
    path: Path, kind: str, store: WorkItemStore, shadowed: Iterable[WorkItemRef | None]
) -> list[RetiredLocation]:
    """One legacy poll-state file; an item ``shadowed`` by a newer file never reads it."""
    if read_object(path)[0] == "absent":
        return []
    hidden = {item for item in shadowed if item is not None}
    valid = [item for item in _poll_refs(path) if item is not None]
    still = [item.ref for item in valid if item not in hidden and _falls_back(store, item, POLL)]
    if still:
        detail = f"read as a fallback for {len(still)} of {len(valid)} items: {', '.join(still)}"
    else:
        detail = f"no longer read: all {len(valid)} items have a poll section or are sealed"
    return [RetiredLocation(kind, str(path), bool(still), detail)]


def _falls_back(store: WorkItemStore, item: WorkItemRef, section: str) -> bool:
    """Whether reading ``section`` of ``item`` still falls back to the legacy tree."""
    if store.record_status(item) == "unreadable":
        return False
    record = store.read(item)
    return section not in record and record.get(SEALED) is not True


def _fallback(read: bool) -> str:
    return "read as a fallback until its section is written" if read else "no longer read"


# -- portable records ------------------------------------------------------------


def _pull_request_records(registry: SessionRegistry, store: WorkItemStore) -> list[RetiredLocation]:
    """Records of pull requests that have an owner (the poll ledger's own resolution)."""
    own_records = set(registry.refs())
    owners: dict[str, str] = {}
    for summary in store.summaries():
        for pr in summary.pull_requests:
            owners.setdefault(pr, summary.ref)
    for record in registry.list_sessions():
        for endpoint in record.pull_requests:
            owners[endpoint.ref] = record.ref
    found: list[RetiredLocation] = []
    for ref, path in store.refs().items():
        owner = owners.get(ref)
        if owner is None or owner == ref or ref in own_records:
            continue
        if isinstance(store.read(ref).get(POLL), dict):
            detail = f"its poll ledger is no longer read: {ref} belongs to {owner}"
            found.append(RetiredLocation(PULL_REQUEST_RECORD, str(path), False, detail, ref))
    return found


def _graph_sections(registry: SessionRegistry, store: WorkItemStore) -> list[RetiredLocation]:
    found: list[RetiredLocation] = []
    paths = store.refs()
    for summary in store.summaries():
        if GRAPH not in summary.sections:
            continue
        item = WorkItemRef.parse(summary.ref)
        frozen = graph_section_choices(store.section(item, GRAPH))
        from_file = _repository_choices(registry, item)
        supplied = [
            key for key, value in frozen.to_dict().items() if value and not from_file.to_dict()[key]
        ]
        read = bool(supplied)
        detail = f"still supplies {', '.join(supplied)}" if read else "no longer read"
        path = str(paths.get(summary.ref, store.path_for(item)))
        found.append(RetiredLocation(GRAPH_SECTION, path, read, detail, summary.ref))
    return found


def _repository_choices(registry: SessionRegistry, item: WorkItemRef) -> FrozenChoices:
    """The choices the repository file in the item's checkout sets (none when unknown)."""
    record = registry.find_by_work_item(item, include_closed=True)
    if record is None or not record.cwd:
        return FrozenChoices()
    try:
        return WorkItemStateFile(Path(record.cwd), item).frozen_choices() or FrozenChoices()
    except (TheLoopError, OSError, ValueError):
        return FrozenChoices()


# -- checkouts -------------------------------------------------------------------


def _graph_state_files(checkout: Path, unscanned: list[str]) -> list[RetiredLocation]:
    found: list[RetiredLocation] = []
    specs = checkout / SPECS_DIR
    for spec in _subdirectories(specs, top=False, limit=MAX_SPEC_DIRECTORIES, unscanned=unscanned):
        legacy = spec / LEGACY_STATE_FILE
        status, data, problem = read_object(legacy)
        if status == "absent":
            continue
        read = not os.path.lexists(spec / STATE_FILE)
        notes = ["read until work-item-state.json is written" if read else "no longer read"]
        if status != "ok":
            notes.append(problem)
        elif isinstance(data, dict) and "session" in data:
            notes.append("its session block is ignored")
        item = (
            parse_ref(cast(dict[str, Any], data).get("workItem"))
            if isinstance(data, dict)
            else None
        )
        ref = item.ref if item is not None else ""
        found.append(RetiredLocation(GRAPH_STATE_FILE, str(legacy), read, "; ".join(notes), ref))
    return found


def _subdirectories(
    directory: Path, *, top: bool, limit: int | None = None, unscanned: list[str] | None = None
) -> list[Path]:
    """Real (not symlinked) subdirectories, sorted; hidden ones only where checkouts live.

    A directory that is there but cannot be listed is added to ``unscanned`` when given."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as error:
        _note_unscanned(directory, error, unscanned)
        return []
    found: list[Path] = []
    for entry in entries:
        hidden = entry.name.startswith(".")
        if hidden and not (top and entry.name in _WORKSPACE_HIDDEN):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                found.append(Path(entry.path))
        except OSError:
            continue
        if limit is not None and len(found) >= limit:
            break
    return found


def _record_files(directory: Path, unscanned: list[str]) -> list[Path]:
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        _note_unscanned(directory, error, unscanned)
        return []
    return [
        directory / name
        for name in names
        if is_record_file_name(name) and not is_temp_name(name) and (directory / name).is_file()
    ]


def _note_unscanned(directory: Path, error: OSError, unscanned: list[str] | None) -> None:
    """Add ``directory`` to ``unscanned`` unless ``error`` says it is simply not there."""
    if unscanned is not None and not isinstance(error, FileNotFoundError | NotADirectoryError):
        unscanned.append(f"{directory}: {describe_error(error)}")


def _unique_directories(paths: Iterable[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for path in paths:
        absolute = Path(os.path.abspath(path))
        if absolute.is_dir():
            seen.setdefault(os.path.realpath(absolute), absolute)
    return list(seen.values())


def _same_directory(tree: Path, *others: Path) -> bool:
    real = os.path.realpath(tree)
    return any(os.path.realpath(other) == real for other in others)
