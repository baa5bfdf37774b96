"""Work-item refs and the session registry (the machine file store)."""

from __future__ import annotations

from the_loop.sessions.ref import WorkItemRef

__all__ = ["WorkItemRef"]
