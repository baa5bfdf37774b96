"""Which daemons of a state root are running, by pidfile liveness.

``os.kill(pid, 0)`` sends no signal; ``PermissionError`` means the process
exists under another user, which counts as running.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from the_loop.errors import TheLoopError
from the_loop.fsio import StrangerFile, make_directory, open_regular, read_bytes, read_regular
from the_loop.layout import StateLayout

#: How a daemon was found running: it holds its pidfile's lock, or its pidfile names a
#: live process that does not hold the lock (an older release's, or another program's).
Evidence = Literal["lock", "pid"]


@dataclass(frozen=True)
class RunningDaemon:
    """A daemon found running, and how (``evidence``)."""

    name: str
    pid: int
    pidfile: Path
    evidence: Evidence = "pid"


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
    return (("webhook receiver", layout.pidfile), ("poller", layout.poll_pidfile))


def running_daemons(layout: StateLayout) -> list[RunningDaemon]:
    """The webhook receiver and the poller of ``layout``'s root when a process holds the
    lock on their pidfile, or else when the pidfile names a live process (``evidence``
    says which)."""
    found: list[RunningDaemon] = []
    for name, pidfile in _pidfiles(layout):
        held = lock_holder(pidfile)
        if held is not None:
            found.append(RunningDaemon(name, held, pidfile, "lock"))
            continue
        pid = read_pid(pidfile)
        if pid is not None and pid_is_running(pid):
            found.append(RunningDaemon(name, pid, pidfile))
    return found


class PollerLock:
    """The exclusive ``flock`` on a daemon's pidfile (``<root>/poll.pid`` for the poller,
    ``<root>/gh-webhook.pid`` for the webhook receiver); the pid is written after it is taken.

    :meth:`acquire` raises :class:`TheLoopError` (exit 1) naming the holder when another
    ``daemon`` has it, and naming the file and what it is when it is not a regular file. The
    pidfile is written in place, never replaced: the lock lives on its inode, so it is
    held only while the path still names that inode (:meth:`check`).
    """

    def __init__(self, path: Path, *, daemon: str = "poller") -> None:
        self.path = path
        self.daemon = daemon
        self._fd: int | None = None

    def acquire(self) -> None:
        make_directory(self.path.parent)
        for _attempt in range(_LOCK_ATTEMPTS):
            fd = self._locked_descriptor()
            if _names(self.path, fd):
                break
            os.close(fd)  # removed or replaced between the open and the lock: again
        else:
            raise TheLoopError(f"{self.path} kept changing while it was being locked")
        _write_pid(fd)
        self._fd = fd

    def check(self) -> bool:
        """Whether the lock still holds the path; when the pidfile was removed or replaced
        by a file nobody locks, it is taken again (True: it was restored). Raises
        :class:`TheLoopError` when another daemon holds the path now."""
        if self._fd is None or _names(self.path, self._fd):
            return False
        try:
            fd = self._locked_descriptor()
        except TheLoopError as error:
            raise TheLoopError(
                f"{self.path} was replaced under this {self.daemon}: {error}"
            ) from None
        if not _names(self.path, fd):
            os.close(fd)
            raise TheLoopError(f"{self.path} kept changing while it was being locked")
        _write_pid(fd)
        os.close(self._fd)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            if _names(self.path, self._fd):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    def _locked_descriptor(self) -> int:
        """The pidfile, opened (created when absent) and locked exclusively."""
        try:
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT)
        except StrangerFile as error:
            raise TheLoopError(f"{error.strerror}: remove it to run the {self.daemon}") from None
        except OSError as error:
            raise TheLoopError(f"cannot open {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = read_pid(self.path)
            raise TheLoopError(
                f"another {self.daemon} holds {self.path} (pid {pid if pid is not None else '?'})"
            ) from None
        except OSError as error:
            os.close(fd)
            raise TheLoopError(f"cannot lock {self.path}: {error.strerror or error}") from None
        return fd


#: How many times a pidfile that changes between its open and its lock is tried again.
_LOCK_ATTEMPTS = 5


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` (not followed) is the file open as ``fd``."""
    try:
        there = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    os.fsync(fd)


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding a daemon's lock on ``path``; None when nobody does.

    Decided by the lock, not by ``kill -0`` on a pid that may have been reused.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = read_pid(path)
        return pid if pid is not None else -1
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


#: The poller's name for :func:`lock_holder`.
poller_holder = lock_holder


def stop_holder(path: Path, *, name: str, timeout: float) -> int | None:
    """SIGTERM the process holding the lock on ``path`` and wait until the lock is free:
    its pid, or None when nobody holds it. A lock whose file names no pid yet is refused
    (``os.kill(-1)`` would signal every process of the user); ``TheLoopError`` too when
    the lock is still held after ``timeout`` seconds."""
    pid = lock_holder(path)
    if pid is None:
        return None
    if pid <= 0:
        raise TheLoopError(f"a {name} holds {path} but its pid is not written there yet; try again")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while lock_holder(path) is not None:
        if time.monotonic() > deadline:
            raise TheLoopError(f"the {name} (pid {pid}) still holds {path} after the timeout")
        time.sleep(0.1)
    return pid
