"""The real receiver on a loopback port, against a sender that signs like GitHub: what it
takes, what it refuses (in order, each refusal one event and a plain-text answer), and a
slow client that never delays another."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.webhook_sender import (
    PATH,
    SECRET,
    Running,
    comment_payload,
    deliver,
    github_signature,
    read_answer,
    receiver_in_thread,
    request,
    send,
)
from the_loop.webhook.rules import MAX_BODY_BYTES


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    with receiver_in_thread(tmp_path / "state") as receiver:
        yield receiver


def rejected(running: Running) -> list[tuple[object, object]]:
    return [(e["status"], e["reason"]) for e in running.events("webhook.rejected")]


def test_a_signed_delivery_is_stored_then_answered_202(running: Running) -> None:
    answer = deliver(running.address, comment_payload(), delivery="d-0001")
    assert (answer.status, answer.body) == (202, "accepted: delivery d-0001 is stored\n")
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    [entry] = running.inbox.pending()
    stored = running.inbox.read(entry)
    assert (stored.delivery_id, stored.event, stored.payload) == (
        "d-0001",
        "issue_comment",
        comment_payload(),
    )
    [event] = running.events("webhook.accepted")
    assert (event["delivery"], event["github_event"]) == ("d-0001", "issue_comment")


def test_the_body_is_kept_as_github_signed_it_but_for_line_breaks(running: Running) -> None:
    body = b'{ "action" : "created",\r\n  "comment": {"body": "caf\xc3\xa9 \\n"} }'
    assert send(running.address, request(body, delivery="d-raw")).status == 202
    [entry] = running.inbox.pending()
    line = entry.path.read_bytes()[entry.offset : entry.offset + entry.length]
    assert line.endswith(
        b'"payload":{ "action" : "created",    "comment": {"body": "caf\xc3\xa9 \\n"} }}\n'
    )
    assert running.inbox.read(entry).payload == {
        "action": "created",
        "comment": {"body": "café \n"},
    }


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (None, "no-signature"),
        ("sha256=" + "0" * 64, "bad-signature"),
        ("sha1=0123", "bad-signature"),
        (github_signature("another secret", b'{"action": "created"}'), "bad-signature"),
    ],
)
def test_a_missing_or_wrong_signature_is_401_and_nothing_is_stored(
    running: Running, signature: str | None, reason: str
) -> None:
    body = b'{"action": "created"}'
    data = request(body, secret=None, signature=signature)
    answer = send(running.address, data)
    assert answer.status == 401
    assert answer.body.startswith("401 Unauthorized: ")
    assert running.inbox.pending() == []
    assert rejected(running) == [(401, reason)]


def test_the_signature_is_checked_before_any_json_is_parsed(running: Running) -> None:
    answer = send(running.address, request(b"not json at all", secret="wrong"))
    assert answer.status == 401
    assert rejected(running) == [(401, "bad-signature")]


def test_a_body_that_is_not_a_json_object_is_400(running: Running) -> None:
    for body, reason in ((b"not json", "not-json"), (b"[1, 2]", "not-an-object")):
        answer = send(running.address, request(body))
        assert answer.status == 400 and answer.body.startswith("400 Bad Request: ")
        assert rejected(running)[-1] == (400, reason)
    assert running.inbox.pending() == []


def test_a_re_sent_delivery_id_is_answered_202_and_stored_once(running: Running) -> None:
    first = deliver(running.address, comment_payload(), delivery="d-again")
    again = deliver(running.address, comment_payload(), delivery="d-again")
    assert (first.status, again.status) == (202, 202)
    assert again.body == "accepted: delivery d-again is here\n"
    assert [entry.delivery_id for entry in running.inbox.pending()] == ["d-again"]
    assert len(running.events("webhook.duplicate")) == 1
    running.inbox.mark_processed(["d-again"])
    assert deliver(running.address, comment_payload(), delivery="d-again").status == 202
    assert running.inbox.pending() == []  # processed: still a duplicate
    assert len(running.events("webhook.duplicate")) == 2


def test_a_ping_is_answered_200_and_not_stored(running: Running) -> None:
    answer = deliver(running.address, {"zen": "Keep it logically awesome.", "hook_id": 1},
                     event="ping")  # fmt: skip
    assert answer.status == 200
    assert running.inbox.pending() == []
    assert len(running.events("webhook.ping")) == 1


def test_an_event_the_loop_does_not_act_on_is_202_ignored_and_not_stored(
    running: Running,
) -> None:
    answer = deliver(running.address, {"action": "started"}, event="watch", delivery="d-w")
    assert (answer.status, answer.body) == (202, "accepted: watch events are not acted on\n")
    assert running.inbox.pending() == []
    [event] = running.events("webhook.ignored")
    assert (event["delivery"], event["github_event"]) == ("d-w", "watch")


def test_an_event_name_with_a_digit_is_202_ignored_as_any_event_not_acted_on(
    running: Running,
) -> None:
    """A webhook set to send everything sends ``projects_v2_item``: not a failed delivery."""
    payload = {"action": "edited", "projects_v2_item": {"id": 7}}
    answer = deliver(running.address, payload, event="projects_v2_item", delivery="d-p2")
    assert (answer.status, answer.body) == (
        202,
        "accepted: projects_v2_item events are not acted on\n",
    )
    assert running.inbox.pending() == []
    [event] = running.events("webhook.ignored")
    assert (event["delivery"], event["github_event"]) == ("d-p2", "projects_v2_item")
    assert rejected(running) == []


def test_another_path_is_404_and_another_method_405(running: Running) -> None:
    assert send(running.address, request(b"{}", path="/elsewhere")).status == 404
    answer = send(running.address, request(b"", method="GET", content_length=False))
    assert (answer.status, answer.headers["allow"]) == (405, "POST")
    assert rejected(running) == [(404, "wrong-path"), (405, "wrong-method")]


def test_the_path_is_checked_before_the_length(running: Running) -> None:
    data = request(b"", path="/elsewhere", content_length=False,
                   extra=[("Content-Length", str(MAX_BODY_BYTES + 1))])  # fmt: skip
    assert send(running.address, data).status == 404


def test_a_missing_content_length_is_411(running: Running) -> None:
    answer = send(running.address, request(b"", content_length=False))
    assert answer.status == 411
    chunked = request(b"", content_length=False, extra=[("Transfer-Encoding", "chunked")])
    assert send(running.address, chunked + b"2\r\n{}\r\n0\r\n\r\n").status == 411
    assert rejected(running) == [(411, "no-content-length"), (411, "no-content-length")]


def test_a_body_over_25_mib_is_413_before_a_byte_of_it_is_sent(running: Running) -> None:
    """Only the head is sent: the answer comes without waiting for the body."""
    head = request(b"", content_length=False, extra=[("Content-Length", str(MAX_BODY_BYTES + 1))])
    with socket.create_connection(running.address, timeout=10) as connection:
        connection.sendall(head)
        answer = read_answer(connection)
    assert answer.status == 413
    assert answer.body == (
        f"413 Request Entity Too Large: a body of {MAX_BODY_BYTES + 1} bytes is over the "
        f"limit of {MAX_BODY_BYTES} (25 MiB)\n"
    )
    assert rejected(running) == [(413, "body-too-large")]


def test_a_body_of_exactly_25_mib_is_taken(running: Running) -> None:
    filler = "x" * (MAX_BODY_BYTES - len('{"filler": ""}'))
    body = json.dumps({"filler": filler}).encode()
    assert len(body) == MAX_BODY_BYTES
    assert send(running.address, request(body, delivery="d-big"), timeout=60).status == 202
    assert [entry.delivery_id for entry in running.inbox.pending()] == ["d-big"]


def test_a_head_over_its_cap_is_431(running: Running) -> None:
    data = request(b"{}", extra=[("X-Padding", "p" * 20_000)])
    assert send(running.address, data).status == 431
    assert rejected(running) == [(431, "head-too-large")]


def test_missing_github_headers_are_400_after_the_signature(running: Running) -> None:
    body = b"{}"
    no_event = request(body).replace(b"X-GitHub-Event: issue_comment\r\n", b"")
    assert send(running.address, no_event).status == 400
    bad_delivery = request(body, delivery="../../etc/passwd")
    assert send(running.address, bad_delivery).status == 400
    assert rejected(running) == [(400, "bad-event"), (400, "bad-delivery")]


def trickle(
    address: tuple[str, int], data: bytes, answers: list[int], started: threading.Event
) -> None:
    """Send ``data`` a byte a second until the receiver answers; record its status."""
    with socket.create_connection(address, timeout=60) as connection:
        started.set()
        for byte in data:
            if select.select([connection], [], [], 1.0)[0]:
                break  # the receiver answered (and stopped reading): read it
            connection.send(bytes([byte]))
        answers.append(read_answer(connection).status)


@pytest.mark.slow
def test_twenty_trickling_heads_among_200_connections_delay_no_other(running: Running) -> None:
    """180 deliveries are answered while 20 connections send their heads a byte a second;
    those are cut off at the head's deadline (408), not served for ever."""
    trickled: list[int] = []
    threads: list[threading.Thread] = []
    for number in range(20):
        started = threading.Event()
        data = request(b"{}", delivery=f"slow-{number}")
        thread = threading.Thread(target=trickle, args=(running.address, data, trickled, started))
        thread.start()
        threads.append(thread)
        assert started.wait(10)
    answers: list[int] = []
    began = time.monotonic()

    def one(number: int) -> None:
        answers.append(
            deliver(running.address, comment_payload(), delivery=f"fast-{number}").status
        )

    fast = [threading.Thread(target=one, args=(number,)) for number in range(180)]
    for thread in fast:
        thread.start()
    for thread in fast:
        thread.join(timeout=60)
    took = time.monotonic() - began
    assert sorted(answers) == [202] * 180
    assert took < 8.0, f"180 deliveries took {took:.1f} s beside the trickling heads"
    assert all(thread.is_alive() for thread in threads), "the trickling heads were still sending"
    for thread in threads:
        thread.join(timeout=60)
    assert trickled == [408] * 20
    assert len(running.inbox.pending()) == 180
    assert sorted(set(rejected(running))) == [(408, "head-timeout")]


def test_a_connection_closed_mid_body_is_one_event_and_nothing_stored(running: Running) -> None:
    data = request(b'{"action": "created"}')
    with socket.create_connection(running.address, timeout=10) as connection:
        connection.sendall(data[:-5])
    deadline = time.monotonic() + 10
    while not rejected(running) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rejected(running) == [(400, "closed-early")]
    assert running.inbox.pending() == []


def test_without_a_secret_nothing_is_signed_checked(tmp_path: Path) -> None:
    with receiver_in_thread(tmp_path / "state", secret=None) as insecure:
        answer = send(insecure.address, request(b'{"action": "created"}', secret=None))
        assert answer.status == 202
        assert len(insecure.inbox.pending()) == 1


def test_the_status_file_counts_what_the_receiver_answered(tmp_path: Path) -> None:
    root = tmp_path / "state"
    with receiver_in_thread(root) as running:
        deliver(running.address, comment_payload(), delivery="d-1")
        deliver(running.address, comment_payload(), delivery="d-1")
        send(running.address, request(b"{}", secret="wrong"))
    status = json.loads((root / "local" / "webhook-status.json").read_text("utf-8"))
    assert {key: status[key] for key in ("accepted", "duplicate", "rejected")} == {
        "accepted": 1,
        "duplicate": 1,
        "rejected": 1,
    }
    assert status["stoppedAt"] and status["lastDeliveryAt"]
    assert status["url"] == f"http://127.0.0.1:{running.address[1]}{PATH}"
    assert SECRET not in json.dumps(status)


def test_an_inbox_that_cannot_be_written_is_503_and_one_event(running: Running) -> None:
    # An answer first: the receiver has opened its inbox (its thread may start late).
    assert deliver(running.address, {"zen": "x"}, delivery="d-up", event="ping").status == 200
    running.inbox.directory.parent.mkdir(parents=True, exist_ok=True)
    running.inbox.directory.write_text("in the way", "utf-8")  # no directory can be made here
    answer = deliver(running.address, comment_payload(), delivery="d-lost")
    assert answer.status == 503
    assert answer.body.startswith("503 Service Unavailable: the delivery could not be stored")
    assert rejected(running) == [(503, "store-failed")]
    running.inbox.directory.unlink()
    assert deliver(running.address, comment_payload(), delivery="d-lost").status == 202
