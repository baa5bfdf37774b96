"""Pastes that are not one comment: a pull request's review, a check that failed, the
continue after a usage limit.

Each has a key of its own (``review-<id>``, ``ci-…``, ``limit-…``: a
:data:`~the_loop.intake.ledger.DeliveryKey`) and goes into the delivery rows of the
work item whose session owns it, after the comments already waiting there (a continue:
before them), through
the same ``pending`` → paste and mark → ``delivered`` steps (:mod:`drain`). A key is
queued at most once: a row of it, or its place among the ``seenPastes`` of the owner's
ledger (what was settled without a paste, such as what first sight found), says it
is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from the_loop.intake.ports import IntakePorts
from the_loop.portable.poll import DELIVERIES, Ledger
from the_loop.ref import WorkItemRef

#: The owner ledger's list of paste keys settled without a paste.
SEEN_PASTES = "seenPastes"
#: The states of a row no attempt has begun for.
_WAITING = ("waiting", "held")


def known_pastes(ports: IntakePorts, owner: WorkItemRef) -> frozenset[str]:
    """Every paste key the owner's ledger holds: a row, or settled without one."""
    rows = {str(row.get("id")) for row in ports.ledger.deliveries(owner)}
    seen = ports.ledger.store.section(owner, "poll")
    return frozenset(rows | set(_settled(seen if isinstance(seen, dict) else {})))


def queue_paste(
    ports: IntakePorts,
    owner: WorkItemRef,
    key: str,
    text: str,
    *,
    by: str,
    held: bool,
    extra: Mapping[str, Any] | None = None,
    first: bool = False,
) -> bool:
    """Add ``key``'s row (``held`` while the session is paused, else ``waiting``; with
    ``extra``'s members, such as the inline comments a review holds) to the owner's
    deliveries, after them all (``first``: before the first that waits); False, and
    nothing written, when the key is already known."""
    queued: list[bool] = []

    def change(ledger: Ledger) -> None:
        if add_row(ledger, key, text, by=by, held=held, extra=extra, first=first):
            queued.append(True)

    ports.ledger.change(owner, change)
    return bool(queued)


def add_row(
    ledger: Ledger,
    key: str,
    text: str,
    *,
    by: str,
    held: bool = False,
    extra: Mapping[str, Any] | None = None,
    first: bool = False,
) -> bool:
    """:func:`queue_paste`'s change of a ledger already being written (so a caller adds
    the row in the same write as its own change); False when the key is known."""
    rows = ledger.get(DELIVERIES)
    present = cast(list[Any], rows) if isinstance(rows, list) else []
    ids = {str(cast(dict[str, Any], r).get("id")) for r in present if isinstance(r, dict)}
    if key in ids or key in _settled(ledger):
        return False
    row: dict[str, Any] = {
        **(extra or {}),
        "id": key,
        "state": "held" if held else "waiting",
        "attempts": 0,
        "by": by,
        "text": text,
    }
    place = len(present)
    if first:
        waits = (i for i, r in enumerate(present) if _waits(r))
        place = next(waits, place)
    ledger[DELIVERIES] = [*present[:place], row, *present[place:]]
    return True


def settle_pastes(ports: IntakePorts, owner: WorkItemRef, keys: list[str]) -> None:
    """Record ``keys`` as known without a paste (first sight's baseline, an outdated
    comment): they are never queued after."""
    if not keys:
        return

    def change(ledger: Ledger) -> None:
        present = _settled(ledger)
        ledger[SEEN_PASTES] = present + [k for k in keys if k not in present]

    ports.ledger.change(owner, change)


def _waits(row: Any) -> bool:
    """Whether a stored row waits for its first paste (not one in flight, nor done)."""
    return isinstance(row, dict) and cast(dict[str, Any], row).get("state") in _WAITING


def _settled(ledger: Ledger) -> list[str]:
    settled = ledger.get(SEEN_PASTES)
    return [str(k) for k in cast(list[Any], settled)] if isinstance(settled, list) else []
