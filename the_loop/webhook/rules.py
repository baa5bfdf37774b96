"""What the receiver answers a request, checked in the order the reference page gives.

Before the body is read: the path (404), the method (405), ``Content-Length`` present
(411) and at most :data:`MAX_BODY_BYTES` (413). After: the signature (401), before any
JSON is parsed; then the GitHub headers and a JSON object (400). Every refusal is an
:class:`Answer` whose body is one plain-text sentence.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal, cast

from the_loop.fsio import MAX_JSON_DEPTH, parse_json
from the_loop.records.tree import nesting_exceeds
from the_loop.webhook.wire import BadRequest, Head

#: GitHub's own cap on a delivery's payload.
MAX_BODY_BYTES = 25 * 1024 * 1024
SIGNATURE_HEADER = "X-Hub-Signature-256"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
#: What a delivery id may be: GitHub sends a GUID.
DELIVERY_ID = re.compile(r"[A-Za-z0-9-]{1,100}\Z")
#: What an event name may be: GitHub's are lowercase words and digits joined by ``_``
#: (``projects_v2_item``); an event not acted on is answered 202 and ignored.
EVENT_NAME = re.compile(r"[a-z0-9_]{1,64}\Z")
_DIGITS = re.compile(r"[0-9]{1,12}\Z")

#: What became of a request: refused, or one of the ways a delivery is taken.
Outcome = Literal["rejected", "accepted", "duplicate", "ping", "ignored"]


@dataclass(frozen=True)
class Answer:
    """The answer to one request: its status, the event's ``reason`` word, its body."""

    status: int
    reason: str
    text: str
    outcome: Outcome = "rejected"
    headers: tuple[tuple[str, str], ...] = ()


def refuse(status: int, reason: str, sentence: str, **headers: str) -> Answer:
    """A refusal: ``<status> <phrase>: <sentence>`` as its body."""
    text = f"{status} {HTTPStatus(status).phrase}: {sentence}\n"
    return Answer(status, reason, text, "rejected", tuple(headers.items()))


def taken(outcome: Outcome, status: int, sentence: str) -> Answer:
    """A delivery taken (stored, already stored, a ping, or ignored)."""
    return Answer(status, outcome, sentence + "\n", outcome)


def check_head(head: Head, path: str) -> Answer | None:
    """The refusal of a request from its head alone (404, 405, 411, 413, 400), or None:
    its body may be read. Nothing of the body has been read when this refuses."""
    if head.path != path:
        return refuse(404, "wrong-path", f"this receiver answers on {path} only")
    if head.method != "POST":
        return refuse(405, "wrong-method", f"{path} takes POST only", Allow="POST")
    try:
        encoding = head.value("transfer-encoding")
        length = head.value("content-length")
    except BadRequest as error:
        return refuse(400, error.reason, str(error))
    if encoding is not None and length is not None:
        return refuse(400, "length-and-encoding", "Content-Length and Transfer-Encoding together")
    if length is None:
        said = "sends Transfer-Encoding instead" if encoding is not None else "has none"
        return refuse(411, "no-content-length", f"a delivery needs a Content-Length; this {said}")
    if not _DIGITS.match(length):
        return refuse(400, "bad-content-length", "Content-Length is not a number of bytes")
    if int(length) > MAX_BODY_BYTES:
        return refuse(
            413,
            "body-too-large",
            f"a body of {int(length)} bytes is over the limit of {MAX_BODY_BYTES} (25 MiB)",
        )
    return None


def content_length(head: Head) -> int:
    """The body's length of a head :func:`check_head` let through."""
    return int(head.value("content-length") or 0)


def expects_continue(head: Head) -> bool:
    """Whether the client waits for ``100 Continue`` before it sends its body."""
    return any(value.lower() == "100-continue" for value in head.values("expect"))


def signature(secret: bytes, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of ``body`` under ``secret``, as GitHub signs."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def check_signature(head: Head, body: bytes, secret: bytes | None) -> Answer | None:
    """401 unless ``X-Hub-Signature-256`` signs ``body`` under ``secret`` (compared in
    constant time); None when it does, or when there is no secret (``--insecure``)."""
    if secret is None:
        return None
    sent = head.values(SIGNATURE_HEADER)
    if not sent:
        return refuse(401, "no-signature", f"no {SIGNATURE_HEADER}: is the webhook's secret set?")
    expected = signature(secret, body).encode("ascii")
    if len(sent) != 1 or not hmac.compare_digest(sent[-1].encode("latin-1"), expected):
        return refuse(401, "bad-signature", f"{SIGNATURE_HEADER} does not sign this body")
    return None


@dataclass(frozen=True)
class Received:
    """A signed delivery: GitHub's event name and delivery id, the body as sent, parsed."""

    event: str
    delivery_id: str
    text: str
    payload: dict[str, Any]


def read_delivery(head: Head, body: bytes) -> Received | Answer:
    """The delivery of a signed request, or its 400: the event and delivery headers, then
    a body that is UTF-8 JSON holding an object."""
    try:
        event, delivery = head.value(EVENT_HEADER), head.value(DELIVERY_HEADER)
    except BadRequest as error:
        return refuse(400, error.reason, str(error))
    if event is None or not EVENT_NAME.match(event):
        return refuse(400, "bad-event", f"{EVENT_HEADER} is missing or not an event name")
    if delivery is None or not DELIVERY_ID.match(delivery):
        return refuse(400, "bad-delivery", f"{DELIVERY_HEADER} is missing or not a delivery id")
    try:
        text = body.decode("utf-8")
        payload: object = parse_json(text)
    except ValueError:
        return refuse(400, "not-json", "the body is not JSON" + _content_type_hint(head))
    if not isinstance(payload, dict):
        return refuse(400, "not-an-object", "the body is JSON but not an object")
    document = cast(dict[str, Any], payload)
    if nesting_exceeds(document, MAX_JSON_DEPTH - 1):  # the inbox file wraps it once more
        return refuse(400, "too-deep", f"the body nests deeper than {MAX_JSON_DEPTH - 1} levels")
    return Received(event, delivery, text, document)


def _content_type_hint(head: Head) -> str:
    sent = ",".join(head.values("content-type")).lower()
    if "application/json" in sent:
        return ""
    return ": set the webhook's content type to application/json on GitHub"
