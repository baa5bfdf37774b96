"""The session registry: the machine file store ``local/<slug>.json``.

One record per work item holds the handles of every session for it on this
machine (the item's own and one per pull request). Every change is a locked
read-modify-write through :class:`~the_loop.records.directory.RecordDirectory`; a record
whose stored ref is another ref is never read, changed or removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Literal, cast

from the_loop.errors import EXIT_USAGE, TheLoopError, or_ignore_warnings
from the_loop.eventlog.log import EventLog, or_no_events, utc_timestamp
from the_loop.fsio import DirectorySyncs, locked, remove_file, write_json
from the_loop.records.directory import RecordDirectory, is_named_for, name_rank
from the_loop.ref import WorkItemRef, as_ref, ref_order
from the_loop.sessions import changes
from the_loop.sessions.record_file import RecordRead, read_record_file
from the_loop.sessions.session import (
    ACTIVE,
    PAUSED,
    Session,
    record_to_json,
)

__all__ = ["RecordStatus", "RegistryError", "Session", "SessionRegistry"]

DEFAULT_MAX_RECENT_DELIVERIES = 20
#: The subdirectory of the record locks that holds one spawn lock per work item.
SPAWN_LOCKS = "spawn"

RecordStatus = Literal["absent", "ok", "unreadable"]


class RegistryError(TheLoopError):
    """A refused registration (a second live session without ``force``): exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_USAGE)


def _stored_ref(read: RecordRead) -> str | None:
    return read.stored


class SessionRegistry:
    """Session records under ``root`` (``local/``), locked under ``locks_dir``.

    ``locks_dir`` defaults as :class:`~the_loop.records.directory.RecordDirectory` lays it out
    (``StateLayout.local_locks_dir``). Events go to ``events`` when given;
    warnings about unreadable files go to ``on_warning``.
    """

    def __init__(
        self,
        root: Path,
        *,
        locks_dir: Path | None = None,
        events: EventLog | None = None,
        on_warning: Callable[[str], None] | None = None,
        max_recent_deliveries: int = DEFAULT_MAX_RECENT_DELIVERIES,
    ) -> None:
        self.root = Path(root)
        self._directory = RecordDirectory(self.root, locks_dir)
        self.locks_dir = self._directory.locks_dir
        self._events = or_no_events(events)
        self._warn = or_ignore_warnings(on_warning)
        self._max_recent = max_recent_deliveries

    # -- reading -------------------------------------------------------------

    def path_for(self, ref: WorkItemRef | str) -> Path:
        """The file that holds (or would hold) ``ref``'s record."""
        return self._directory.path(self._locate(as_ref(ref))[0])

    def record_status(self, ref: WorkItemRef | str) -> RecordStatus:
        """``ok``, ``unreadable`` (a file of ours that cannot be read) or ``absent``."""
        status = self._locate(as_ref(ref))[1].status
        return "absent" if status == "foreign" else status

    def load(self, ref: WorkItemRef | str) -> tuple[RecordStatus, Session | None]:
        """``(record_status(ref), its whole record or None)`` from one read; never warns."""
        found = self._locate(as_ref(ref))[1]
        return ("absent" if found.status == "foreign" else found.status), found.record

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """A block in which each record file is listed and read at most once.

        For read-only phases; see :meth:`~the_loop.records.directory.RecordDirectory.snapshot`.
        """
        return self._directory.snapshot()

    def find_by_work_item(
        self, ref: WorkItemRef | str, include_closed: bool = False
    ) -> Session | None:
        """The whole record of ``ref`` (own endpoint + ``pull_requests``) when live (or any)."""
        name, found = self._locate(as_ref(ref))
        if found.status == "unreadable":
            path = self._directory.path(name)
            self._warn(f"ignoring unreadable session record {path}: {found.problem}")
        record = found.record
        if record is None or not (include_closed or record.is_live):
            return None
        return record

    def list_sessions(self, status: str | None = None) -> list[Session]:
        """Every readable record, sorted by ref, optionally of one status; never raises."""
        records = [record for _, record in self._records(warn=True)]
        if status is not None:
            records = [record for record in records if record.status == status]
        return sorted(records, key=lambda record: ref_order(record.work_item))

    def refs(self) -> dict[str, Path]:
        """Ref -> file of every readable record (one read per file)."""
        path = self._directory.path
        return {record.ref: path(name) for name, record in self._records(warn=False)}

    def record_names(self) -> list[str]:
        """The file name of every record, sorted, from one listing (no record is read)."""
        return self._directory.record_names()

    def records_named(self, names: Iterable[str]) -> list[Session]:
        """The readable records of the files ``names`` (as :meth:`record_names` gives them),
        one read each; a file that holds another item's record is skipped."""
        found: list[Session] = []
        for name in names:
            record = self._directory.load(name, read_record_file).record
            if record is not None and is_named_for(name, record.work_item):
                found.append(record)
        return found

    def work_items(self) -> set[str]:
        """The ref of every readable record, as :meth:`refs` has them (no paths built)."""
        return {record.ref for _name, record in self._records(warn=False)}

    def unreadable_refs(self) -> set[str]:
        """Refs of records that cannot be read but store a ref their file name matches."""
        found: set[str] = set()
        for name in self._directory.record_names():
            read = self._directory.load(name, read_record_file)
            if read.status != "unreadable" or read.stored is None:
                continue
            stored = WorkItemRef.parse(read.stored)
            if is_named_for(name, stored):
                found.add(stored.ref)
        return found

    def record_owning(self, ref: WorkItemRef | str) -> Session | None:
        """The record whose sessions map holds ``ref``: the item's own, else a PR owner's."""
        wanted = as_ref(ref)
        own = self._locate(wanted)[1].record
        if own is not None:
            return own
        return next(
            (record for _, record in self._records(warn=False) if record.owns(wanted)), None
        )

    def session_for(self, ref: WorkItemRef | str, session_per_pr: bool = True) -> Session | None:
        """The endpoint that should handle an event for ``ref``, or None.

        The item's own endpoint; for a pull request, its own endpoint when
        ``session_per_pr`` and it has a live session of its own, else its owner's.
        """
        wanted = as_ref(ref)
        record = self.record_owning(wanted)
        if record is None or record.work_item == wanted:
            return record
        endpoint = record.endpoint_for(wanted)
        has_own = endpoint is not None and (endpoint.harness_session_id or endpoint.tmux_target)
        if session_per_pr and endpoint is not None and has_own and endpoint.is_live:
            return endpoint
        return record

    def channel_cursors(self, ref: WorkItemRef | str, channel: str) -> dict[str, str]:
        """Thread -> cursor of ``channel`` in ``ref``'s record (empty when none)."""
        record = self._locate(as_ref(ref))[1].record
        entry: object = record.channels.get(channel) if record is not None else None
        if not isinstance(entry, dict):
            return {}
        cursors = cast(dict[str, object], entry).get("cursors")
        if not isinstance(cursors, dict):
            return {}
        items = cast(dict[object, object], cursors).items()
        return {
            key: value for key, value in items if isinstance(key, str) and isinstance(value, str)
        }

    # -- writing -------------------------------------------------------------

    def register(self, session: Session, force: bool = False) -> Session:
        """Write ``session`` as its item's record; refuse a second live one unless ``force``.

        Checked and written under one lock. Keeps the existing record's PR
        endpoints and channel cursors; fills ``created_at``/``last_event_at``.
        Raises :class:`RegistryError`; ``OSError`` propagates.
        """
        ref = session.work_item
        with self._directory.lock(ref):
            name, found = self._locate(ref)
            path = self._directory.path(name)
            if found.status == "foreign":
                raise TheLoopError(f"{path} holds the record of another work item")
            if found.stranger:
                raise TheLoopError(
                    f"{path} is not a regular file: it is someone else's, left alone"
                )
            existing = found.record
            if existing is not None and existing.is_live and not force:
                raise RegistryError(
                    f"{ref.ref} already has a live {existing.harness} session "
                    f"{existing.harness_session_id or existing.tmux_target} ({existing.status}); "
                    "use --force to replace it"
                )
            if found.status == "unreadable":
                self._warn(f"replacing unreadable session record {path}: {found.problem}")
            record = changes.registered(session, existing, utc_timestamp())
            write_json(path, record_to_json(record))
        self._events.emit(
            "session.registered",
            work_item=ref.ref,
            harness=record.harness,
            session_id=record.harness_session_id,
            forced=force,
        )
        return record

    def pause(self, ref: WorkItemRef | str) -> Session | None:
        """Pause an active session (and its active PR endpoints); None when nothing changed."""
        paused = partial(changes.switched, old=ACTIVE, new=PAUSED, now=utc_timestamp())
        record = self._change(as_ref(ref), paused)[1]
        if record is not None:
            self._events.emit("session.paused", work_item=record.ref)
        return record

    def resume(self, ref: WorkItemRef | str) -> Session | None:
        """Resume a paused session (and its paused PR endpoints); None when nothing changed."""
        resumed = partial(changes.switched, old=PAUSED, new=ACTIVE, now=utc_timestamp())
        record = self._change(as_ref(ref), resumed)[1]
        if record is not None:
            self._events.emit("session.resumed", work_item=record.ref)
        return record

    def close(self, ref: WorkItemRef | str, reason: str = "") -> bool:
        """Close the item's endpoint and every PR endpoint; True when something live closed."""
        closed = partial(changes.closed_all, now=utc_timestamp())
        record = self._change(as_ref(ref), closed)[1]
        if record is None:
            return False
        self._events.emit("session.closed", work_item=record.ref, reason=reason)
        return True

    def forget(
        self,
        ref: WorkItemRef | str,
        *,
        syncs: DirectorySyncs | None = None,
        only_if_not_live: bool = False,
    ) -> bool:
        """Delete ``ref``'s record file (readable or not); False when there was none.

        With ``only_if_not_live``, a record that is live when the lock is taken (a
        session registered since the caller looked) is kept: ``RegistryError``.
        Never removes another ref's file; ``OSError`` propagates.
        """
        wanted = as_ref(ref)
        with self._directory.lock(wanted):
            name, found = self._locate(wanted)
            if found.status not in ("ok", "unreadable"):
                return False
            if only_if_not_live and found.record is not None and found.record.is_live:
                raise RegistryError(
                    f"{wanted.ref}: a live session was registered meanwhile; its record is kept"
                )
            return remove_file(self._directory.path(name), syncs=syncs)

    def link_pull_request(self, owner: WorkItemRef | str, pr: WorkItemRef | str) -> Session | None:
        """Add ``pr``'s endpoint (empty handles) to ``owner``'s record; idempotent.

        None when the owner has no record; ``ValueError`` for a self-link.
        """
        owner_ref, pr_ref = as_ref(owner), as_ref(pr)
        if owner_ref == pr_ref:
            raise ValueError(f"{pr_ref.ref} cannot be linked to itself")
        before, after = self._change(
            owner_ref, lambda record: changes.linked(record, pr_ref, utc_timestamp())
        )
        if after is not None:
            self._events.emit("session.pr_linked", work_item=owner_ref.ref, pull_request=pr_ref.ref)
        return after or before

    def save_endpoint(self, owner: WorkItemRef | str, endpoint: Session) -> Session | None:
        """Store ``endpoint``'s handles under its ref in ``owner``'s record; None without one."""
        before, after = self._change(as_ref(owner), lambda record: record.with_endpoint(endpoint))
        return after or before

    def close_endpoint(self, owner: WorkItemRef | str, pr: WorkItemRef | str) -> bool:
        """Close one live endpoint of ``owner``'s record; True when it was live."""
        pr_ref = as_ref(pr)
        after = self._change(as_ref(owner), lambda record: changes.closed_one(record, pr_ref))[1]
        return after is not None

    def touch(
        self,
        ref: WorkItemRef | str,
        delivery_id: str | None = None,
        endpoint_ref: WorkItemRef | str | None = None,
    ) -> Session | None:
        """Set an endpoint's ``lastEventAt`` and remember ``delivery_id``; never changes status.

        The endpoint is ``endpoint_ref`` (default: the item's own). None when the
        record or the endpoint does not exist.
        """
        target = as_ref(endpoint_ref if endpoint_ref is not None else ref)
        touched = changes.touched(target, delivery_id, utc_timestamp(), self._max_recent)
        before, after = self._change(as_ref(ref), touched)
        return after or (before if before is not None and before.owns(target) else None)

    def advance_channel_cursor(
        self,
        ref: WorkItemRef | str,
        channel: str,
        thread: str,
        cursor: str,
        *,
        accept: Callable[[str], bool],
    ) -> bool:
        """Move ``thread``'s cursor to ``cursor`` when ``accept(current)`` holds, under the lock.

        ``current`` is the stored cursor (``""`` when none). True when it was written.
        """
        moved = changes.cursor_moved(channel, thread, cursor, accept=accept)
        return self._change(as_ref(ref), moved)[1] is not None

    def spawn_lock(self, ref: WorkItemRef | str) -> contextlib.AbstractContextManager[None]:
        """The lock that serialises starting (or restarting) ``ref``'s session on this machine.

        Held from the check that no session runs to the registered record; taken before any
        record lock, never inside one. Refs that share a slug share it.
        """
        return locked(self.locks_dir / SPAWN_LOCKS / f"{as_ref(ref).slug}.lock")

    # -- internals -----------------------------------------------------------

    def _locate(self, ref: WorkItemRef) -> tuple[str, RecordRead]:
        """The name of the file for ``ref`` and what it holds (reading each candidate once)."""
        name, found = self._directory.locate(
            ref, read_record_file, _stored_ref, lambda read: read.stranger
        )
        if found.stored is not None and found.stored != ref.ref:
            return name, RecordRead("foreign", stored=found.stored)
        return name, found

    def _change(
        self, ref: WorkItemRef, change: changes.Change
    ) -> tuple[Session | None, Session | None]:
        """Locked read -> ``change`` -> write. Returns (record before, record written or None)."""
        with self._directory.lock(ref):
            name, found = self._locate(ref)
            before = found.record
            if before is None:
                return None, None
            after = change(before)
            if after is None or after == before:
                return before, None
            write_json(self._directory.path(name), record_to_json(after))
            return before, after

    def _records(self, *, warn: bool) -> Iterator[tuple[str, Session]]:
        """(file name, record) of every readable record file whose name matches its stored
        ref, one per ref (the file :meth:`_locate` finds); one read each."""
        chosen: dict[str, tuple[str, Session]] = {}
        for name, record in self._named_records(warn=warn):
            held = chosen.get(record.ref)
            ref = record.work_item
            if held is None or name_rank(name, ref) < name_rank(held[0], ref):
                chosen[record.ref] = (name, record)
            if held is not None and warn:
                kept, left = sorted((held[0], name), key=lambda other: name_rank(other, ref))
                self._warn(
                    f"{self._directory.path(left)} holds {record.ref} too "
                    f"(an older spelling); {kept} is used, the other left alone"
                )
        yield from chosen.values()

    def _named_records(self, *, warn: bool) -> Iterator[tuple[str, Session]]:
        """(file name, record) of every readable record file whose name matches its ref."""
        for name in self._directory.record_names():
            found = self._directory.load(name, read_record_file)
            record = found.record
            if record is None:
                if warn and found.status == "unreadable":
                    path = self._directory.path(name)
                    self._warn(f"skipping unreadable session record {path}: {found.problem}")
                continue
            if not is_named_for(name, record.work_item):
                if warn:
                    path = self._directory.path(name)
                    self._warn(f"skipping {path}: it holds the record of {record.ref}")
                continue
            yield name, record
