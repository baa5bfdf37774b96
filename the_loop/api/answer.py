"""What the API writes back: JSON in the project's envelope (or the board's page), with an
``ETag`` and ``304`` for a client that has it, and never a CORS header."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus

from the_loop.commands.render import JSON_VERSION

JSON_TYPE = "application/json; charset=utf-8"
HTML_TYPE = "text/html; charset=utf-8"
#: The page a browser gets without the board's cookie (or with a spent code).
UNAUTHORIZED_PAGE = (
    b"<!doctype html><html lang=en><meta charset=utf-8><title>the-loop: 401</title>"
    b'<main id="unauthorized"><h1>401: not signed in</h1><p>Open the board through the link '
    b"<code>the-loop serve</code> printed, or a new one from <code>the-loop serve link</code>: "
    b"each link opens the board once, within ten minutes.</p></main></html>\n"
)
#: Sent with every answer: nothing is cached, sniffed, framed or referred elsewhere.
_ALWAYS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Connection", "close"),
)


@dataclass(frozen=True)
class Answer:
    """An answer's status, body and own headers (the common ones are added on encoding)."""

    status: int
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: tuple[tuple[str, str], ...] = ()
    #: The body's tag when already known (a cached body's), else made from the body.
    etag: str | None = None


def document(command: str, items: Iterable[object], *, summary: object = None) -> bytes:
    """The envelope of a successful read: ``command``, ``summary`` and ``items``."""
    body: dict[str, object] = {
        "version": JSON_VERSION,
        "command": command,
        "ok": True,
        "summary": summary if summary is not None else {},
        "items": list(items),
        "warnings": [],
        "errors": [],
    }
    return (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")


def document_of_rows(command: str, rows: list[bytes]) -> bytes:
    """:func:`document` of items already encoded one by one (``json.dumps`` of each):
    the same bytes, joined without encoding them again."""
    head = json.dumps({"version": JSON_VERSION, "command": command, "ok": True, "summary": {}})
    tail = ', "warnings": [], "errors": []}\n'
    return (head[:-1] + ', "items": [').encode() + b", ".join(rows) + b"]" + tail.encode()


def refusal(status: int, command: str, sentence: str, *headers: tuple[str, str]) -> Answer:
    """An error in the envelope: ``ok`` false, ``sentence`` its one error."""
    body: dict[str, object] = {
        "version": JSON_VERSION,
        "command": command,
        "ok": False,
        "summary": {},
        "items": [],
        "warnings": [],
        "errors": [sentence],
    }
    encoded = (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")
    return Answer(status, encoded, headers=tuple(headers))


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def encode(answer: Answer, *, method: str = "GET", if_none_match: str | None = None) -> bytes:
    """The bytes of ``answer``: a 200 carries its ``ETag`` and becomes a bodiless 304 when
    ``if_none_match`` names it; a ``HEAD`` gets the headers alone."""
    status, body, headers = answer.status, answer.body, list(answer.headers)
    if status == HTTPStatus.OK:
        tag = answer.etag or etag_of(body)
        headers.append(("ETag", tag))
        if if_none_match is not None and tag in {t.strip() for t in if_none_match.split(",")}:
            status, body = HTTPStatus.NOT_MODIFIED, b""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
    if status != HTTPStatus.NOT_MODIFIED:
        lines += [f"Content-Type: {answer.content_type}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (*_ALWAYS, *headers)]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if method == "HEAD" else head + body


__all__ = [
    "HTML_TYPE",
    "JSON_TYPE",
    "UNAUTHORIZED_PAGE",
    "Answer",
    "document",
    "document_of_rows",
    "encode",
    "etag_of",
    "refusal",
]
