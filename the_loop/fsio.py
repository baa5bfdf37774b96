"""The one atomic JSON write and the one lock, used by every store.

``write_json`` replaces a file so that a crash leaves the old content or the
new, never half of either, and the change is durable when it returns (unless
the caller defers the directory sync to a :class:`DirectorySyncs` batch).
``locked`` serialises read-modify-write cycles across processes with
``fcntl.flock`` on a lock file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"


def is_temp_name(name: str) -> bool:
    """True for the temporary names :func:`write_json` uses (never a record)."""
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_directory(directory: Path) -> None:
    """``mkdir -p`` that makes every directory it creates durable (syncs each new one's parent)."""
    if directory.is_dir():
        return
    missing: list[Path] = []
    probe = directory
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    directory.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        fsync_directory(created.parent)


class DirectorySyncs:
    """Directories whose sync is deferred to the end of a batch.

    A command that changes many records collects the directories here and
    syncs each one once in :meth:`flush`, instead of once per file.
    """

    def __init__(self) -> None:
        self._pending: set[Path] = set()

    def add(self, directory: Path) -> None:
        self._pending.add(directory)

    def flush(self) -> None:
        """Sync every pending directory that still exists; errors propagate."""
        pending, self._pending = self._pending, set()
        for directory in sorted(pending):
            if directory.is_dir():
                fsync_directory(directory)


def _after_change(directory: Path, syncs: DirectorySyncs | None) -> None:
    if syncs is None:
        fsync_directory(directory)
    else:
        syncs.add(directory)


def write_json(
    path: Path, data: Any, *, indent: int | None = 2, syncs: DirectorySyncs | None = None
) -> None:
    """Atomically and durably replace ``path`` with ``data`` as JSON.

    Temp file in the same directory, write, flush, fsync, ``os.replace``, then
    fsync of the directory (or defer it to ``syncs``). The temp file is removed
    on failure; ``OSError`` propagates.
    """
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    write_text(path, text, syncs=syncs)


def write_text(path: Path, text: str, *, syncs: DirectorySyncs | None = None) -> None:
    """Atomically and durably replace ``path`` with ``text`` (see :func:`write_json`)."""
    directory = path.parent
    make_directory(directory)
    fd, temp_name = tempfile.mkstemp(
        prefix=TEMP_PREFIX + path.name + ".", suffix=TEMP_SUFFIX, dir=directory
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _after_change(directory, syncs)


def remove_file(path: Path, *, syncs: DirectorySyncs | None = None) -> bool:
    """Durably unlink ``path``; False when it was not there. Other errors propagate."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    _after_change(path.parent, syncs)
    return True


def read_json(path: Path) -> Any:
    """Parse ``path`` as JSON; ``FileNotFoundError``, ``OSError`` and ``ValueError`` propagate."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_object(path: str | Path) -> tuple[str, object, str]:
    """``(status, parsed JSON, problem)`` of a record file, with one open; never raises.

    ``status`` is ``absent``, ``ok``, ``unreadable`` (not JSON, or unreadable), or
    ``stranger``: a symlink, FIFO, directory or other non-regular file, which is
    someone else's and never followed or blocked on.
    """
    status, data, problem = _read_regular(path)
    if status != "ok":
        return status, None, problem
    try:
        return "ok", json.loads(data.decode("utf-8")), ""
    except ValueError as error:
        return "unreadable", None, f"it is not valid JSON ({error})"
    except RecursionError:
        return "unreadable", None, "it is not valid JSON (nested too deeply to read)"


def read_bytes(path: str | Path) -> bytes | None:
    """The content of the regular file ``path``, or None (absent, unreadable, a stranger's)."""
    status, data, _ = _read_regular(path)
    return data if status == "ok" else None


def read_regular(path: str | Path) -> tuple[str, bytes, str]:
    """``(status, content, problem)`` of a regular file, with :func:`read_object`'s statuses
    (for a reader that parses the content itself)."""
    return _read_regular(path)


def _read_regular(path: str | Path) -> tuple[str, bytes, str]:
    """``(status, content, problem)`` of a regular file, as :func:`read_object` names them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return "absent", b"", ""
        status = "stranger" if error.errno == errno.ELOOP else "unreadable"
        return status, b"", f"it cannot be opened ({error.strerror})"
    try:
        try:
            info = os.fstat(fd)
        except OSError:
            info = None  # what it is cannot be told: treat it as someone else's
        if info is None or not stat.S_ISREG(info.st_mode):
            return "stranger", b"", "it is not a regular file"
        return "ok", _read_to_end(fd, info.st_size), ""
    except OSError as error:
        return "unreadable", b"", f"it cannot be read ({error.strerror})"
    finally:
        os.close(fd)


def _read_to_end(fd: int, size: int) -> bytes:
    """Every byte of ``fd``: one ``read`` for a regular file of ``size`` bytes, more if it grew."""
    chunks: list[bytes] = []
    want = size + 1
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        if len(chunk) < want:
            break
        want = 1 << 16
    return b"".join(chunks)


@contextlib.contextmanager
def locked(lock_path: Path) -> Generator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` for the ``with`` block.

    The lock file is created when missing and never removed (removing it
    would let two holders lock different inodes).
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
