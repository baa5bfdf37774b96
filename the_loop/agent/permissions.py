"""A permission prompt told apart from every other: the hook that asked it still open, and
its identity (its request's time, tool and detail, or its text's digest)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any


def open_request(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``PermissionRequest`` still open: the latest event but notifications, when it
    is one (a tool that ran, a turn that ended or began closes it)."""
    for event in reversed(events):
        name = event.get("event")
        if name == "Notification":
            continue
        return event if name == "PermissionRequest" else None
    return None


def request_episode(request: dict[str, Any]) -> str:
    """One permission prompt's identity: its request's time, tool and detail."""
    return f"permission@{_time(request)}:" + dialog_digest(permission_text(request))


def dialog_digest(text: str) -> str:
    """A short digest of ``text`` with the option pointer, digits and blanks left out, so
    a redraw (the pointer moved, a counter ticked) reads as the same dialog."""
    kept = "".join(c for c in text if not c.isdigit() and c not in "❯›>").split()
    return hashlib.sha256(" ".join(kept).encode()).hexdigest()[:16]


def permission_text(event: dict[str, Any]) -> str:
    tool, detail = str(event.get("tool", "")), str(event.get("detail", ""))
    return f"{tool}: {detail}" if detail else tool


def _time(event: dict[str, Any]) -> float:
    value = event.get("t")
    return float(value) if isinstance(value, int | float) else 0.0
