"""A loopback fake of the Anthropic Messages API for the real Claude Code CLI.

Claude Code reaches it through ``ANTHROPIC_BASE_URL``. It answers ``POST /v1/messages``
(server-sent events when the body says ``"stream": true``, as the real API does, and
one JSON message when not), ``POST /v1/messages/count_tokens``, and a 404 JSON error
for anything else. Every request is recorded (method, path, a subset of the headers
and the JSON body) in a thread-safe list.

A test scripts the replies: ``fake.script(reply, when=predicate)``. Each request takes
the first scripted rule whose predicate accepts it (a rule is used ``times`` times,
once by default); a request no rule accepts gets the default reply, a short text.
Claude Code makes side requests besides the turns (title generation, quota checks,
summaries), so the default predicate, :func:`is_turn`, accepts only requests that
offer tools: a side request never takes a reply meant for a turn.

A reply says what usage it reports (input, output, cache reads, 5-minute and 1-hour
cache writes), on the model the request asked for; every message the fake sends is kept
in ``fake.sent`` with its id, model and usage: the ground truth a meter of the agent's
spend is checked against.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JsonObject = dict[str, Any]

# The request headers kept in the record (lower case); the rest are dropped.
KEPT_HEADERS = (
    "x-api-key",
    "authorization",
    "anthropic-version",
    "anthropic-beta",
    "user-agent",
    "x-app",
    "content-type",
    "x-claude-code-session-id",
)

DEFAULT_TEXT = "OK from the fake."

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_fake{next(_ids):08d}"


# -- what was asked -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake saw it."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: JsonObject | None
    at: float

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?", 1)[0] == "/v1/messages"

    @property
    def model(self) -> str:
        return str((self.body or {}).get("model", ""))

    @property
    def tools(self) -> list[str]:
        """The names of the tools the request offers ([] for none)."""
        return [str(t.get("name", "")) for t in (self.body or {}).get("tools") or []]

    @property
    def messages(self) -> list[JsonObject]:
        return list((self.body or {}).get("messages") or [])

    def last_user_message(self) -> JsonObject | None:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return message
        return None

    def last_user_text(self) -> str:
        """The text of the last user message: its text blocks and its tool results."""
        message = self.last_user_message()
        return _content_text(message.get("content")) if message else ""

    def user_texts(self) -> list[str]:
        """The text of every user message, in order."""
        return [_content_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    def tool_results(self) -> list[JsonObject]:
        """The ``tool_result`` blocks of the last user message."""
        message = self.last_user_message()
        content = message.get("content") if message else None
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def system_text(self) -> str:
        return _content_text((self.body or {}).get("system"))


def _content_text(content: Any) -> str:
    """The text of a message content (a string or a list of blocks), joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_content_text(block.get("content")))
    return "\n".join(parts)


# -- predicates over requests ----------------------------------------------------------------

Predicate = Callable[[RecordedRequest], bool]


def is_turn(request: RecordedRequest) -> bool:
    """A request of the main conversation: a messages call that offers tools."""
    return request.is_messages and bool(request.tools)


def user_says(text: str) -> Predicate:
    """A turn whose last user message (text or tool result) contains ``text``."""

    def predicate(request: RecordedRequest) -> bool:
        return is_turn(request) and text in request.last_user_text()

    return predicate


def after_tool_result(tool_use_id: str | None = None) -> Predicate:
    """A turn that carries a tool result (of ``tool_use_id``, when given)."""

    def predicate(request: RecordedRequest) -> bool:
        if not is_turn(request):
            return False
        results = request.tool_results()
        if tool_use_id is None:
            return bool(results)
        return any(r.get("tool_use_id") == tool_use_id for r in results)

    return predicate


# -- what to answer ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reply:
    """A scripted answer: assistant content blocks, or an HTTP error.

    ``delay`` waits that many seconds after ``message_start`` (streamed) or before the
    answer (not streamed); ``gate``, when given, is waited on (bounded by ``gate_timeout``)
    at the same point, so a test can hold a turn mid-way for as long as it likes.
    """

    blocks: tuple[JsonObject, ...] = ()
    stop_reason: str = "end_turn"
    status: int = 200
    error: JsonObject | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    gate: threading.Event | None = None
    gate_timeout: float = 60.0
    input_tokens: int = 42
    output_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def usage(self, output_tokens: int | None = None) -> JsonObject:
        """The API's usage object of this reply (``output_tokens`` as given, or the reply's).

        ``cache_creation`` (its split by lifetime) is there only when a cache write is, so
        the replies of tests that set none are as they always were.
        """
        written = self.cache_write_5m_tokens + self.cache_write_1h_tokens
        usage: JsonObject = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens if output_tokens is None else output_tokens,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": self.cache_read_tokens,
        }
        if written:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": self.cache_write_5m_tokens,
                "ephemeral_1h_input_tokens": self.cache_write_1h_tokens,
            }
        return usage

    def wait(self) -> None:
        if self.delay:
            time.sleep(self.delay)
        if self.gate is not None:
            self.gate.wait(self.gate_timeout)


def text(message: str = DEFAULT_TEXT, **options: Any) -> Reply:
    """An assistant reply of one text block, ending the turn."""
    return Reply(blocks=({"type": "text", "text": message},), **options)


def tool_use(
    name: str, tool_input: JsonObject, *, preface: str = "", tool_id: str = "", **options: Any
) -> Reply:
    """An assistant reply calling one tool (after an optional text), stopping for its result."""
    blocks: list[JsonObject] = []
    if preface:
        blocks.append({"type": "text", "text": preface})
    blocks.append(
        {
            "type": "tool_use",
            "id": tool_id or _next_id("toolu"),
            "name": name,
            "input": tool_input,
        }
    )
    return Reply(blocks=tuple(blocks), stop_reason="tool_use", **options)


def bash(command: str, description: str = "Run a command", **options: Any) -> Reply:
    """A ``Bash`` tool call."""
    return tool_use("Bash", {"command": command, "description": description}, **options)


def write_file(file_path: str, content: str, **options: Any) -> Reply:
    """A ``Write`` tool call."""
    return tool_use("Write", {"file_path": file_path, "content": content}, **options)


def api_error(status: int, error_type: str, message: str, **options: Any) -> Reply:
    """An HTTP error with the API's error body ``{"type": "error", "error": {...}}``."""
    return Reply(
        status=status,
        error={"type": "error", "error": {"type": error_type, "message": message}},
        **options,
    )


def rate_limited(message: str = "Number of requests has exceeded your rate limit.") -> Reply:
    """A 429 ``rate_limit_error``, told not to be retried soon."""
    return api_error(
        429,
        "rate_limit_error",
        message,
        headers=(("retry-after", "3600"), ("x-should-retry", "false")),
    )


@dataclasses.dataclass(frozen=True)
class SentMessage:
    """One assistant message the fake sent: to which request, its id, model and usage."""

    request_index: int
    message_id: str
    model: str
    usage: JsonObject


@dataclasses.dataclass
class _Rule:
    predicate: Predicate
    reply: Reply
    times: int | None  # None: forever
    used: int = 0


# -- the server ----------------------------------------------------------------------------


class FakeAnthropic:
    """The fake's state: the recorded requests and the scripted rules."""

    def __init__(self, default: Reply | None = None) -> None:
        self.url = ""
        self.default = default or text()
        self._lock = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._rules: list[_Rule] = []
        self.answered: list[tuple[int, Reply]] = []
        self.sent: list[SentMessage] = []

    # the test's side

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]

    def turns(self) -> list[RecordedRequest]:
        """The main-conversation requests (see :func:`is_turn`)."""
        return [r for r in self.requests if is_turn(r)]

    def script(self, *replies: Reply, when: Predicate = is_turn, times: int | None = 1) -> None:
        """Answer the next requests that ``when`` accepts with ``replies``, in order.

        Each reply is one rule used ``times`` times (``None``: for every such request).
        """
        with self._lock:
            for reply in replies:
                self._rules.append(_Rule(when, reply, times))

    def pending(self) -> int:
        """How many scripted replies are still unused (rules used forever count 0)."""
        with self._lock:
            return sum(
                r.times - r.used for r in self._rules if r.times is not None and r.used < r.times
            )

    def wait_for(self, predicate: Predicate, timeout: float = 10.0) -> RecordedRequest:
        """The first request (past or future) that ``predicate`` accepts; ``TimeoutError``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for request in self._requests:
                    if predicate(request):
                        return request
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [
                        f"{r.method} {r.path} {r.last_user_text()[:60]!r}" for r in self._requests
                    ]
                    raise TimeoutError(f"no matching request in {timeout}s; saw {seen}")
                self._lock.wait(left)

    # the handler's side

    def record(
        self, method: str, path: str, headers: dict[str, str], body: JsonObject | None
    ) -> RecordedRequest:
        with self._lock:
            request = RecordedRequest(len(self._requests), method, path, headers, body, time.time())
            self._requests.append(request)
            self._lock.notify_all()
            return request

    def note_sent(
        self, request: RecordedRequest, message_id: str, model: str, reply: Reply
    ) -> None:
        with self._lock:
            self.sent.append(SentMessage(request.index, message_id, model, reply.usage()))

    def choose(self, request: RecordedRequest) -> Reply:
        with self._lock:
            for rule in self._rules:
                if rule.times is not None and rule.used >= rule.times:
                    continue
                if rule.predicate(request):
                    rule.used += 1
                    self.answered.append((request.index, rule.reply))
                    return rule.reply
            return self.default


def _sse(event: str, data: JsonObject) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(
    reply: Reply, model: str, message_id: str = ""
) -> Iterator[tuple[str, JsonObject]]:
    """The server-sent events of a streamed reply, as the real API orders them."""
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id or _next_id("msg"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": reply.usage(output_tokens=1),
            },
        },
    )
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            yield "content_block_start", _block_start(index, start)
            raw = json.dumps(block["input"])
            for piece in _pieces(raw):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield "content_block_delta", _block_delta(index, delta)
        else:
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in _pieces(str(block["text"])):
                yield (
                    "content_block_delta",
                    _block_delta(index, {"type": "text_delta", "text": piece}),
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: JsonObject) -> JsonObject:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _block_delta(index: int, delta: JsonObject) -> JsonObject:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _pieces(value: str, size: int = 40) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def message_json(reply: Reply, model: str, message_id: str = "") -> JsonObject:
    """The non-streamed answer of a reply."""
    return {
        "id": message_id or _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(reply.blocks),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": reply.usage(),
    }


class _Handler(BaseHTTPRequestHandler):
    """One connection to the fake; ``fake`` is set on the subclass each server gets."""

    protocol_version = "HTTP/1.1"
    fake: FakeAnthropic

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> JsonObject | None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
        return value if isinstance(value, dict) else {"_json": value}

    def _record(self) -> RecordedRequest:
        body = self._read_body()
        headers = {k: v for k in KEPT_HEADERS if (v := self.headers.get(k)) is not None}
        return self.fake.record(self.command, self.path, headers, body)

    def _send_json(
        self, status: int, value: JsonObject, extra: tuple[tuple[str, str], ...] = ()
    ) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", _next_id("req"))
        for name, header_value in extra:
            self.send_header(name, header_value)
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        error = {"type": "not_found_error", "message": f"Not found: {self.path}"}
        self._send_json(404, {"type": "error", "error": error})

    def do_GET(self) -> None:
        self._record()
        self._not_found()

    def do_HEAD(self) -> None:
        self._record()
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_CONNECT(self) -> None:
        # The agent's HTTPS_PROXY points here: a tunnel asked for is a request for the
        # internet. It is recorded (method CONNECT, path host:port) and refused.
        self._record()
        self.send_response(403)
        self.send_header("content-length", "0")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_POST(self) -> None:
        request = self._record()
        route = self.path.split("?", 1)[0]
        if route == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": _estimate_tokens(request.body)})
        elif route == "/v1/messages":
            self._messages(request)
        else:
            self._not_found()

    def _messages(self, request: RecordedRequest) -> None:
        reply = self.fake.choose(request)
        model = request.model or "claude-fake"
        if reply.status != 200 or reply.error is not None:
            reply.wait()
            self._send_json(reply.status, reply.error or {}, reply.headers)
            return
        message_id = _next_id("msg")
        self.fake.note_sent(request, message_id, model, reply)
        if not (request.body or {}).get("stream"):
            reply.wait()
            self._send_json(200, message_json(reply, model, message_id), reply.headers)
        else:
            self._stream(reply, model, message_id)

    def _stream(self, reply: Reply, model: str, message_id: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", _next_id("req"))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        try:
            for number, (event, data) in enumerate(stream_events(reply, model, message_id)):
                self._chunk(_sse(event, data))
                if number == 0:
                    reply.wait()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _estimate_tokens(body: JsonObject | None) -> int:
    return max(1, len(json.dumps(body or {})) // 4)


@contextlib.contextmanager
def running_fake_anthropic(default: Reply | None = None) -> Iterator[FakeAnthropic]:
    """A fake on ``127.0.0.1`` (a free port) for the block's length; ``.url`` is its base."""
    fake = FakeAnthropic(default)
    handler = type("FakeAnthropicHandler", (_Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-anthropic", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
