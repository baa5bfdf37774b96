"""The poller's state: the poll ledger store (the poller daemon comes in a later issue)."""

from __future__ import annotations

from the_loop.poller.state import OwnerLookup, PollState

__all__ = ["OwnerLookup", "PollState"]
