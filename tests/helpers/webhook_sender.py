"""A sender that signs like GitHub, and a receiver on a free loopback port in a thread.

The sender writes raw HTTP/1.1 over a socket, so a test decides every byte (a missing
``Content-Length``, a head sent a byte at a time); it signs the body as GitHub does:
``X-Hub-Signature-256: sha256=<HMAC-SHA256 hex of the raw body under the secret>``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from the_loop.eventlog.log import EventLog
from the_loop.webhook.inbox import Inbox
from the_loop.webhook.server import Receiver
from the_loop.webhook.settings import Limits, ReceiverSettings

SECRET = "it's a secret to everybody"
PATH = "/gh-webhook"
Address = tuple[str, int]


def github_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Answer:
    """What the receiver answered: status, headers (names lowercased), body."""

    status: int
    headers: dict[str, str]
    body: str


def request(
    body: bytes,
    *,
    event: str = "issue_comment",
    delivery: str | None = None,
    secret: str | None = SECRET,
    signature: str | None = None,
    method: str = "POST",
    path: str = PATH,
    content_length: bool = True,
    extra: Sequence[tuple[str, str]] = (),
) -> bytes:
    """The bytes GitHub would send: its headers, signed unless ``secret`` is None."""
    headers = [
        ("Host", "receiver.test"),
        ("User-Agent", "GitHub-Hookshot/test"),
        ("Content-Type", "application/json"),
        ("X-GitHub-Event", event),
        ("X-GitHub-Delivery", delivery or str(uuid.uuid4())),
        ("X-GitHub-Hook-ID", "12345"),
    ]
    if signature is not None:
        headers.append(("X-Hub-Signature-256", signature))
    elif secret is not None:
        headers.append(("X-Hub-Signature-256", github_signature(secret, body)))
    if content_length:
        headers.append(("Content-Length", str(len(body))))
    headers.extend(extra)
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers)
    return (head + "\r\n").encode("latin-1") + body


def read_answer(connection: socket.socket) -> Answer:
    """Read until the receiver closes the connection, and parse its answer."""
    chunks: list[bytes] = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 "):
        raise AssertionError(f"not an HTTP answer: {raw[:200]!r}")
    pairs = [line.split(": ", 1) for line in lines[1:] if ": " in line]
    headers = {name.lower(): value for name, value in pairs}
    return Answer(int(lines[0].split()[1]), headers, body.decode("utf-8"))


def send(address: Address, data: bytes, *, timeout: float = 30.0) -> Answer:
    """Send ``data`` on a new connection and read the answer."""
    with socket.create_connection(address, timeout=timeout) as connection:
        connection.sendall(data)
        return read_answer(connection)


def deliver(address: Address, payload: object, **options: object) -> Answer:
    """A signed delivery of ``payload`` (JSON), as GitHub sends one."""
    body = json.dumps(payload).encode("utf-8")
    return send(address, request(body, **options))  # type: ignore[arg-type]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a receiver started as a process)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def comment_payload(number: int = 15, comment_id: int = 1001) -> dict[str, object]:
    """A small ``issue_comment`` payload of the shape GitHub sends."""
    return {
        "action": "created",
        "issue": {"number": number, "title": "Fix it", "state": "open", "labels": []},
        "comment": {"id": comment_id, "body": "Please also cover the empty case.",
                    "user": {"login": "alice"}},
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "alice"},
    }  # fmt: skip


@dataclass
class Running:
    """A receiver serving from a thread of the test: its address, inbox and event log."""

    receiver: Receiver
    address: Address
    inbox: Inbox
    event_log: Path

    def events(self, name: str | None = None) -> list[dict[str, object]]:
        if not self.event_log.exists():
            return []
        found = [json.loads(line) for line in self.event_log.read_text("utf-8").splitlines()]
        return [event for event in found if name is None or event["event"] == name]


@contextlib.contextmanager
def receiver_in_thread(
    root: Path, *, secret: str | None = SECRET, limits: Limits | None = None
) -> Iterator[Running]:
    """A real receiver on a free loopback port, stopped (and joined) at the end."""
    inbox = Inbox(root / "local" / "webhook-inbox", lock_path=root / "locks" / "inbox.lock")
    event_log = root / "logs" / "events.jsonl"
    settings = ReceiverSettings("127.0.0.1", 0, PATH, secret.encode() if secret else None)
    receiver = Receiver(
        settings,
        inbox=inbox,
        events=EventLog(event_log, source="webhook"),
        status_file=root / "local" / "webhook-status.json",
        limits=limits,
    )
    address = receiver.bind()
    thread = threading.Thread(target=receiver.serve, name="receiver", daemon=True)
    thread.start()
    try:
        yield Running(receiver, address, inbox, event_log)
    finally:
        receiver.stop()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the receiver did not stop"
