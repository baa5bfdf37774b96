"""How each registry write changes a whole session record.

Pure functions of the record as read under the record lock: each returns the
record to write, or None to leave the file as it is. The registry does the
locking, reading and writing (:meth:`SessionRegistry._change`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from the_loop.ref import WorkItemRef
from the_loop.sessions.session import ACTIVE, CLOSED, Session

#: A change: the record as read -> the record to write, or None for "no change".
Change = Callable[[Session], "Session | None"]


def registered(session: Session, existing: Session | None, now: str) -> Session:
    """``session`` as a whole record, keeping ``existing``'s PR endpoints and cursors."""
    record = replace(
        session,
        created_at=session.created_at or now,
        last_event_at=session.last_event_at or now,
        pull_requests=(),
        channels={**(existing.channels if existing else {}), **session.channels},
    )
    for endpoint in (*(existing.pull_requests if existing else ()), *session.pull_requests):
        if endpoint.work_item != record.work_item:
            record = record.with_endpoint(endpoint)
    return record


def switched(record: Session, old: str, new: str, now: str) -> Session | None:
    """Every endpoint in status ``old`` moved to ``new`` and stamped ``now`` (its last
    event), when the item's own one is ``old``."""
    if record.status != old:
        return None
    moved = [
        replace(item, status=new, last_event_at=now)
        for item in record.endpoints()
        if item.status == old
    ]
    for endpoint in moved:
        record = record.with_endpoint(endpoint)
    return record


def closed_all(record: Session, now: str) -> Session | None:
    """Every live endpoint closed and stamped ``now`` (its last event); None when none was
    live."""
    closed = [
        replace(item, status=CLOSED, last_event_at=now)
        for item in record.endpoints()
        if item.is_live
    ]
    for endpoint in closed:
        record = record.with_endpoint(endpoint)
    return record if closed else None


def closed_one(record: Session, ref: WorkItemRef) -> Session | None:
    """The endpoint of ``ref`` closed; None when it is missing or not live."""
    endpoint = record.endpoint_for(ref)
    if endpoint is None or not endpoint.is_live:
        return None
    return record.with_endpoint(replace(endpoint, status=CLOSED))


def linked(record: Session, pr: WorkItemRef, now: str) -> Session | None:
    """An empty endpoint for ``pr`` added (in the record's checkout); None when it is there."""
    if record.owns(pr):
        return None
    endpoint = Session(pr, "", "", cwd=record.cwd, status=ACTIVE, created_at=now)
    return record.with_endpoint(endpoint)


def touched(target: WorkItemRef, delivery_id: str | None, now: str, bound: int) -> Change:
    """The change that stamps ``target``'s endpoint with ``now`` and remembers ``delivery_id``
    among its last ``bound`` deliveries; the status is never changed."""

    def change(record: Session) -> Session | None:
        endpoint = record.endpoint_for(target)
        if endpoint is None:
            return None
        recent = endpoint.recent_deliveries
        if delivery_id is not None and delivery_id not in recent:
            recent = (*recent, delivery_id)[-bound:] if bound > 0 else ()
        return record.with_endpoint(replace(endpoint, last_event_at=now, recent_deliveries=recent))

    return change


def cursor_moved(
    channel: str, thread: str, cursor: str, *, accept: Callable[[str], bool] | None
) -> Change:
    """The change that sets one channel cursor, when ``accept(current)`` holds (or always)."""

    def change(record: Session) -> Session | None:
        channels = copy.deepcopy(dict(record.channels))
        entry = channels.get(channel)
        entry = cast(dict[str, Any], entry) if isinstance(entry, dict) else {}
        cursors = entry.get("cursors")
        cursors = cast(dict[str, Any], cursors) if isinstance(cursors, dict) else {}
        current = cursors.get(thread)
        if accept is not None and not accept(current if isinstance(current, str) else ""):
            return None
        channels[channel] = {**entry, "cursors": {**cursors, thread: cursor}}
        return replace(record, channels=channels)

    return change
