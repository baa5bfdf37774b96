"""Reading the spec lane's record in an item's ledger (``spec``): its parts as plain
values, whatever a damaged or older ledger holds (a part of the wrong type reads as none)."""

from __future__ import annotations

from typing import Any, cast

from the_loop.portable.poll import Ledger


def record_of(ledger: Ledger, key: str) -> dict[str, Any]:
    """A copy of the record under ``key`` (empty when there is none, or it is no object)."""
    value = ledger.get(key)
    return dict(cast(dict[str, Any], value)) if isinstance(value, dict) else {}


def listed(record: dict[str, Any], name: str) -> list[Any]:
    """A copy of the list under ``name`` (empty when there is none, or it is no list)."""
    value = record.get(name)
    return list(cast(list[Any], value)) if isinstance(value, list) else []


def field_of(value: object, name: str) -> str | None:
    """An entry's field ``name`` as text (None: the entry is no object)."""
    return str(cast(dict[str, Any], value).get(name)) if isinstance(value, dict) else None
