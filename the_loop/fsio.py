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
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from the_loop.records.tree import MAX_NESTING, nesting_problem, parse_state_json

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
    """Parse the regular file ``path`` as bounded JSON (see :func:`parse_json`).

    ``FileNotFoundError``, ``OSError`` (:class:`StrangerFile` for a FIFO or a link)
    and ``ValueError`` propagate.
    """
    fd, info = _open_regular_checked(path)
    try:
        data = _read_to_end(fd, info.st_size)
    finally:
        os.close(fd)
    return parse_json(data.decode("utf-8"))


#: How deep containers may nest in a record or an event line; deeper is unreadable.
MAX_JSON_DEPTH = MAX_NESTING


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` that refuses containers nested deeper than :data:`MAX_JSON_DEPTH`.

    Raises ``ValueError`` for text that is not JSON or nests too deeply (never
    ``RecursionError``); the depth is only measured when the text could exceed it.
    """
    too_deep = f"nested too deeply to read: deeper than {MAX_JSON_DEPTH} levels"
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(too_deep) from None
    if nesting_problem(value, text):
        raise ValueError(too_deep)
    return value


def read_bounded_object(path: str | Path) -> tuple[str, object, str]:
    """:func:`read_object` with the nesting bound, keeping what nests too deeply:
    ``(status, value, problem)``. A file that nests too deeply is ``unreadable`` but
    keeps its parsed ``value`` (so a reader can still name the ref it stores); any
    other unreadable file has None."""
    status, raw, problem = read_regular(path)
    if status != "ok":
        return status, None, problem
    value, problem = parse_state_json(raw)
    return ("unreadable" if problem else "ok"), value, problem


class StrangerFile(OSError):
    """A path under the state root that is not what the-loop keeps there: someone else's.

    E.g. a FIFO, a link or a directory where a regular file belongs. Its ``strerror`` is
    the whole sentence (``logs/events.jsonl is a FIFO, not a regular file``); such a
    file is never read, written, followed or blocked on.
    """

    def __init__(self, path: str | Path, kind: str, wanted: str = "a regular file") -> None:
        super().__init__(errno.EINVAL, f"{path} is {kind}, not {wanted}")
        self.kind = kind
        self.wanted = wanted


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``a FIFO``, ``a regular file``...)."""
    if stat.S_ISREG(mode):  # the common case, asked of every record file read
        return "a regular file"
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a special file"


def open_regular(path: str | Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of the regular file ``path``: never follows a final link, never blocks.

    Opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``; anything but a
    regular file raises :class:`StrangerFile` and is left as it was (``O_CREAT`` in
    ``flags`` never creates anything at a link's target). Other ``OSError`` propagates.
    """
    return _open_regular_checked(path, flags, mode)[0]


def _open_regular_checked(
    path: str | Path, flags: int = os.O_RDONLY, mode: int = 0o644
) -> tuple[int, os.stat_result]:
    """:func:`open_regular`, with the ``fstat`` that checked the descriptor (a reader
    takes the file's size from it: one ``fstat`` per read)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP):
            _refuse_stranger(path)
        raise
    try:
        info = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise StrangerFile(path, file_kind(info.st_mode))
    return fd, info


def _refuse_stranger(path: str | Path) -> None:
    """Raise :class:`StrangerFile` when ``path`` exists and is not a regular file."""
    try:
        kind = file_kind(os.lstat(path).st_mode)
    except OSError:
        return
    if kind != "a regular file":
        raise StrangerFile(path, kind)


def stranger_at(path: str | Path) -> StrangerFile | None:
    """The :class:`StrangerFile` that opening ``path`` would raise, or None (absent or regular)."""
    try:
        _refuse_stranger(path)
    except StrangerFile as error:
        return error
    return None


def read_object(path: str | Path) -> tuple[str, object, str]:
    """``(status, parsed JSON, problem)`` of a record file, with one open; never raises.

    ``status`` is ``absent``, ``ok``, ``unreadable`` (not JSON, nested deeper than
    :data:`MAX_JSON_DEPTH`, or unreadable), or ``stranger``: a symlink, FIFO, directory
    or other non-regular file, which is someone else's and never followed or blocked on.
    """
    status, data, problem = read_regular(path)
    if status != "ok":
        return status, None, problem
    try:
        return "ok", parse_json(data.decode("utf-8")), ""
    except ValueError as error:
        return "unreadable", None, f"it is not valid JSON ({error})"


def read_bytes(path: str | Path) -> bytes | None:
    """The content of the regular file ``path``, or None (absent, unreadable, a stranger's)."""
    status, data, _ = read_regular(path)
    return data if status == "ok" else None


def read_regular(path: str | Path) -> tuple[str, bytes, str]:
    """``(status, content, problem)`` of a regular file, as :func:`read_object` names them."""
    try:
        fd, info = _open_regular_checked(path)
    except StrangerFile as error:
        return "stranger", b"", f"it is {error.kind}, not a regular file"
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return "absent", b"", ""
        return "unreadable", b"", f"it cannot be opened ({error.strerror})"
    try:
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


#: Writes some prefix of ``data`` to the descriptor and returns how many bytes it wrote.
Writer = Callable[[int, memoryview], int]


def append_lines(
    path: Path, data: bytes, *, mode: int = 0o644, sync: bool = False, write: Writer = os.write
) -> None:
    """Append the whole lines ``data`` (ending in ``\\n``) to the regular file ``path``, or nothing.

    Under an exclusive ``flock`` on the file itself: a file that does not end in a
    newline (someone's torn line) gets one first, so ``data`` is never glued onto it;
    a write that fails part-way is undone by truncating back to where it started.
    Earlier bytes stay byte-identical. ``sync`` fsyncs before returning; a new file
    gets ``mode``. ``OSError`` (:class:`StrangerFile`...) propagates.
    """
    make_directory(path.parent)
    fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        start = os.fstat(fd).st_size
        torn = start > 0 and os.pread(fd, 1, start - 1) != b"\n"
        view = memoryview(b"\n" + data if torn else data)
        written = 0
        try:
            while written < len(view):
                count = write(fd, view[written:])
                if count <= 0:
                    raise OSError(errno.EIO, f"{path}: the write stopped short")
                written += count
            if sync:
                os.fsync(fd)
        except BaseException:
            _undo_append(fd, start, written)
            raise
    finally:
        os.close(fd)


def _undo_append(fd: int, start: int, written: int) -> None:
    """Truncate ``fd`` back to ``start`` when only our ``written`` bytes follow it.

    A writer that does not take the lock may have appended after us: its bytes are
    never cut, and the next append starts on a new line anyway.
    """
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_size == start + written:
            os.ftruncate(fd, start)


class LockHeld(OSError):
    """Another process holds the lock :func:`locked` was told not to wait for."""


@contextlib.contextmanager
def locked(lock_path: Path, *, wait: bool = True) -> Generator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` for the ``with`` block.

    The lock file is created when missing and never removed (removing it
    would let two holders lock different inodes). Its directory must be a real
    directory and the name a regular file: a link (even a dangling one), a FIFO
    or anything else raises :class:`StrangerFile` and nothing is created. With
    ``wait=False`` a lock another process holds raises :class:`LockHeld` at once.
    """
    if os.path.lexists(lock_path.parent):
        _refuse_linked_directory(lock_path.parent)  # before anything is made through it
    make_directory(lock_path.parent)
    _refuse_linked_directory(lock_path.parent)
    fd = open_regular(lock_path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeld(errno.EWOULDBLOCK, f"{lock_path} is locked by another process") from None
        yield
    finally:
        os.close(fd)


def lock_is_held(lock_path: Path) -> bool:
    """Whether another process holds :func:`locked`'s lock on ``lock_path`` now; a
    missing file, a link or a FIFO is not held (and is never followed or created)."""
    try:
        fd = open_regular(lock_path)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _refuse_linked_directory(directory: Path) -> None:
    """Raise :class:`StrangerFile` when ``directory`` is a link or not a directory."""
    kind = file_kind(os.lstat(directory).st_mode)
    if kind != "a directory":
        raise StrangerFile(directory, kind, "a directory")
