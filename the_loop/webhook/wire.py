"""One HTTP/1.1 request head, read strictly, and the plain-text answers the receiver writes.

The receiver answers one request per connection and closes it, so nothing here keeps a
connection's state: no keep-alive, no pipelining, no chunked bodies (a request must say
its ``Content-Length``). Anything a careful client never sends is a :class:`BadRequest`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

#: The most bytes a request's head (request line and headers) may take; GitHub sends ~2 KiB.
MAX_HEAD_BYTES = 16 * 1024
#: The most header lines a request may have.
MAX_HEADER_LINES = 100
#: The end of a request's head.
HEAD_END = b"\r\n\r\n"

_REQUEST_LINE = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) (\S{1,8000}) HTTP/(1\.[01])\Z")
_FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}\Z")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class BadRequest(ValueError):
    """A request the receiver refuses with 400 before reading its body: ``reason`` is the
    event's word for it, the message the sentence of the answer."""

    def __init__(self, reason: str, sentence: str) -> None:
        super().__init__(sentence)
        self.reason = reason


@dataclass(frozen=True)
class Head:
    """A request's method, target, HTTP version and header fields (names lowercased)."""

    method: str
    target: str
    version: str
    fields: Mapping[str, tuple[str, ...]]

    @property
    def path(self) -> str:
        """The target without its query."""
        return self.target.split("?", 1)[0]

    def values(self, name: str) -> tuple[str, ...]:
        """Every value of the header ``name`` (any case), in the order sent."""
        return self.fields.get(name.lower(), ())

    def value(self, name: str) -> str | None:
        """The value of the header ``name`` when it was sent once; None when absent.

        A header sent twice raises :class:`BadRequest`: none that the receiver reads
        may be repeated.
        """
        found = self.values(name)
        if len(found) > 1:
            raise BadRequest("repeated-header", f"the header {name} is sent more than once")
        return found[0] if found else None


def parse_head(raw: bytes) -> Head:
    """The :class:`Head` of ``raw`` (a request's bytes up to and with ``HEAD_END``).

    Empty lines before the request line are skipped; a bare CR or LF, a folded or
    malformed header line, or a control character in a value raises :class:`BadRequest`.
    """
    text = raw.decode("latin-1").lstrip("\r\n")
    lines = text.removesuffix("\r\n\r\n").split("\r\n")
    if any("\r" in line or "\n" in line for line in lines):
        raise BadRequest("bad-line", "a line of the request ends in a bare CR or LF")
    match = _REQUEST_LINE.match(lines[0])
    if match is None:
        raise BadRequest("bad-request-line", "the request line is not METHOD TARGET HTTP/1.x")
    if len(lines) - 1 > MAX_HEADER_LINES:
        raise BadRequest("too-many-headers", f"more than {MAX_HEADER_LINES} header lines")
    fields: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, value = _field(line)
        fields.setdefault(name, []).append(value)
    method, target, version = match.groups()
    return Head(method, target, version, {name: tuple(v) for name, v in fields.items()})


def _field(line: str) -> tuple[str, str]:
    name, colon, value = line.partition(":")
    if not colon or not _FIELD_NAME.match(name):
        raise BadRequest("bad-header", "a header line is not NAME: VALUE")
    value = value.strip(" \t")
    if _CONTROL.search(value):
        raise BadRequest("bad-header", f"the header {name} holds a control character")
    return name.lower(), value


def response(status: int, text: str, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """The bytes of an answer with the plain-text body ``text``; the connection then closes."""
    body = text.encode("utf-8")
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "Content-Type: text/plain; charset=utf-8",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


#: What a client that sent ``Expect: 100-continue`` is told before it sends its body.
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
