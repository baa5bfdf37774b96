"""The daemons of a state root: the lock each holds for its whole life, and which run.

A daemon's exclusion is the ``flock`` on its file under ``locks/daemons/``
(:class:`DaemonLock`), with its pid beside it; its pidfile at the root (``poll.pid``,
``gh-webhook.pid``) is still written and locked for older releases and other tools, but
removing it opens no window for a second daemon. ``os.kill(pid, 0)`` sends no signal;
``PermissionError`` means the process exists under another user, which counts as running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from the_loop.errors import TheLoopError
from the_loop.fsio import (
    LockHeld,
    StrangerFile,
    lock_is_held,
    locked,
    make_directory,
    open_regular,
    read_bytes,
    read_regular,
    remove_file,
    write_text,
)
from the_loop.layout import StateLayout

#: How a daemon was found running: it holds its lock (or, an older release, its
#: pidfile's), or its pidfile names a live process that holds no lock (another program's).
Evidence = Literal["lock", "pid"]


@dataclass(frozen=True)
class RunningDaemon:
    """A daemon found running, how (``evidence``), and the file that told (``path``: the
    lock it holds, or the pidfile naming it). ``pid`` is -1 while a lock's pid is unwritten."""

    name: str
    pid: int
    path: Path
    evidence: Evidence = "pid"


@dataclass(frozen=True)
class DaemonFiles:
    """One daemon's files: ``lock`` (its exclusion, under ``locks/daemons/``), the pid
    beside it (:attr:`pid`), and the ``pidfile`` at the root kept for older tools."""

    name: str
    lock: Path
    pidfile: Path

    @property
    def pid(self) -> Path:
        return self.lock.with_suffix(".pid")


def poller_files(layout: StateLayout) -> DaemonFiles:
    """The poller's: ``locks/daemons/poll.lock`` and ``poll.pid`` (``poll.pidfile``)."""
    return DaemonFiles("poller", layout.poll_lock, layout.poll_pidfile)


def receiver_files(layout: StateLayout) -> DaemonFiles:
    """The webhook receiver's: ``locks/daemons/webhook.lock`` and ``gh-webhook.pid``."""
    return DaemonFiles("webhook receiver", layout.webhook_lock, layout.pidfile)


def server_files(layout: StateLayout) -> DaemonFiles:
    """The API server's: ``locks/daemons/serve.lock`` and ``local/serve.pid``."""
    return DaemonFiles("API server", layout.serve_lock, layout.serve_pidfile)


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
    """The webhook receiver, the poller and the API server of ``layout``'s root when one
    holds its lock (:func:`holding_daemon`), or else when its pidfile names a live process
    (``evidence`` says which)."""
    found: list[RunningDaemon] = []
    for files in (receiver_files(layout), poller_files(layout), server_files(layout)):
        held = holding_daemon(files)
        if held is not None:
            found.append(held)
            continue
        pid = read_pid(files.pidfile)
        if pid is not None and pid_is_running(pid):
            found.append(RunningDaemon(files.name, pid, files.pidfile))
    return found


def holding_daemon(files: DaemonFiles) -> RunningDaemon | None:
    """The daemon holding ``files.lock`` (its pid read from beside it), else an older
    release's holding the pidfile's lock; None when neither lock is held, whatever the
    pidfile says."""
    if lock_is_held(files.lock):
        pid = read_pid(files.pid)
        return RunningDaemon(files.name, -1 if pid is None else pid, files.lock, "lock")
    pid = lock_holder(files.pidfile)
    return None if pid is None else RunningDaemon(files.name, pid, files.pidfile, "lock")


def daemon_pid(files: DaemonFiles) -> int | None:
    """The pid of :func:`holding_daemon` (-1 while unwritten), or None when none runs."""
    held = holding_daemon(files)
    return None if held is None else held.pid


class DaemonLock:
    """A daemon's hold on its state root from :meth:`acquire` to :meth:`release`: the
    ``flock`` on ``files.lock`` (the exclusion), its pid written beside it, and the
    pidfile taken too (:class:`PidfileLock`) for older releases and other tools.

    :meth:`acquire` raises :class:`TheLoopError` (exit 1) naming the holder when another
    daemon holds the lock or, an older release, the pidfile; and naming a file that is
    not a regular file. Nothing but the holder's own release frees the lock.
    """

    def __init__(self, files: DaemonFiles) -> None:
        self.files = files
        self.pidfile = PidfileLock(files.pidfile, daemon=files.name)
        self._held = contextlib.ExitStack()

    def acquire(self) -> None:
        self._take()
        try:
            self._write_pid()
            self.pidfile.acquire()
        except BaseException:
            self._let_go()
            raise

    def check(self) -> bool:
        """Write back what was removed under the daemon: its pid beside the lock, and the
        pidfile (True when the pidfile was taken again; see :meth:`PidfileLock.check`)."""
        if read_pid(self.files.pid) != os.getpid():
            self._write_pid()
        return self.pidfile.check()

    def release(self) -> None:
        self.pidfile.release()
        self._let_go()

    def _take(self) -> None:
        name, lock = self.files.name, self.files.lock
        for attempt in range(_TAKE_ATTEMPTS):
            try:
                self._held.enter_context(locked(lock, wait=False))
                return
            except LockHeld:
                if attempt + 1 < _TAKE_ATTEMPTS:  # a status probe holds it for an instant
                    time.sleep(_TAKE_PAUSE_SECONDS)
            except StrangerFile as error:
                raise TheLoopError(f"{error.strerror}: remove it to run the {name}") from None
            except OSError as error:
                raise TheLoopError(f"cannot lock {lock}: {error.strerror or error}") from None
        pid = read_pid(self.files.pid)
        shown = pid if pid is not None else "?"
        raise TheLoopError(f"another {name} holds {lock} (pid {shown})")

    def _write_pid(self) -> None:
        try:
            write_text(self.files.pid, f"{os.getpid()}\n")
        except OSError as error:
            problem = error.strerror or error
            raise TheLoopError(f"cannot write {self.files.pid}: {problem}") from None

    def _let_go(self) -> None:
        if read_pid(self.files.pid) == os.getpid():
            with contextlib.suppress(OSError):
                remove_file(self.files.pid)
        self._held.close()


#: How many times a lock found held is tried again, and the pause between: a reader's
#: probe (:func:`the_loop.fsio.lock_is_held`) holds it for an instant; a daemon for good.
_TAKE_ATTEMPTS = 3
_TAKE_PAUSE_SECONDS = 0.05


class PidfileLock:
    """The exclusive ``flock`` on a daemon's pidfile (``<root>/poll.pid`` for the poller,
    ``<root>/gh-webhook.pid`` for the webhook receiver); the pid is written after it is taken.
    Older releases excluded by it alone; now :class:`DaemonLock` takes it for them.

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
    """The pid of the process holding a :class:`PidfileLock` on ``path`` (-1 when it wrote
    none); None when nobody does.

    Decided by the lock, not by ``kill -0`` on a pid that may have been reused.
    """
    if not lock_is_held(path):
        return None
    pid = read_pid(path)
    return pid if pid is not None else -1


#: The poller's name for :func:`lock_holder`.
poller_holder = lock_holder


def stop_holder(files: DaemonFiles, *, timeout: float) -> int | None:
    """SIGTERM the daemon holding ``files``' lock (:func:`holding_daemon`) and wait until
    neither lock is held: its pid, or None when none runs. A lock whose pid is not
    written yet is refused (``os.kill(-1)`` would signal every process of the user);
    ``TheLoopError`` too when it is still held after ``timeout`` seconds."""
    held = holding_daemon(files)
    if held is None:
        return None
    name, pid, path = files.name, held.pid, held.path
    if pid <= 0:
        raise TheLoopError(f"a {name} holds {path} but its pid is not written there yet; try again")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while holding_daemon(files) is not None:
        if time.monotonic() > deadline:
            raise TheLoopError(f"the {name} (pid {pid}) still holds {path} after the timeout")
        time.sleep(0.1)
    return pid
