"""Moved: the poll ledger store is in the_loop.portable.poll."""

from __future__ import annotations

from the_loop.portable.poll import (
    OwnerLookup,
    PollState,
)

__all__ = [
    "OwnerLookup",
    "PollState",
]
