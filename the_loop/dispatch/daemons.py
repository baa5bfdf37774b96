"""Which daemons of a state root are running, by pidfile liveness.

``os.kill(pid, 0)`` sends no signal; ``PermissionError`` means the process
exists under another user, which counts as running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from the_loop.layout import StateLayout


@dataclass(frozen=True)
class RunningDaemon:
    """A daemon whose pidfile names a live process."""

    name: str
    pid: int
    pidfile: Path


def pid_is_running(pid: int) -> bool:
    """True when a process with ``pid`` exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def read_pid(pidfile: Path) -> int | None:
    """The pid in ``pidfile``, or None when it is missing or does not hold one."""
    try:
        text = pidfile.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    first = text.split()[0] if text else ""
    return int(first) if first.isdigit() else None


def running_daemons(layout: StateLayout) -> list[RunningDaemon]:
    """The webhook receiver and the poller of ``layout``'s root, when their pid is live."""
    found: list[RunningDaemon] = []
    for name, pidfile in (("gh-webhook receiver", layout.pidfile), ("poller", layout.poll_pidfile)):
        pid = read_pid(pidfile)
        if pid is not None and pid_is_running(pid):
            found.append(RunningDaemon(name, pid, pidfile))
    return found
