"""One connection of the receiver: its request read within deadlines, checked, answered.

A request's head and body each have a deadline, and the bytes of bodies held at once a
budget. A body up to :data:`INLINE_BYTES` is checked in the loop, a larger one in the
pool of threads. A delivery to store is queued for the one writer thread: the deliveries
that arrive while it writes go together in its next append and fsync (a group commit),
and each is answered once that returns. A refusal made before the body was read drains
the connection briefly, so the client reads the answer instead of a reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import socket
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

from the_loop.eventlog.log import EventLog, utc_timestamp_ms
from the_loop.webhook.inbox import Inbox, NewDelivery
from the_loop.webhook.rules import (
    DELIVERY_HEADER,
    DELIVERY_ID,
    EVENT_HEADER,
    EVENT_NAME,
    Answer,
    Received,
    check_head,
    check_signature,
    content_length,
    expects_continue,
    read_delivery,
    refuse,
    taken,
)
from the_loop.webhook.settings import HANDLED_EVENTS, Limits, ReceiverSettings
from the_loop.webhook.status import Tally
from the_loop.webhook.wire import CONTINUE, HEAD_END, MAX_HEAD_BYTES, BadRequest, Head, parse_head
from the_loop.webhook.wire import response as encode

T = TypeVar("T")
#: The answer recorded for a client that went away mid-request (nothing is written back).
_CLOSED_EARLY = "closed-early"
#: A body up to this size is checked in the loop; a larger one in a thread.
INLINE_BYTES = 256 * 1024


class Exchange:
    """The requests of one run of the receiver, one connection at a time per :meth:`serve`."""

    def __init__(
        self,
        settings: ReceiverSettings,
        limits: Limits,
        *,
        inbox: Inbox,
        events: EventLog,
        tally: Tally,
        pool: Executor,
        writer: Executor,
    ) -> None:
        self.settings = settings
        self.limits = limits
        self.inbox = inbox
        self.events = events
        self.tally = tally
        self._pool = pool
        self._writer = writer
        self._budget = _Budget(limits.body_bytes_in_flight)
        self._queued: list[tuple[Received, str, asyncio.Future[tuple[Answer, bool]]]] = []
        self._writer_busy = False

    async def _in_thread(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(function, *args))

    async def serve(self, connection: socket.socket, peer: str) -> None:
        """Read one request on ``connection``, answer it, close it."""
        try:
            reader, writer = await asyncio.open_connection(sock=connection, limit=MAX_HEAD_BYTES)
        except OSError:
            connection.close()
            return
        try:
            await self._exchange(reader, writer, peer)
        except Exception as error:  # a bug must cost this request only, never the receiver
            with contextlib.suppress(Exception):
                await self._settle(writer, _internal_error(), peer, None, error=repr(error)[:300])
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), self.limits.linger_seconds)

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str
    ) -> None:
        head = await self._read_head(reader)
        if head is None:
            return  # closed before a byte of a request: nothing was asked
        if isinstance(head, Answer):
            await self._settle(writer, head, peer, None, linger=reader)
            return
        refusal = check_head(head, self.settings.path)
        if refusal is not None:
            await self._settle(writer, refusal, peer, head, linger=reader)
            return
        length = content_length(head)
        async with self._budget.hold(length):
            if expects_continue(head):
                writer.write(CONTINUE)
            body = await self._read_body(reader, length)
            if isinstance(body, Answer):
                await self._settle(writer, body, peer, head, linger=reader)
                return
            answer, recorded = await self._judge(head, body, peer)
        await self._settle(writer, answer, peer, head, recorded=recorded)

    async def _read_head(self, reader: asyncio.StreamReader) -> Head | Answer | None:
        seconds = self.limits.head_seconds
        try:
            async with asyncio.timeout(seconds):
                raw = await reader.readuntil(HEAD_END)
        except TimeoutError:
            return refuse(408, "head-timeout", f"the request's head took over {seconds:g} s")
        except asyncio.LimitOverrunError:
            return refuse(431, "head-too-large", f"the request's head is over {MAX_HEAD_BYTES} B")
        except asyncio.IncompleteReadError as error:
            return _closed_early("the head") if error.partial.strip() else None
        except ConnectionError:
            return None
        try:
            return parse_head(raw)
        except BadRequest as error:
            return refuse(400, error.reason, str(error))

    async def _read_body(self, reader: asyncio.StreamReader, length: int) -> bytes | Answer:
        seconds = self.limits.body_seconds
        try:
            async with asyncio.timeout(seconds):
                return await reader.readexactly(length)
        except TimeoutError:
            return refuse(408, "body-timeout", f"the body of {length} B took over {seconds:g} s")
        except (asyncio.IncompleteReadError, ConnectionError):
            return _closed_early("the body")

    async def _judge(self, head: Head, body: bytes, peer: str) -> tuple[Answer, bool]:
        """The answer to a request read whole, and whether it is counted and logged yet:
        checked in the loop (a large body in a thread), then stored by the writer with the
        deliveries that came with it (which counts and logs them)."""
        if len(body) > INLINE_BYTES:
            verdict = await self._in_thread(self._verdict, head, body)
        else:
            verdict = self._verdict(head, body)
        if isinstance(verdict, Answer):
            return verdict, False
        return await self._stored(verdict, peer)

    def _verdict(self, head: Head, body: bytes) -> Answer | Received:
        """The signature, the delivery, then what becomes of it: an answer, or a delivery
        to store."""
        refusal = check_signature(head, body, self.settings.secret)
        if refusal is not None:
            return refusal
        received = read_delivery(head, body)
        if isinstance(received, Answer):
            return received
        if received.event == "ping":
            return taken("ping", 200, "pong: the receiver hears this webhook")
        if received.event not in HANDLED_EVENTS:
            return taken("ignored", 202, f"accepted: {received.event} events are not acted on")
        return received

    async def _stored(self, received: Received, peer: str) -> tuple[Answer, bool]:
        """Queue ``received`` for the writer and wait for its answer (group commit: the
        deliveries that arrive while the writer writes go together in its next append)."""
        answered: asyncio.Future[tuple[Answer, bool]] = asyncio.get_running_loop().create_future()
        self._queued.append((received, peer, answered))
        if not self._writer_busy:
            self._write_queued()
        return await answered

    def _write_queued(self) -> None:
        batch, self._queued, self._writer_busy = self._queued, [], True
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self._writer, self._store, [(r, p) for r, p, _ in batch])

        def written(job: asyncio.Future[list[Answer]]) -> None:
            self._writer_busy = False
            failed = job.exception()
            if failed is None:
                answers = [(answer, True) for answer in job.result()]
            else:  # a bug: nothing was counted or logged
                answers = [(_internal_error(), False)] * len(batch)
            for (_, _, answered), answer in zip(batch, answers, strict=True):
                answered.set_result(answer)
            if self._queued:
                self._write_queued()

        job.add_done_callback(written)

    def _store(self, batch: list[tuple[Received, str]]) -> list[Answer]:
        """In the writer's thread: one append and fsync for the batch, then each one's
        count and event."""
        at = utc_timestamp_ms()
        news = [NewDelivery(r.event, r.delivery_id, r.text, at) for r, _ in batch]
        try:
            stored = self.inbox.store_many(news)
        except OSError as error:
            failed = refuse(503, "store-failed", f"the delivery could not be stored ({error})")
            stored, answers = [False] * len(batch), [failed] * len(batch)
        else:
            answers = [
                _taken(received, new) for (received, _), new in zip(batch, stored, strict=True)
            ]
        for (received, peer), answer in zip(batch, answers, strict=True):
            self.record(answer, peer, received, "")
        return answers

    async def _settle(
        self,
        writer: asyncio.StreamWriter,
        answer: Answer,
        peer: str,
        head: Head | None,
        *,
        linger: asyncio.StreamReader | None = None,
        error: str = "",
        recorded: bool = False,
    ) -> None:
        """Count and log ``answer`` (unless ``recorded``), then write it (unless the client
        went away)."""
        if not recorded:
            await self._in_thread(self.record, answer, peer, head, error)
        if answer.reason == _CLOSED_EARLY:
            return
        with contextlib.suppress(OSError, TimeoutError):  # a client gone is its own business
            writer.write(encode(answer.status, answer.text, answer.headers))
            async with asyncio.timeout(self.limits.write_seconds):
                await writer.drain()
            if linger is not None:
                writer.write_eof()
                await self._linger(linger)

    async def _linger(self, reader: asyncio.StreamReader) -> None:
        """Drain what the client still sends (bounded), so it reads the answer, not a reset."""
        left = self.limits.linger_bytes
        with contextlib.suppress(TimeoutError, OSError):
            async with asyncio.timeout(self.limits.linger_seconds):
                while left > 0 and (chunk := await reader.read(min(left, 1 << 16))):
                    left -= len(chunk)

    def record(self, answer: Answer, peer: str, sent: Head | Received | None, error: str) -> None:
        """The tally, and the one event of this request (``sent``: what is known of it)."""
        self.tally.count(answer.outcome)
        delivery, event = _said(sent)
        log = self.events
        if answer.outcome == "accepted":
            log.emit("webhook.accepted", delivery=delivery, github_event=event, peer=peer)
        elif answer.outcome == "duplicate":
            log.emit("webhook.duplicate", delivery=delivery, github_event=event, peer=peer)
        elif answer.outcome == "ignored":
            log.emit("webhook.ignored", delivery=delivery, github_event=event, peer=peer)
        elif answer.outcome == "ping":
            log.emit("webhook.ping", delivery=delivery, peer=peer)
        else:
            log.emit(
                "webhook.rejected",
                "warning",
                status=answer.status,
                reason=answer.reason,
                delivery=delivery,
                github_event=event,
                peer=peer,
                error=error,
            )


class _Budget:
    """The bytes of bodies held in memory at once; one body may always be held."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._used = 0
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncGenerator[None]:
        async with self._changed:
            await self._changed.wait_for(
                lambda: self._used == 0 or self._used + size <= self._limit
            )
            self._used += size
        try:
            yield
        finally:
            async with self._changed:
                self._used -= size
                self._changed.notify_all()


def _closed_early(what: str) -> Answer:
    return refuse(400, _CLOSED_EARLY, f"the client closed the connection before {what} ended")


def _said(sent: Head | Received | None) -> tuple[str, str]:
    """The delivery id and event name for the event log, each when it has the shape GitHub
    gives it, else ""."""
    if isinstance(sent, Received):
        return sent.delivery_id, sent.event
    if sent is None:
        return "", ""
    return _shaped(sent, DELIVERY_HEADER, DELIVERY_ID), _shaped(sent, EVENT_HEADER, EVENT_NAME)


def _shaped(head: Head, name: str, shape: re.Pattern[str]) -> str:
    values = head.values(name)
    return values[0] if len(values) == 1 and shape.match(values[0]) else ""


def _taken(received: Received, stored: bool) -> Answer:
    if stored:
        return taken("accepted", 202, f"accepted: delivery {received.delivery_id} is stored")
    return taken("duplicate", 202, f"accepted: delivery {received.delivery_id} is here")


def _internal_error() -> Answer:
    return refuse(500, "internal-error", "the receiver failed on this request")
