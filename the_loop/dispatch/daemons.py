"""Which daemons of a state root are running, by pidfile liveness.

``os.kill(pid, 0)`` sends no signal; ``PermissionError`` means the process
exists under another user, which counts as running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from the_loop.fsio import read_bytes, read_regular
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


#: Larger than any pid a kernel hands out (Linux caps them at 2**22).
MAX_PID = 2**31 - 1


def read_pid(pidfile: Path) -> int | None:
    """The pid in ``pidfile``, or None when it is missing or does not hold one.

    Read without blocking or following a link (a FIFO is None, never a hang); only
    ASCII digits up to :data:`MAX_PID` are a pid.
    """
    data = read_bytes(pidfile)
    return None if data is None else _parse_pid(data)


def _parse_pid(data: bytes) -> int | None:
    words = data.split()
    first = words[0] if words else b""
    if not (first.isdigit() and len(first) <= len(str(MAX_PID))):
        return None  # bytes.isdigit is ASCII-only: "²" is not a pid
    pid = int(first)
    return pid if 0 < pid <= MAX_PID else None


def pidfile_problems(layout: StateLayout) -> list[str]:
    """One sentence per pidfile of ``layout`` that is there but cannot tell a pid.

    A FIFO, a link or a directory is named as what it is; a regular file whose content
    is not a pid says so. A missing pidfile is no problem (the daemon is not running).
    """
    problems: list[str] = []
    for _name, pidfile in _pidfiles(layout):
        status, data, problem = read_regular(pidfile)
        if status in ("stranger", "unreadable"):
            problems.append(f"{pidfile}: {problem}")
        elif status == "ok" and data.strip() and _parse_pid(data) is None:
            problems.append(f"{pidfile} does not hold a process id")
    return problems


def _pidfiles(layout: StateLayout) -> tuple[tuple[str, Path], ...]:
    return (("gh-webhook receiver", layout.pidfile), ("poller", layout.poll_pidfile))


def running_daemons(layout: StateLayout) -> list[RunningDaemon]:
    """The webhook receiver and the poller of ``layout``'s root, when their pid is live."""
    found: list[RunningDaemon] = []
    for name, pidfile in _pidfiles(layout):
        pid = read_pid(pidfile)
        if pid is not None and pid_is_running(pid):
            found.append(RunningDaemon(name, pid, pidfile))
    return found
