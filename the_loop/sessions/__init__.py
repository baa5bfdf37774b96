"""Work-item refs and the session registry (the machine file store).

The registry names load on first use, so importing a ref stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from the_loop.sessions.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.sessions.registry import RegistryError, SessionRegistry
    from the_loop.sessions.session import Session

__all__ = ["RegistryError", "Session", "SessionRegistry", "WorkItemRef"]

_LAZY = {
    "RegistryError": "the_loop.sessions.registry",
    "SessionRegistry": "the_loop.sessions.registry",
    "Session": "the_loop.sessions.session",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
