"""The receiver: one request per connection, answered once, a delivery durable before its 202.

An ``asyncio`` loop accepts at most :attr:`Limits.connections` connections at a time (the
rest wait in the kernel's backlog) and gives each a deadline for its head and one for its
body, so a slow or stalled client holds one connection and delays no other. What costs
time (the signature of a large body, JSON, the inbox's fsync, the event log) runs in a
pool of threads. A refusal made before the body was read closes the connection after a
short bounded drain, so the client reads the answer instead of a reset. :meth:`Receiver.stop`
(or SIGTERM/SIGINT, with ``handle_signals``) stops accepting and lets every accepted
connection finish. Decision 019 says why this server and not a library's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

from the_loop.errors import TheLoopError
from the_loop.eventlog.log import EventLog, utc_timestamp
from the_loop.fsio import write_json
from the_loop.webhook.exchange import Exchange
from the_loop.webhook.inbox import Inbox
from the_loop.webhook.settings import Limits, ReceiverSettings, url_of
from the_loop.webhook.status import Tally

__all__ = ["Limits", "Receiver"]

T = TypeVar("T")
#: The interpreter's thread switch interval while the receiver serves (Python's is 5 ms).
SWITCH_INTERVAL = 0.001


class Receiver:
    """The receiver of ``settings``: :meth:`bind`, then :meth:`serve` until stopped."""

    def __init__(
        self,
        settings: ReceiverSettings,
        *,
        inbox: Inbox,
        events: EventLog,
        status_file: Path,
        limits: Limits | None = None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.inbox = inbox
        self.events = events
        self.status_file = status_file
        self.limits = limits or Limits()
        self.tally = Tally(
            os.getpid(), settings.host, settings.port, settings.path, settings.insecure
        )
        self.signal_name = ""
        self._tick = tick
        self._socket: socket.socket | None = None
        self._stop_asked = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failure: TheLoopError | None = None
        self._connections: set[asyncio.Task[None]] = set()

    def bind(self) -> tuple[str, int]:
        """Listen on the settings' address; the address bound (the port when it was 0).
        ``TheLoopError`` when the address cannot be had."""
        host, port = self.settings.host, self.settings.port
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0]
            listener = socket.socket(family, kind, proto)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(address)
                listener.listen(self.limits.backlog)
                listener.setblocking(False)
            except BaseException:
                listener.close()
                raise
        except OSError as error:
            where = url_of(host, port, self.settings.path)
            raise TheLoopError(f"cannot listen on {where}: {error.strerror or error}") from None
        self._socket = listener
        bound: tuple[str, int] = listener.getsockname()[:2]
        self.tally = Tally(
            os.getpid(), bound[0], bound[1], self.settings.path, self.settings.insecure
        )
        return bound

    def serve(self, *, handle_signals: bool = False) -> None:
        """Accept until :meth:`stop` (or SIGTERM/SIGINT), then finish what was accepted.

        Raises the ``TheLoopError`` of a failed ``tick`` (the caller's check of its lock).
        """
        if self._socket is None:
            self.bind()
        try:
            self.inbox.open()
        except OSError as error:  # one line naming it, never a traceback
            raise TheLoopError(
                f"the inbox {self.inbox.directory} cannot be read: {error}"
            ) from error
        switching = sys.getswitchinterval()
        # The loop must not wait 5 ms for the GIL each time the writer's thread holds it.
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            with (
                ThreadPoolExecutor(self.limits.threads, thread_name_prefix="webhook") as pool,
                ThreadPoolExecutor(1, thread_name_prefix="webhook-writer") as writer,
            ):
                self._pool, self._writer = pool, writer
                asyncio.run(self._main(handle_signals))
        finally:
            sys.setswitchinterval(switching)
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        """Ask the receiver to stop (from any thread)."""
        self._stop_asked.set()
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: it stopped
                loop.call_soon_threadsafe(self._stopping.set)

    # -- the loop -----------------------------------------------------------------------

    async def _main(self, handle_signals: bool) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._slots = asyncio.Semaphore(self.limits.connections)
        self._exchange = Exchange(
            self.settings,
            self.limits,
            inbox=self.inbox,
            events=self.events,
            tally=self.tally,
            pool=self._pool,
            writer=self._writer,
        )
        if handle_signals:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self._on_signal, signum)
        self._loop = loop
        if self._stop_asked.is_set():
            self._stopping.set()
        await self._in_thread(self._write_status, None)
        accepting = loop.create_task(self._accept())
        ticking = loop.create_task(self._keep_status())
        await self._stopping.wait()
        accepting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await accepting
        assert self._socket is not None
        self._socket.close()
        if self._connections:
            await asyncio.wait(set(self._connections))
        ticking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticking
        await self._in_thread(self._write_status, utc_timestamp())

    def _on_signal(self, signum: int) -> None:
        """The first SIGTERM or SIGINT stops the receiver; a second has its usual effect."""
        self.signal_name = self.signal_name or signal.Signals(signum).name
        asyncio.get_running_loop().remove_signal_handler(signum)
        self._stopping.set()

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._socket is not None
        while True:
            await self._slots.acquire()
            try:
                connection, peer = await loop.sock_accept(self._socket)
            except OSError:  # out of descriptors, or a connection reset while queued
                self._slots.release()
                await asyncio.sleep(0.05)
                continue
            except BaseException:
                self._slots.release()
                raise
            task = loop.create_task(self._exchange.serve(connection, _peer(peer)))
            self._connections.add(task)
            task.add_done_callback(self._connection_done)

    def _connection_done(self, task: asyncio.Task[None]) -> None:
        self._connections.discard(task)
        self._slots.release()

    async def _keep_status(self) -> None:
        """The status file at most once a second while counts change; the tick every
        few seconds (a failure stops the receiver and is raised by :meth:`serve`)."""
        waited = 0.0
        while True:
            await asyncio.sleep(self.limits.status_seconds)
            waited += self.limits.status_seconds
            if self.tally.take_dirty():
                await self._in_thread(self._write_status, None)
            if self._tick is not None and waited >= self.limits.tick_seconds:
                waited = 0.0
                try:
                    await self._in_thread(self._tick)
                except TheLoopError as error:
                    self._failure = error
                    self._stopping.set()
                    return

    def _write_status(self, stopped_at: str | None) -> None:
        with contextlib.suppress(OSError):  # a status that cannot be written stops nothing
            write_json(self.status_file, self.tally.snapshot(stopped_at=stopped_at))

    async def _in_thread(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(function, *args))


def _peer(address: object) -> str:
    """``host:port`` of a peer's socket address."""
    if isinstance(address, tuple):
        parts = cast(tuple[object, ...], address)
        return f"{parts[0]}:{parts[1]}" if len(parts) >= 2 else str(parts)
    return str(address)
