"""The loopback fake of the Anthropic Messages API, spoken to over plain HTTP."""

from __future__ import annotations

import dataclasses
import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

from tests.fake_anthropic import (
    FakeAnthropic,
    after_tool_result,
    bash,
    rate_limited,
    running_fake_anthropic,
    text,
    user_says,
)

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def _post(
    fake: FakeAnthropic, path: str, body: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(fake.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        headers = {"content-type": "application/json", "x-api-key": "sk-test"}
        connection.request("POST", path, json.dumps(body), headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _turn(prompt: str, *, stream: bool = True, tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    }
    if tools:
        body["tools"] = TOOLS
    return body


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_a_streamed_text_reply_follows_the_api_event_order() -> None:
    with running_fake_anthropic() as fake:
        fake.script(text("Hello there, this is a reply longer than one delta piece."))
        status, headers, raw = _post(fake, "/v1/messages?beta=true", _turn("hi"))

    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    events = _events(raw)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    deltas = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
    assert "".join(deltas) == "Hello there, this is a reply longer than one delta piece."
    assert events[0][1]["message"]["usage"]["input_tokens"] > 0
    message_delta = events[-2][1]
    assert message_delta["delta"]["stop_reason"] == "end_turn"
    assert message_delta["usage"]["output_tokens"] > 0


def test_a_reply_reports_its_usage_cache_reads_and_writes_included_and_is_kept_as_sent() -> None:
    reply = text("Cached.", input_tokens=9, output_tokens=70, cache_read_tokens=500)
    cached = dataclasses.replace(reply, cache_write_5m_tokens=30, cache_write_1h_tokens=40)
    with running_fake_anthropic() as fake:
        fake.script(cached)
        _, _, raw = _post(fake, "/v1/messages", _turn("hi"))
        _, _, plain = _post(fake, "/v1/messages", _turn("hi", stream=False))

    events = _events(raw)
    start = events[0][1]["message"]
    assert start["usage"] == {
        "input_tokens": 9,
        "output_tokens": 1,
        "cache_creation_input_tokens": 70,
        "cache_read_input_tokens": 500,
        "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 40},
    }
    assert events[-2][1]["usage"] == {"output_tokens": 70}
    # A reply that sets no cache reports none, as the fake always did.
    assert json.loads(plain)["usage"] == {
        "input_tokens": 42,
        "output_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    first, second = fake.sent
    assert (first.request_index, first.message_id, first.model) == (0, start["id"], "claude-test")
    assert first.usage == {**start["usage"], "output_tokens": 70}
    assert second.request_index == 1 and second.message_id == json.loads(plain)["id"]


def test_a_tool_use_streams_its_input_as_json_deltas() -> None:
    with running_fake_anthropic() as fake:
        fake.script(bash("touch a-file", "Create a file", tool_id="toolu_1"))
        _, _, raw = _post(fake, "/v1/messages", _turn("make a file"))

    events = _events(raw)
    start = next(d for n, d in events if n == "content_block_start")
    assert start["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {},
    }
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(partial) == {"command": "touch a-file", "description": "Create a file"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_an_unstreamed_request_gets_one_message_and_count_tokens_answers() -> None:
    with running_fake_anthropic() as fake:
        status, _, raw = _post(fake, "/v1/messages", _turn("hi", stream=False))
        count_status, _, count = _post(fake, "/v1/messages/count_tokens", _turn("hi"))

    assert status == 200
    message = json.loads(raw)
    assert message["type"] == "message"
    assert message["content"] == [{"type": "text", "text": "OK from the fake."}]
    assert message["usage"]["output_tokens"] > 0
    assert count_status == 200
    assert json.loads(count)["input_tokens"] > 0


def test_side_requests_take_the_default_and_leave_the_scripted_replies_to_turns() -> None:
    with running_fake_anthropic() as fake:
        fake.script(text("For the turn."), when=user_says("the turn"))
        fake.script(text("After the tool."), when=after_tool_result())
        _, _, side = _post(fake, "/v1/messages", _turn("the turn", stream=False, tools=False))
        _, _, turn = _post(fake, "/v1/messages", _turn("the turn", stream=False))
        assert fake.pending() == 1

    assert json.loads(side)["content"][0]["text"] == "OK from the fake."
    assert json.loads(turn)["content"][0]["text"] == "For the turn."
    assert [r.last_user_text() for r in fake.turns()] == ["the turn"]


def test_an_error_reply_has_the_api_error_body_and_status() -> None:
    with running_fake_anthropic() as fake:
        fake.script(rate_limited())
        status, headers, raw = _post(fake, "/v1/messages", _turn("hi"))

    assert status == 429
    assert headers["x-should-retry"] == "false"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"


def test_unknown_paths_and_proxy_tunnels_are_recorded_and_refused() -> None:
    with running_fake_anthropic() as fake:
        url = urlsplit(fake.url)
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        connection.request("GET", "/api/hello")
        assert connection.getresponse().status == 404
        connection.close()
        tunnel = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        tunnel.request("CONNECT", "api.anthropic.com:443")
        assert tunnel.getresponse().status == 403
        tunnel.close()

    assert fake.paths() == ["GET /api/hello", "CONNECT api.anthropic.com:443"]


def test_wait_for_sees_a_request_that_comes_later_and_a_gate_holds_a_reply() -> None:
    gate = threading.Event()
    with running_fake_anthropic() as fake:
        fake.script(text("Held.", gate=gate))
        answers: list[bytes] = []
        worker = threading.Thread(
            target=lambda: answers.append(_post(fake, "/v1/messages", _turn("x"))[2])
        )
        worker.start()
        request = fake.wait_for(user_says("x"), timeout=10)
        assert request.headers["x-api-key"] == "sk-test"
        assert answers == []
        gate.set()
        worker.join(timeout=10)

    assert "Held." in answers[0].decode()
