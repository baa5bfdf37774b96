"""The board's reads: every work item this machine knows, joined and nested, and what
needs a person, from the records, the claim book, the poller's status and a bounded tail
of the event log (:mod:`~the_loop.api.work_items`, :mod:`~the_loop.api.needs`).

The records are kept as last parsed (:class:`~the_loop.api.file_cache.FileCache`) and
the whole board with its encoded list and tag: while neither directory changed and no
pending paste crossed its age, a read is two ``stat`` calls.
"""

from __future__ import annotations

import json
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from the_loop.api.answer import document_of_rows, etag_of
from the_loop.api.file_cache import FileCache
from the_loop.api.needs import (
    TAIL_BYTES,
    Need,
    dying,
    item_needs,
    ordered,
    pending_deadline,
    root_needs,
)
from the_loop.api.process_nodes import nodes_stamp
from the_loop.api.work_items import Item, pull_request_refs, work_item
from the_loop.commands.common import Context
from the_loop.fsio import read_bytes
from the_loop.portable.format import LoadedRecord, load_record
from the_loop.records.directory import is_named_for
from the_loop.ref import WorkItemRef
from the_loop.sessions.record_file import RecordRead, read_record_file
from the_loop.sessions.session import Session


@dataclass(frozen=True)
class Board:
    """Every item (its needs' kinds in ``attention``), the needs the records say, the
    unfiltered list's encoded document and its tag, and until when they stand (a pending
    paste's age)."""

    items: list[Item]
    needs: list[Need]
    body: bytes
    etag: str
    valid_until: float


class Views:
    """The reads of one state root (``context``); ``holders`` says which items other
    machines hold (ref to holder)."""

    def __init__(
        self,
        context: Context,
        holders: Callable[[], Mapping[str, Mapping[str, Any]]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.context = context
        self._holders = holders
        self._clock = clock
        layout = context.layout
        self._portable = FileCache[LoadedRecord](layout.portable_dir, load_record)
        self._sessions = FileCache[RecordRead](layout.local_dir, read_record_file)
        self._board: Board | None = None
        self._built: dict[str, _Built] = {}
        #: The repository files the board shows nodes of, and their stats then: a change
        #: of one is a change of the board (a file made since waits for a record's change).
        self._spec_files: list[tuple[tuple[str, WorkItemRef], object]] = []
        self._config_key: tuple[int, int, int] | None = None
        self._config_problems: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def board(self) -> Board:
        """The board as the files say now (the one built last while nothing changed)."""
        with self._lock:
            held, now = self._board, self._clock()
            if (
                held is not None
                and now < held.valid_until
                and self._portable.unchanged()
                and self._sessions.unchanged()
                and all(nodes_stamp(*where)[0] == stamp for where, stamp in self._spec_files)
            ):
                return held
            try:
                self._board = self._build(now)
            except BaseException:
                # Nothing built is trusted: the next read lists and builds everything.
                self._board, self._built = None, {}
                self._portable.forget()
                self._sessions.forget()
                raise
            return self._board

    def needs(self) -> list[Need]:
        """Every need, oldest first: the board's and the log tail's (an agent that keeps
        dying)."""
        board, now = self.board(), self._clock()
        live = [item["ref"] for item in board.items if _live(item)]
        found = [*_aged(board.needs, now), *dying(self.tail(), live, now=now)]
        # The poller's back-offs end with time, not with a change of a file: read now.
        found += root_needs(self._poll_status(), now=now)
        return ordered([*found, *self._config_needs(now)])

    def _config_needs(self, now: float) -> list[Need]:
        """The config file's problems as ``config check`` finds them (checked again only
        when the file changed): what the daemons started now would refuse."""
        from the_loop.config.file import check_file

        path = self.context.config.source
        if path is None:
            return []
        try:
            info = os.stat(path)
        except OSError:
            return [_config_need(f"the config file {path} is gone", None, now)]
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        with self._lock:
            if self._config_key != key:
                self._config_problems = tuple(check_file(path).problems)
                self._config_key = key
            problems = self._config_problems
        return [_config_need(problem, info.st_mtime, now) for problem in problems]

    def _build(self, now: float) -> Board:
        """The board from the records as they are now; an item whose record, session
        record and holder are as last time (and whose pending paste kept its age) is
        the one built then, so a change costs the items it touched."""
        portable = {
            loaded.item.ref: (key, loaded.record)
            for name, (key, loaded) in self._portable.keyed().items()
            if loaded.status == "ok" and loaded.item is not None and is_named_for(name, loaded.item)
        }
        sessions: dict[str, tuple[tuple[int, int, int], Session]] = {}
        for key, read in self._sessions.keyed().values():
            if read.status == "ok" and read.record is not None:
                sessions.setdefault(read.record.ref, (key, read.record))
        holders = self._holders()
        nested: set[str] = set()
        for ref in {*portable, *sessions}:
            record = portable.get(ref)
            session = sessions.get(ref)
            nested |= pull_request_refs(
                record[1] if record else {}, session[1] if session else None
            )
        built: dict[str, _Built] = {}
        ci_budget = int(self.context.config.get_float("polling.ci.maxFailingPushes"))
        for ref in sorted({*portable, *sessions, *holders} - nested):
            record, session, holder = portable.get(ref), sessions.get(ref), holders.get(ref)
            stamp, read_nodes = (
                nodes_stamp(session[1].cwd, session[1].work_item) if session else (None, list)
            )
            key = (
                record[0] if record else None,
                session[0] if session else None,
                repr(holder),
                stamp,
                ci_budget,
            )
            held = self._built.get(ref)
            if (
                held is None
                or held.key != key
                or (held.deadline is not None and now >= held.deadline)
            ):
                sections = record[1] if record else {}
                try:
                    held = _built(ref, key, sections, session, holder, now, read_nodes, ci_budget)
                except (ValueError, TypeError, KeyError, OverflowError, AttributeError) as error:
                    held = _unreadable(ref, key, error)
            built[ref] = held
        self._built = built
        self._spec_files = [
            ((sessions[ref][1].cwd, sessions[ref][1].work_item), each.key[3])
            for ref, each in built.items()
            if each.key[3] is not None and ref in sessions
        ]
        needs = [need for each in built.values() for need in each.needs]
        deadlines = [each.deadline for each in built.values() if each.deadline is not None]
        body = document_of_rows("api work-items", [each.row for each in built.values()])
        items = [each.item for each in built.values()]
        return Board(items, needs, body, etag_of(body), min(deadlines, default=math.inf))

    def tail(self) -> bytes:
        """The last :data:`TAIL_BYTES` of the event log (its first, cut line is skipped by
        the reader); empty when it cannot be read."""
        path = self.context.layout.event_log
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return b""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return b""  # a FIFO or a device in its place: nothing to read
            return os.pread(fd, TAIL_BYTES, max(0, info.st_size - TAIL_BYTES))
        except OSError:
            return b""
        finally:
            os.close(fd)

    def _poll_status(self) -> object:
        raw = read_bytes(self.context.layout.local_dir / "poll-status.json")
        try:
            return json.loads(raw) if raw is not None else None
        except ValueError:
            return None


@dataclass(frozen=True)
class _Built:
    """One item as built: the stats and holder it was built from, the item, its needs,
    its encoded row, and when a pending paste of it comes of age (None: none)."""

    key: tuple[object, ...]
    item: Item
    needs: list[Need]
    row: bytes
    deadline: float | None


def _built(
    ref: str,
    key: tuple[object, ...],
    sections: Mapping[str, Any],
    session: tuple[object, Session] | None,
    holder: Mapping[str, Any] | None,
    now: float,
    read_nodes: Callable[[], list[Any]],
    ci_budget: int,
) -> _Built:
    item = work_item(ref, sections, session[1] if session else None, holder, ci_budget=ci_budget)
    item["nodes"] = read_nodes()
    found = item_needs(item, sections, now=now)
    item["attention"] = sorted({need["kind"] for need in found})
    deadline = pending_deadline(sections)
    row = json.dumps(item, ensure_ascii=False).encode("utf-8")
    return _Built(
        key, item, found, row, deadline if deadline is not None and deadline > now else None
    )


def _unreadable(ref: str, key: tuple[object, ...], error: Exception) -> _Built:
    """An item whose record holds what the board cannot show: listed with what it knows
    (its ref) and a need that says so, never the whole board lost for it."""
    item: Item = {"ref": ref, "url": None, "title": None, "repository": None, "session": None}
    item |= {"control": None, "claim": None, "pullRequests": [], "deliveries": None}
    item |= {"spend": None, "budget": None, "lastActivity": None, "nodes": []}
    detail = f"its record holds what the board cannot read ({type(error).__name__}: {error})"
    need = {"ref": ref, "kind": "unreadable", "detail": detail, "since": None}
    need["ageSeconds"] = None
    item["attention"] = ["unreadable"]
    return _Built(key, item, [need], json.dumps(item, ensure_ascii=False).encode(), None)


def _config_need(problem: str, since: float | None, now: float) -> Need:
    at = datetime.fromtimestamp(since, UTC) if since is not None else None
    return {
        "ref": None,
        "kind": "config",
        "detail": problem,
        "since": at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None,
        "ageSeconds": round(max(0.0, now - since), 1) if since is not None else None,
    }


def _aged(needs: list[Need], now: float) -> list[Need]:
    """``needs`` with their ages as of ``now`` (the board's were taken when it was built)."""
    aged: list[Need] = []
    for need in needs:
        since = need.get("since")
        if isinstance(since, str):
            try:
                at = datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
            except ValueError:
                at = None
            if at is not None:
                need = {**need, "ageSeconds": round(max(0.0, now - at), 1)}
        aged.append(need)
    return aged


def _live(item: Item) -> bool:
    session: object = item.get("session")
    return isinstance(session, dict) and cast(dict[str, Any], session).get("status") in (
        "active",
        "paused",
    )


__all__ = ["Board", "Views"]
