"""What the receiver has done since it started, and ``local/webhook-status.json`` that says so.

The receiver counts every request's outcome in a :class:`Tally` and writes its
:meth:`Tally.snapshot` atomically when it starts, at most once a second while the counts
change, and when it stops; ``webhook status`` reads it with :func:`read_status`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from the_loop.eventlog.log import utc_timestamp
from the_loop.fsio import read_object
from the_loop.webhook.settings import url_of

STATUS_NAME = "webhook-status.json"
STATUS_VERSION = 1
#: The outcomes counted, as the status file names them.
COUNTED = ("accepted", "duplicate", "rejected", "ignored", "ping")


def status_path(local_dir: Path) -> Path:
    return local_dir / STATUS_NAME


@dataclass
class Tally:
    """The counts of one run of the receiver; safe to update from many threads."""

    pid: int
    host: str
    port: int
    path: str
    insecure: bool
    started_at: str = field(default_factory=utc_timestamp)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    last_delivery_at: str | None = None
    _dirty: bool = field(default=True, init=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False)

    def count(self, outcome: str, *, now: float | None = None) -> None:
        """One more request of ``outcome``; a signed delivery also sets the last one's time."""
        with self._guard:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
            if outcome != "rejected":
                self.last_delivery_at = utc_timestamp(time.time() if now is None else now)
            self._dirty = True

    def take_dirty(self) -> bool:
        """Whether a count changed since the last call."""
        with self._guard:
            dirty, self._dirty = self._dirty, False
        return dirty

    def snapshot(self, *, stopped_at: str | None = None) -> dict[str, Any]:
        """The status file's content."""
        with self._guard:
            return {
                "version": STATUS_VERSION,
                "pid": self.pid,
                "host": self.host,
                "port": self.port,
                "path": self.path,
                "url": url_of(self.host, self.port, self.path),
                "insecure": self.insecure,
                "startedAt": self.started_at,
                **self.counts,
                "lastDeliveryAt": self.last_delivery_at,
                "updatedAt": utc_timestamp(),
                "stoppedAt": stopped_at,
            }


def read_status(path: Path) -> dict[str, Any] | None:
    """The last status a receiver wrote at ``path``; None when there is none to read."""
    status, document, _problem = read_object(path)
    if status != "ok" or not isinstance(document, dict):
        return None
    return document  # pyright: ignore[reportUnknownVariableType]
