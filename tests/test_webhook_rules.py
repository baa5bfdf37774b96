"""The receiver's checks as plain functions: a request head read strictly, the refusals in
their order, and the signature GitHub computes."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from the_loop.webhook.rules import (
    MAX_BODY_BYTES,
    Answer,
    check_head,
    check_signature,
    read_delivery,
    signature,
)
from the_loop.webhook.settings import is_loopback
from the_loop.webhook.wire import BadRequest, Head, parse_head

PATH = "/gh-webhook"


def head(*lines: str, request_line: str = f"POST {PATH} HTTP/1.1") -> Head:
    return parse_head(("\r\n".join((request_line, *lines)) + "\r\n\r\n").encode("latin-1"))


def status_of(answer: Answer | None) -> tuple[int, str] | None:
    return None if answer is None else (answer.status, answer.reason)


def test_the_signature_is_github_s_hmac_sha256_of_the_raw_body() -> None:
    body = b'{"zen": "Design for failure."}'
    expected = hmac.new(b"secret", body, hashlib.sha256).hexdigest()
    assert signature(b"secret", body) == f"sha256={expected}"
    signed = head(f"X-Hub-Signature-256: sha256={expected}")
    assert check_signature(signed, body, b"secret") is None
    assert status_of(check_signature(signed, body + b" ", b"secret")) == (401, "bad-signature")
    twice = head(
        f"X-Hub-Signature-256: sha256={expected}", f"X-Hub-Signature-256: sha256={expected}"
    )
    assert status_of(check_signature(twice, body, b"secret")) == (401, "bad-signature")
    assert check_signature(head(), body, None) is None  # --insecure: nothing to check


@pytest.mark.parametrize(
    ("lines", "request_line", "expected"),
    [
        ((), "POST /other HTTP/1.1", (404, "wrong-path")),
        (("Content-Length: 99999999999",), "POST /other HTTP/1.1", (404, "wrong-path")),
        ((), f"GET {PATH} HTTP/1.1", (405, "wrong-method")),
        ((), f"POST {PATH} HTTP/1.1", (411, "no-content-length")),
        (("Transfer-Encoding: chunked",), f"POST {PATH} HTTP/1.1", (411, "no-content-length")),
        (("Transfer-Encoding: chunked", "Content-Length: 2"), f"POST {PATH} HTTP/1.1",
         (400, "length-and-encoding")),
        (("Content-Length: 2", "Content-Length: 2"), f"POST {PATH} HTTP/1.1",
         (400, "repeated-header")),
        (("Content-Length: -1",), f"POST {PATH} HTTP/1.1", (400, "bad-content-length")),
        ((f"Content-Length: {MAX_BODY_BYTES + 1}",), f"POST {PATH} HTTP/1.1",
         (413, "body-too-large")),
        ((f"Content-Length: {MAX_BODY_BYTES}",), f"POST {PATH}?x=1 HTTP/1.1", None),
    ],
)  # fmt: skip
def test_the_head_is_checked_path_then_method_then_length(
    lines: tuple[str, ...], request_line: str, expected: tuple[int, str] | None
) -> None:
    assert status_of(check_head(head(*lines, request_line=request_line), PATH)) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"POST /gh-webhook HTTP/1.1\nHost: x\r\n\r\n",
        b"POST /gh-webhook HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
        b"POST /gh-webhook HTTP/1.1\r\nHost : x\r\n\r\n",
        b"POST /gh-webhook HTTP/1.1\r\nHost: a\x00b\r\n\r\n",
        b"POST /gh-webhook HTTP/2\r\nHost: x\r\n\r\n",
        b"POST  /gh-webhook HTTP/1.1\r\n\r\n",
    ],
)
def test_a_head_no_careful_client_sends_is_a_bad_request(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_head(raw)


def test_empty_lines_before_the_request_line_are_skipped() -> None:
    parsed = parse_head(b"\r\nPOST /gh-webhook HTTP/1.1\r\nX-GitHub-Event: ping\r\n\r\n")
    assert (parsed.method, parsed.path, parsed.value("x-github-event")) == ("POST", PATH, "ping")


def test_a_delivery_is_its_headers_and_a_json_object() -> None:
    good = head("X-GitHub-Event: issues", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958")
    received = read_delivery(good, b'{"action": "labeled"}')
    assert not isinstance(received, Answer)
    assert (received.event, received.payload) == ("issues", {"action": "labeled"})
    assert status_of(read_delivery(good, b"\xff{}")) == (400, "not-json")  # type: ignore[arg-type]
    too_deep = b'{"a": ' + b"[" * 63 + b"]" * 63 + b"}"
    assert status_of(read_delivery(good, too_deep)) == (400, "too-deep")  # type: ignore[arg-type]
    form = head(
        "X-GitHub-Event: issues",
        "X-GitHub-Delivery: d",
        "Content-Type: application/x-www-form-urlencoded",
    )
    refused = read_delivery(form, b"payload=%7B%7D")
    assert isinstance(refused, Answer) and "content type to application/json" in refused.text


@pytest.mark.parametrize(
    "event",
    ["projects_v2_item", "projects_v2", "issues", "x", "merge_group", "a" * 64, "v2"],
)
def test_any_event_name_github_can_send_is_a_delivery(event: str) -> None:
    sent = head(f"X-GitHub-Event: {event}", "X-GitHub-Delivery: d-1")
    received = read_delivery(sent, b"{}")
    assert not isinstance(received, Answer)
    assert received.event == event


@pytest.mark.parametrize(
    "event", ["", "a" * 65, "Issues", "issue-comment", "issue.comment", "issue comment", "é"]
)
def test_what_cannot_be_an_event_name_is_400_bad_event(event: str) -> None:
    sent = head(f"X-GitHub-Event: {event}", "X-GitHub-Delivery: d-1")
    assert status_of(read_delivery(sent, b"{}")) == (400, "bad-event")  # type: ignore[arg-type]


def test_loopback_is_decided_by_every_address_a_host_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.1.2.3")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.0.2.1")
    assert not is_loopback("no-such-host.invalid")
