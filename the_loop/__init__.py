"""the-loop: turn work items into coding-agent sessions, with honest durable state."""

from __future__ import annotations

__version__ = "0.1.0"
