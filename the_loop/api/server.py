"""The API's server: one request per connection, read within a deadline, gated, answered.

The ``Host`` is checked first (anything but the loopback names and the bound host is
421, whatever the credentials), then the credentials (401, before anything is read),
then the method (``GET`` and ``HEAD``; 405) and the route. Requests are read strictly
(:mod:`the_loop.webhook.wire`, as the receiver reads them), a request with a body is
refused, and no answer carries a CORS header: the board is same-origin. A route's reads
run in a pool of threads; SIGTERM or SIGINT stops accepting and lets the answers under
way finish. A route may answer a :class:`~the_loop.api.stream.Stream` instead: its head,
then frames until the client closes or the server stops (at most ``Stream.limit`` at once,
503 past that).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

from the_loop.api.answer import HTML_TYPE, UNAUTHORIZED_PAGE, Answer, encode, refusal
from the_loop.api.gate import authorized, host_allowed
from the_loop.api.stream import STREAM_HEAD, LogTail, Stream, feed, resume_offset
from the_loop.errors import TheLoopError
from the_loop.webhook.wire import HEAD_END, MAX_HEAD_BYTES, BadRequest, Head, parse_head

#: The one route taken without credentials: it takes a code and gives the board's cookie.
LOGIN_PATH = "/login"
#: How long a client has to send its request's head.
HEAD_SECONDS = 10.0
#: How long the answers under way may take to finish once a stop is asked.
STOP_GRACE_SECONDS = 5.0
#: Connections answered at once (the rest wait in the kernel's backlog).
CONNECTIONS = 64
THREADS = 4
#: The routes that run a command's own handler (and tmux): their own pool, one at a time.
COMMAND_READS = frozenset({"/api/v1/sessions", "/api/v1/events"})
#: The command an event stream's refusals name.
STREAM = "events stream"


class ApiServer:
    """The server of ``route`` for ``token`` on ``host``:``port``: :meth:`bind`, then
    :meth:`serve` until stopped."""

    def __init__(
        self,
        route: Callable[[str], Answer | Stream],
        *,
        token: str,
        hosts: frozenset[str],
        host: str,
        port: int,
        on_bug: Callable[[BaseException], object] = lambda _error: None,
        on_ready: Callable[[], object] = lambda: None,
    ) -> None:
        self._route = route
        self._on_bug = on_bug
        #: Called once the signals are handled and the listener accepts (the line a
        #: caller waits for before it may stop the server).
        self.on_ready = on_ready
        self._token = token
        self._hosts = hosts
        self.host, self.port = host, port
        self.signal_name = ""
        self.answered = 0
        self._socket: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._streams = 0

    def bind(self) -> tuple[str, int]:
        """Listen; the address bound (the port when it was 0). ``TheLoopError`` when the
        address cannot be had."""
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0]
            listener = socket.socket(family, kind, proto)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(address)
                listener.listen(128)
                listener.setblocking(False)
            except BaseException:
                listener.close()
                raise
        except OSError as error:
            where = f"{self.host}:{self.port}"
            raise TheLoopError(f"cannot listen on {where}: {error.strerror or error}") from None
        self._socket = listener
        self.host, self.port = listener.getsockname()[:2]
        return self.host, self.port

    def serve(self, *, handle_signals: bool = False) -> None:
        """Answer until :meth:`stop` (or SIGTERM/SIGINT)."""
        if self._socket is None:
            self.bind()
        with (
            ThreadPoolExecutor(THREADS, thread_name_prefix="api") as pool,
            ThreadPoolExecutor(1, thread_name_prefix="api-commands") as commands,
        ):
            self._pool, self._command_pool = pool, commands
            asyncio.run(self._main(handle_signals))

    def stop(self) -> None:
        """Ask the server to stop (from any thread)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)

    async def _main(self, handle_signals: bool) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._slots = asyncio.Semaphore(CONNECTIONS)
        if handle_signals:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self._on_signal, signum)
        self._loop = loop
        self._tasks: set[asyncio.Task[None]] = set()
        server = await asyncio.start_server(
            self._connection, sock=self._socket, limit=MAX_HEAD_BYTES
        )
        async with server:
            self.on_ready()  # the signals are handled and the listener accepts: say so
            await self._stopping.wait()
            server.close()
            # The answers under way finish; a connection still silent after the grace
            # (an idle one, before its own deadline) is closed, never waited for.
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=STOP_GRACE_SECONDS)
            for task in set(self._tasks):
                task.cancel()
            await server.wait_closed()

    def _on_signal(self, signum: int) -> None:
        self.signal_name = self.signal_name or signal.Signals(signum).name
        asyncio.get_running_loop().remove_signal_handler(signum)
        assert self._stopping is not None
        self._stopping.set()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            head = await self._head(reader)  # within its deadline, before it takes a slot
            async with self._slots:
                answer, head = await self._answer(head)
                if isinstance(answer, Answer):
                    await self._reply(writer, answer, head)
                    return
            # A stream holds no slot: api.maxStreams alone bounds how many are open.
            assert head is not None
            await self._stream(answer, head, reader, writer)
        except (OSError, asyncio.IncompleteReadError):  # the client left, or the log failed
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _reply(self, writer: asyncio.StreamWriter, answer: Answer, head: Head | None) -> None:
        method = head.method if head is not None else "GET"
        tag = head.values("if-none-match") if head is not None else ()
        writer.write(encode(answer, method=method, if_none_match=", ".join(tag) if tag else None))
        await writer.drain()
        self.answered += 1

    async def _head(self, reader: asyncio.StreamReader) -> Head | Answer:
        """The request's head, read within :data:`HEAD_SECONDS`; else the refusal."""
        try:
            raw = await asyncio.wait_for(reader.readuntil(HEAD_END), HEAD_SECONDS)
            head = parse_head(raw)
        except (TimeoutError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            return refusal(HTTPStatus.BAD_REQUEST, "api", "no whole request head in time")
        except BadRequest as error:
            return refusal(HTTPStatus.BAD_REQUEST, "api", str(error))
        if not head.target.startswith("/"):  # an absolute-form target names another host
            return refusal(HTTPStatus.BAD_REQUEST, "api", "a request target must be a path")
        return head

    async def _answer(self, head: Head | Answer) -> tuple[Answer | Stream, Head | None]:
        if isinstance(head, Answer):
            return head, None
        answer = self._gate(head)
        if answer is not None:
            return answer, head
        loop = asyncio.get_running_loop()
        # The commands' own reads (tmux, one at a time) wait in their own pool, so they
        # never hold back the board's reads.
        pool = self._command_pool if head.path in COMMAND_READS else self._pool
        try:
            return await loop.run_in_executor(pool, self._route, head.target), head
        except Exception as error:  # a bug in a read: one answer, the details in the log
            self._on_bug(error)
            sentence = f"internal error ({type(error).__name__}): see the server's crash log"
            return refusal(HTTPStatus.INTERNAL_SERVER_ERROR, "api", sentence), head

    async def _stream(
        self,
        stream: Stream,
        head: Head,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Feed ``stream`` from the offset ``Last-Event-ID`` names (400 when it names none),
        unless ``stream.limit`` streams are open (503, before any read)."""
        try:
            resume = resume_offset(head.value("last-event-id"))
        except ValueError as error:
            await self._reply(writer, refusal(HTTPStatus.BAD_REQUEST, STREAM, str(error)), head)
            return
        if self._streams >= stream.limit:
            busy = f"{self._streams} event streams are open, the most api.maxStreams allows"
            answer = refusal(HTTPStatus.SERVICE_UNAVAILABLE, STREAM, busy, ("Retry-After", "1"))
            await self._reply(writer, answer, head)
            return
        tail = LogTail(stream.log)
        self._streams += 1
        try:
            await self._feed(tail, resume, head, reader, writer)
        finally:
            tail.close()
            self._streams -= 1

    async def _feed(
        self,
        tail: LogTail,
        resume: int | None,
        head: Head,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """The stream's head, then its frames until the client closes or the server stops
        (500 when the log cannot be opened; a ``HEAD`` gets the head alone)."""
        try:
            first = [] if head.method == "HEAD" else tail.start(resume)
        except OSError as error:
            unread = f"the event log cannot be read: {error.strerror or error}"
            await self._reply(
                writer, refusal(HTTPStatus.INTERNAL_SERVER_ERROR, STREAM, unread), head
            )
            return
        writer.write(STREAM_HEAD)
        self.answered += 1
        if head.method != "HEAD":
            assert self._stopping is not None
            await feed(tail, first, reader, writer, self._stopping)

    def _gate(self, head: Head) -> Answer | None:
        """The refusal ``head`` gets before any read, or None when it may be routed."""
        if not host_allowed(head, self._hosts):
            return refusal(
                HTTPStatus.MISDIRECTED_REQUEST, "api", "this server does not answer to that Host"
            )
        if head.path != LOGIN_PATH and not authorized(head, self._token):
            if head.path == "/":  # a person at the board: a page that says what to do
                return Answer(
                    HTTPStatus.UNAUTHORIZED,
                    UNAUTHORIZED_PAGE,
                    HTML_TYPE,
                    (("WWW-Authenticate", 'Bearer realm="the-loop"'),),
                )
            return refusal(
                HTTPStatus.UNAUTHORIZED,
                "api",
                "no valid credentials: send Authorization: Bearer <the token in local/api-token>",
                ("WWW-Authenticate", 'Bearer realm="the-loop"'),
            )
        if head.method not in ("GET", "HEAD"):
            return refusal(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "api",
                f"{head.method} is not served",
                ("Allow", "GET, HEAD"),
            )
        if head.values("content-length") not in ((), ("0",)) or head.values("transfer-encoding"):
            return refusal(HTTPStatus.BAD_REQUEST, "api", "a read takes no body")
        return None


__all__ = ["ApiServer"]
