"""The machine store (``local/``): ``Session`` and ``SessionRegistry``.

``WorkItemRef`` lives in :mod:`the_loop.ref`; it is re-exported here for one release.
"""

from __future__ import annotations

from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import RegistryError, SessionRegistry
from the_loop.sessions.session import Session

__all__ = ["RegistryError", "Session", "SessionRegistry", "WorkItemRef"]
