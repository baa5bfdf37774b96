"""The poll ledger: which ticket comments were seen, and how often a spawn was tried.

A work item's own ledger is its portable record's ``poll`` section; a pull
request's is ``pullRequests[<pr ref>]`` of the work item it delivers. Every write
is an immediate locked read-modify-write that re-reads the ledger from disk and
applies only its own change, so a ledger cleared meanwhile (by a reset) is never
written back from memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, cast

from the_loop.portable.store import CONTROL, POLL, WorkItemStore, WriteResult
from the_loop.ref import WorkItemRef, as_ref

Ledger = dict[str, Any]
SEEN_COMMENTS = "seenComments"
COMMENT_ATTEMPTS = "commentAttempts"
SPAWN = "spawn"
DELIVERIES = "deliveries"
LAST_POLLED_AT = "lastPolledAt"
#: ``closed`` or ``merged`` once the poller closed the item's session (or a linked PR's
#: endpoint) for it; removed when the item is seen open again.
CLOSED_STATE = "state"


class OwnedRecord(Protocol):
    """What an owner lookup returns: the record's work item."""

    @property
    def work_item(self) -> WorkItemRef: ...


class OwnerLookup(Protocol):
    """Finds the session record that holds an endpoint for a ref (the session registry)."""

    def record_owning(self, ref: WorkItemRef, /) -> OwnedRecord | None: ...


def empty_ledger() -> Ledger:
    """A ledger that has seen nothing."""
    return {SEEN_COMMENTS: [], COMMENT_ATTEMPTS: {}}


def _ledger(current: Ledger | None) -> Ledger:
    """``current`` with its two lists/maps present and well-typed (a fresh object)."""
    ledger = dict(current or {})
    seen = ledger.get(SEEN_COMMENTS)
    attempts = ledger.get(COMMENT_ATTEMPTS)
    ledger[SEEN_COMMENTS] = (
        [str(i) for i in cast(list[Any], seen)] if isinstance(seen, list) else []
    )
    ledger[COMMENT_ATTEMPTS] = (
        dict(cast(dict[str, Any], attempts)) if isinstance(attempts, dict) else {}
    )
    return ledger


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class PollState:
    """The poll ledgers of work items and their pull requests, in the portable store.

    Which ledger a ref uses: the owner given to :meth:`own`; otherwise, resolved
    before each use, the registry's record owning it, then ``store.owner_of``,
    then the ref itself (a work item of its own).
    """

    def __init__(self, store: WorkItemStore, *, registry: OwnerLookup | None = None) -> None:
        self.store = store
        self._registry = registry
        self._owners: dict[str, WorkItemRef] = {}
        #: The store's pull requests to their owners, read once (its first need).
        self._store_owners: dict[str, str] | None = None

    def own(self, ref: WorkItemRef | str, owner: WorkItemRef | str = "") -> None:
        """Record that ``ref``'s ledger lives with ``owner`` (empty or equal: its own ``poll``).

        A pull request's empty ledger is created in the owner's map when absent, so
        :meth:`WorkItemStore.owner_of` finds it from any process.
        """
        item = as_ref(ref)
        owner_ref = as_ref(owner) if owner else item
        self._owners[item.ref] = owner_ref
        if owner_ref != item and self.store.pull_request_ledger(owner_ref, item) is None:
            self.store.update_pull_request_ledger(
                owner_ref, item, lambda ledger: ledger if ledger is not None else empty_ledger()
            )

    # -- reading -------------------------------------------------------------

    def is_known(self, ref: WorkItemRef | str) -> bool:
        """Whether a ledger exists for ``ref`` (False: first sight)."""
        return self._read(as_ref(ref)) is not None

    def seen_comments(self, ref: WorkItemRef | str) -> list[str]:
        """The ids of the comments already handled, in the order they were seen."""
        return _ledger(self._read(as_ref(ref)))[SEEN_COMMENTS]

    def comment_attempts(self, ref: WorkItemRef | str, comment_id: str) -> int:
        """How often handling ``comment_id`` was attempted without resolving it."""
        return _count(_ledger(self._read(as_ref(ref)))[COMMENT_ATTEMPTS].get(comment_id))

    # -- writing -------------------------------------------------------------

    def baseline_comments(
        self, ref: WorkItemRef | str, ids: Iterable[str], polled_at: str = ""
    ) -> None:
        """Mark ``ids`` as seen (attempts dropped).

        ``polled_at`` is accepted and ignored: clocks live in ``local/``, so the tracked
        ledger changes only when a comment does (an old ``lastPolledAt`` is dropped).
        """
        del polled_at
        new_ids = [str(i) for i in ids]

        def change(ledger: Ledger) -> None:
            seen: list[str] = ledger[SEEN_COMMENTS]
            known = set(seen)
            for comment_id in new_ids:
                if comment_id not in known:
                    seen.append(comment_id)
                    known.add(comment_id)
            for comment_id in new_ids:
                ledger[COMMENT_ATTEMPTS].pop(comment_id, None)
            ledger.pop(LAST_POLLED_AT, None)

        self._update(as_ref(ref), change)

    def note_comment_attempt(self, ref: WorkItemRef | str, comment_id: str) -> int:
        """Count one more attempt at ``comment_id``; returns the new count."""
        counted: list[int] = []

        def change(ledger: Ledger) -> None:
            attempts = ledger[COMMENT_ATTEMPTS]
            attempts[comment_id] = _count(attempts.get(comment_id)) + 1
            counted.append(attempts[comment_id])

        self._update(as_ref(ref), change)
        return counted[-1]

    def resolve_comment(self, ref: WorkItemRef | str, comment_id: str) -> None:
        """Mark ``comment_id`` as seen and drop its attempt count."""

        def change(ledger: Ledger) -> None:
            if comment_id not in ledger[SEEN_COMMENTS]:
                ledger[SEEN_COMMENTS].append(comment_id)
            ledger[COMMENT_ATTEMPTS].pop(comment_id, None)

        self._update(as_ref(ref), change)

    def record_answer(self, ref: WorkItemRef | str, comment_id: str) -> bool:
        """Mark the answer ``comment_id`` seen, in one locked write; False (nothing written)
        when it was seen already: an answer is sent at most once, crash or not."""
        fresh: list[bool] = []

        def change(ledger: Ledger) -> None:
            if comment_id in ledger[SEEN_COMMENTS]:
                return
            ledger[SEEN_COMMENTS].append(comment_id)
            ledger[COMMENT_ATTEMPTS].pop(comment_id, None)
            fresh.append(True)

        self._update(as_ref(ref), change)
        return bool(fresh)

    def note_spawn_attempt(
        self, ref: WorkItemRef | str, delivery_id: str = "", gave_up: bool = False
    ) -> None:
        """Count one more spawn attempt (for ``delivery_id``); ``gave_up`` ends the retries."""

        def change(ledger: Ledger) -> None:
            spawn = ledger.get(SPAWN)
            previous = cast(dict[str, Any], spawn) if isinstance(spawn, dict) else {}
            ledger[SPAWN] = {
                "attempts": _count(previous.get("attempts")) + 1,
                "gaveUp": gave_up,
                "deliveryId": delivery_id,
            }

        self._update(as_ref(ref), change)

    def deliveries(self, ref: WorkItemRef | str) -> list[dict[str, Any]]:
        """The item's delivery entries (``id``, ``state``, ``attempts``, ``text``, ``at``)."""
        entries = _ledger(self._read(as_ref(ref))).get(DELIVERIES)
        if not isinstance(entries, list):
            return []
        rows = cast(list[Any], entries)
        return [dict(cast(dict[str, Any], e)) for e in rows if isinstance(e, dict)]

    def value(self, ref: WorkItemRef | str, key: str) -> Any:
        """The ledger's value at ``key`` (None when it has none)."""
        return _ledger(self._read(as_ref(ref))).get(key)

    def change(self, ref: WorkItemRef | str, change: Callable[[Ledger], None]) -> None:
        """One locked read-modify-write of ``ref``'s ledger (its lists well-typed first)."""
        self._update(as_ref(ref), change)

    def record_command(
        self, ref: WorkItemRef | str, comment_id: str, control: dict[str, Any]
    ) -> bool:
        """Mark ``comment_id`` seen and store ``control`` in one locked write of the record.

        False (and nothing written) when the comment was already seen: a command runs at
        most once, even across a crash between this write and the action.
        """
        item = as_ref(ref)
        if self._owner(item) != item:
            if comment_id in self.seen_comments(item):
                return False
            self.resolve_comment(item, comment_id)
            self.store.write_section(item, CONTROL, control)
            return True
        fresh: list[bool] = []

        def compute(current: dict[str, Any]) -> dict[str, Any]:
            ledger = _ledger(current.get(POLL))
            if comment_id in ledger[SEEN_COMMENTS]:
                return {}
            ledger[SEEN_COMMENTS].append(comment_id)
            ledger[COMMENT_ATTEMPTS].pop(comment_id, None)
            fresh.append(True)
            return {POLL: ledger, CONTROL: control}

        self.store.update_sections(item, (POLL, CONTROL), compute)
        return bool(fresh)

    def forget(self, ref: WorkItemRef | str) -> WriteResult:
        """Remove ``ref``'s ledger now (a PR's leaves its owner's map) via the seal rule."""
        item = as_ref(ref)
        owner = self._owner(item)
        if owner == item:
            return self.store.write_section(item, POLL, None)
        return self.store.write_pull_request_ledger(owner, item, None)

    def flush(self, ref: WorkItemRef | str) -> None:
        """Writes nothing: every change is already on disk (kept for API compatibility)."""

    def save(self) -> None:
        """Writes nothing: every change is already on disk (kept for API compatibility)."""

    # -- internals -----------------------------------------------------------

    def owner_of(self, ref: WorkItemRef | str) -> WorkItemRef:
        """The work item whose record holds ``ref``'s ledger: a linked pull request's
        owner, else ``ref`` itself."""
        return self._owner(as_ref(ref))

    def _owner(self, item: WorkItemRef) -> WorkItemRef:
        known = self._owners.get(item.ref)
        if known is not None:
            return known
        record = self._registry.record_owning(item) if self._registry is not None else None
        if record is not None:
            return record.work_item
        if self._store_owners is None:
            self._store_owners = self.store.pull_request_owners()
        owner = self._store_owners.get(item.ref)
        return WorkItemRef.parse(owner) if owner is not None else item

    def _read(self, item: WorkItemRef) -> Ledger | None:
        owner = self._owner(item)
        if owner == item:
            return self.store.section(item, POLL)
        return self.store.pull_request_ledger(owner, item)

    def _update(self, item: WorkItemRef, change: Callable[[Ledger], None]) -> None:
        def apply(current: Ledger | None) -> Ledger:
            ledger = _ledger(current)
            change(ledger)
            return ledger

        owner = self._owner(item)
        if owner == item:
            self.store.update_section(item, POLL, apply)
        else:
            self.store.update_pull_request_ledger(owner, item, apply)
