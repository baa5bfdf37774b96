"""The event log as Server-Sent Events: each complete line once, its id the byte offset after it.

A route answers :class:`Stream`; the server keeps at most its ``limit`` open and feeds each
from a :class:`LogTail`, which stats the log and reads only the bytes appended since. A
``Last-Event-ID`` continues right after the line it names; a log that shrank under the
stream, was replaced, or never held that offset gives one ``desync`` frame, and the stream
goes on from the start of the log there now.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import stat
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.fsio import StrangerFile, open_regular

EVENT_STREAM_TYPE = "text/event-stream"
#: Sent after this many seconds without a frame, so proxies and clients see the stream live.
KEEP_ALIVE_SECONDS = 15.0
KEEP_ALIVE = b": keep-alive\n\n"
#: How often the log is looked at (one ``lstat``) while nothing is new.
POLL_SECONDS = 0.1
#: The most bytes read at one look: a stream far behind catches up over several.
READ_AT_MOST = 1 << 20
#: How far back a look for the last complete line reads at a time.
_BACK_STEP = 1 << 16
#: The head of every stream: its type, and the headers every answer carries (no CORS ever).
STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: " + EVENT_STREAM_TYPE.encode() + b"\r\n"
    b"Cache-Control: no-store\r\n"
    b"X-Content-Type-Options: nosniff\r\n"
    b"X-Frame-Options: DENY\r\n"
    b"Referrer-Policy: no-referrer\r\n"
    b"Connection: close\r\n"
    b"\r\n"
)


@dataclass(frozen=True)
class Stream:
    """A route's answer that streams ``log`` (at most ``limit`` such streams at once)."""

    log: Path
    limit: int


def resume_offset(last_event_id: str | None) -> int | None:
    """The offset a ``Last-Event-ID`` names, or None when none was sent; ``ValueError``
    when it is not a byte offset."""
    if last_event_id is None:
        return None
    text = last_event_id.strip()
    if not text.isdigit() or len(text) > 20:
        raise ValueError(f"Last-Event-ID {last_event_id!r} is not a byte offset of the log")
    return int(text)


def log_frame(line: bytes, offset: int) -> bytes:
    """The frame of ``line`` (without its newline), which ends at byte ``offset``."""
    return b"id: %d\nevent: log\ndata: %s\n\n" % (offset, line)


def desync_frame(reason: str, offset: int, size: int) -> bytes:
    """The frame that says the stream restarts at byte 0 of the log (its id is 0)."""
    data = json.dumps({"reason": reason, "offset": offset, "size": size})
    return b"id: 0\nevent: desync\ndata: %s\n\n" % data.encode()


class LogTail:
    """The complete lines of ``path`` after an offset, as frames, read as they come.

    The log is opened as a regular file only (never a link, FIFO or other stranger's
    file, which reads as no log); :meth:`close` lets it go.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._read_at = 0
        self._pending = b""

    @property
    def offset(self) -> int:
        """The byte after the last complete line sent."""
        return self._read_at - len(self._pending)

    def start(self, resume: int | None) -> list[bytes]:
        """Place the tail at the end of the log's last complete line, or at ``resume``; the
        desync frame when ``resume`` is no line's end in the log (the tail starts at 0)."""
        size = self._open()
        if resume is None:
            self._read_at = self._last_line_end(size)
            return []
        if resume <= size and (resume == 0 or self._byte_at(resume - 1) == b"\n"):
            self._read_at = resume
            return []
        self._read_at = 0
        return [desync_frame("beyond" if resume > size else "not-a-line-end", resume, size)]

    def poll(self) -> list[bytes]:
        """The frames of the lines completed since the last look (at most
        :data:`READ_AT_MOST` bytes), after one desync frame when the log shrank or was
        replaced."""
        frames: list[bytes] = []
        size = self._size_now(frames)
        if size is None or size <= self._read_at:
            return frames
        assert self._fd is not None
        chunk = os.pread(self._fd, min(size - self._read_at, READ_AT_MOST), self._read_at)
        self._read_at += len(chunk)
        data = self._pending + chunk
        complete = data.rfind(b"\n") + 1
        self._pending = data[complete:]
        offset = self._read_at - len(data)
        for line in data[: complete - 1].split(b"\n") if complete else ():
            offset += len(line) + 1
            frames.append(log_frame(line, offset))
        return frames

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd, self._identity = None, None

    def _size_now(self, frames: list[bytes]) -> int | None:
        """The size of the log the tail reads (None when there is none), after one desync
        frame in ``frames`` when the log shrank or another file took its path."""
        try:
            info = os.lstat(self._path)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            # No log at the path (or a stranger's): the file held may still have lines.
            return os.fstat(self._fd).st_size if self._fd is not None else None
        if (info.st_dev, info.st_ino) != self._identity:
            if self._fd is not None or self.offset > 0:
                frames.append(desync_frame("replaced", self.offset, info.st_size))
            self._read_at, self._pending = 0, b""
            size = self._open()  # replaced again meanwhile: the next look says so
            return size if self._fd is not None else None
        if info.st_size < self._read_at:
            frames.append(desync_frame("shrank", self.offset, info.st_size))
            self._read_at, self._pending = 0, b""
        return info.st_size

    def _open(self) -> int:
        """Open the log at the path; its size (0 when there is none to read)."""
        self.close()
        try:
            fd = open_regular(self._path)
        except StrangerFile:
            return 0
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                return 0
            raise
        info = os.fstat(fd)
        self._fd, self._identity = fd, (info.st_dev, info.st_ino)
        return info.st_size

    def _byte_at(self, offset: int) -> bytes:
        return os.pread(self._fd, 1, offset) if self._fd is not None else b""

    def _last_line_end(self, size: int) -> int:
        """The offset after the last newline before ``size`` (0 when there is none)."""
        end = size
        while end > 0 and self._fd is not None:
            start = max(0, end - _BACK_STEP)
            found = os.pread(self._fd, end - start, start).rfind(b"\n")
            if found >= 0:
                return start + found + 1
            end = start
        return 0


async def feed(
    tail: LogTail,
    first: list[bytes],
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    stopping: asyncio.Event,
    *,
    keep_alive: float = KEEP_ALIVE_SECONDS,
) -> None:
    """Write ``first``, then the frames of ``tail`` as they come (a keep-alive comment after
    ``keep_alive`` seconds of silence), until the client closes or ``stopping`` is set.

    A look that found frames is followed by the next at once, after the client took them
    (so a stream behind catches up at the client's pace); one that found none waits
    :data:`POLL_SECONDS`. ``OSError`` (the client gone, the log unreadable) propagates.
    """
    loop = asyncio.get_running_loop()
    ended = (
        asyncio.ensure_future(_until_closed(reader)),
        asyncio.ensure_future(stopping.wait()),
    )
    try:
        frames, quiet_since = first, loop.time()
        while True:
            if frames:
                writer.write(b"".join(frames))
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= keep_alive:
                writer.write(KEEP_ALIVE)
                quiet_since = loop.time()
            if await _ended_before(writer.drain(), ended):
                return
            if not frames and await _ended_before(asyncio.sleep(POLL_SECONDS), ended):
                return
            frames = tail.poll()
    finally:
        for future in ended:
            future.cancel()


async def _until_closed(reader: asyncio.StreamReader) -> None:
    """Return when the client closed its side (whatever it sends meanwhile is dropped)."""
    with contextlib.suppress(ConnectionError):
        while await reader.read(1 << 12):
            pass


async def _ended_before(step: Awaitable[None], ended: Iterable[asyncio.Future[Any]]) -> bool:
    """Whether one of ``ended`` completed before ``step`` did (``step``'s error propagates)."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait((task, *ended), return_when=asyncio.FIRST_COMPLETED)
    if task not in done:
        task.cancel()
        return True
    task.result()
    return any(future in done for future in ended)


__all__ = [
    "EVENT_STREAM_TYPE",
    "KEEP_ALIVE",
    "KEEP_ALIVE_SECONDS",
    "POLL_SECONDS",
    "STREAM_HEAD",
    "LogTail",
    "Stream",
    "desync_frame",
    "feed",
    "log_frame",
    "resume_offset",
]
