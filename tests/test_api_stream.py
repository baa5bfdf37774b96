"""``GET /api/v1/events/stream`` (issue 30) against a real ``the-loop serve`` process: the
event log as Server-Sent Events, each complete line once, its id the byte offset after it,
across reconnects with ``Last-Event-ID``; a desync frame when the log is replaced or
shrinks; ``api.maxStreams`` at once; the gate of every route; SIGTERM ends the streams."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.helpers.tmuxsock import wait_until
from the_loop.api.stream import KEEP_ALIVE, LogTail, desync_frame, feed, log_frame
from the_loop.eventlog.log import EventLog

ROUTE = "/api/v1/events/stream"
EVENTS = 10_000
RECONNECTS = 20
SEED = 30


class Server:
    """``the-loop serve --port 0`` on a fresh state root in the working directory."""

    def __init__(self, work: Path, *, max_streams: int | None = None) -> None:
        self.root = work / ".the-loop"
        subprocess.run(
            [sys.executable, "-m", "the_loop", "init"], cwd=work, check=True, capture_output=True
        )
        if max_streams is not None:
            config = self.root / "cli-config.yaml"
            with config.open("a", encoding="utf-8") as handle:
                handle.write(f"api:\n  maxStreams: {max_streams}\n")
        self.log = self.root / "logs" / "events.jsonl"
        self._output: IO[bytes] = (work / "serve.log").open("ab")
        argv = [sys.executable, "-m", "the_loop", "serve", "--port", "0"]
        self.process = subprocess.Popen(argv, cwd=work, stdout=self._output, stderr=self._output)
        assert wait_until(self._listening, timeout=30), (work / "serve.log").read_text()
        self.token = (self.root / "local" / "api-token").read_text("utf-8").strip()

    def _listening(self) -> bool:
        try:
            said = json.loads((self.root / "local" / "serve-status.json").read_text("utf-8"))
        except (OSError, ValueError):
            return False
        if said.get("pid") != self.process.pid or said.get("stoppedAt") is not None:
            return False
        host, _, port = str(said["url"]).removeprefix("http://").rpartition(":")
        self.host, self.port = host, int(port)
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._output.close()


class Client:
    """One request to the stream route over a raw socket: its status and headers, then
    its frames one at a time."""

    def __init__(
        self,
        server: Server,
        *,
        last_event_id: int | None = None,
        token: str | None = "",
        host: str | None = None,
    ) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=30)
        lines = [
            f"GET {ROUTE} HTTP/1.1",
            f"Host: {host or f'127.0.0.1:{server.port}'}",
        ]
        if token is not None:
            lines.append(f"Authorization: Bearer {token or server.token}")
        if last_event_id is not None:
            lines.append(f"Last-Event-ID: {last_event_id}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.file = self.sock.makefile("rb")
        status_line = self.file.readline().decode("latin-1")
        self.status = int(status_line.split()[1])
        self.headers: dict[str, str] = {}
        while (line := self.file.readline().decode("latin-1").rstrip("\r\n")) != "":
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def frame(self) -> dict[str, str] | None:
        """The next frame's fields (comments skipped); None when the server closed."""
        fields: dict[str, str] = {}
        while True:
            raw = self.file.readline()
            if not raw:
                return None
            line = raw.decode("utf-8").removesuffix("\n")
            if line == "":
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value

    def body(self) -> dict[str, object]:
        return json.loads(self.file.read())

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def server() -> Iterator[Server]:
    """A server on the hermetic working directory, three streams at most."""
    running = Server(Path.cwd(), max_streams=3)
    yield running
    running.stop()


def log_lines(log: Path, start: int) -> list[tuple[int, str]]:
    """Each complete line of ``log`` after byte ``start``, with the offset after it."""
    data = log.read_bytes()[start:]
    found: list[tuple[int, str]] = []
    offset = start
    for line in data.splitlines(keepends=True):
        offset += len(line)
        found.append((offset, line.decode("utf-8").removesuffix("\n")))
    return found


def test_ten_thousand_events_over_twenty_reconnects_arrive_once_each_with_their_offsets() -> None:
    server = Server(Path.cwd())
    try:
        client = Client(server)
        start = server.log.stat().st_size  # the stream's place is fixed before its head
        writer = threading.Thread(target=write_events, args=(server.log, EVENTS))
        writer.start()
        received: list[tuple[int, str]] = []
        connections, chooser = 1, random.Random(SEED)
        while len(received) < EVENTS:
            for _ in range(chooser.randint(150, 450)):
                frame = client.frame()
                assert frame is not None and frame["event"] == "log"
                received.append((int(frame["id"]), frame["data"]))
                if len(received) == EVENTS:
                    break
            client.close()
            if len(received) < EVENTS:
                time.sleep(chooser.random() / 50)  # lines go on being written meanwhile
                client = Client(server, last_event_id=received[-1][0])
                assert client.status == 200
                connections += 1
        writer.join()
        written = log_lines(server.log, start)
    finally:
        server.stop()
    assert connections - 1 >= RECONNECTS
    assert received == written
    assert len({offset for offset, _ in received}) == EVENTS
    sequences = [json.loads(data)["sequence"] for _, data in received]
    assert sequences == list(range(EVENTS))


def write_events(log: Path, count: int) -> None:
    """``count`` events by the project's own writer, in bursts over a few seconds."""
    events = EventLog(log, source="test")
    for sequence in range(count):
        assert events.emit("test.tick", sequence=sequence)
        if sequence % 100 == 99:
            time.sleep(0.02)


def test_a_first_connection_starts_at_the_end_and_waits_for_a_line_to_be_whole(
    server: Server,
) -> None:
    EventLog(server.log, source="test").emit("test.before")
    client = Client(server)
    assert client.status == 200
    assert client.headers["content-type"] == "text/event-stream"
    assert client.headers["cache-control"] == "no-store"
    assert not [name for name in client.headers if name.startswith("access-control")]
    with server.log.open("ab") as handle:
        handle.write(b'{"event":"test.half')
        handle.flush()
        time.sleep(0.3)  # looks of the server's come and go: none may send half a line
        handle.write(b'-and-half"}\n')
    frame = client.frame()
    client.close()
    assert frame == {
        "id": str(server.log.stat().st_size),
        "event": "log",
        "data": '{"event":"test.half-and-half"}',
    }


def test_a_replaced_or_shrunk_log_is_one_desync_then_the_new_log_from_its_start(
    server: Server,
) -> None:
    events = EventLog(server.log, source="test")
    client = Client(server)
    events.emit("test.first", padding="x" * 200)
    assert client.frame() is not None
    replacement = server.log.with_name("events.jsonl.new")
    replacement.write_bytes(b'{"event":"a"}\n{"event":"b"}\n')
    os.replace(replacement, server.log)
    desync = client.frame()
    assert desync is not None and desync["event"] == "desync" and desync["id"] == "0"
    assert json.loads(desync["data"])["reason"] == "replaced"
    assert [client.frame(), client.frame()] == [
        {"id": "14", "event": "log", "data": '{"event":"a"}'},
        {"id": "28", "event": "log", "data": '{"event":"b"}'},
    ]
    with server.log.open("r+b") as handle:  # cut in place: the same file, shorter
        handle.truncate(0)
        handle.write(b'{"event":"c"}\n')
    desync = client.frame()
    assert desync is not None and json.loads(desync["data"])["reason"] == "shrank"
    assert client.frame() == {"id": "14", "event": "log", "data": '{"event":"c"}'}
    client.close()


def test_a_last_event_id_beyond_the_end_is_a_desync_then_the_log_from_its_start(
    server: Server,
) -> None:
    size = server.log.stat().st_size
    client = Client(server, last_event_id=size + 1000)
    desync = client.frame()
    assert desync is not None and desync["event"] == "desync"
    assert json.loads(desync["data"]) == {"reason": "beyond", "offset": size + 1000, "size": size}
    first = client.frame()
    client.close()
    assert first is not None
    assert (int(first["id"]), first["data"]) == log_lines(server.log, 0)[0]


def test_past_max_streams_a_stream_is_refused_until_one_closes(server: Server) -> None:
    streams = [Client(server) for _ in range(3)]
    assert [stream.status for stream in streams] == [200, 200, 200]
    refused = Client(server)
    assert refused.status == 503
    body = refused.body()
    assert body["ok"] is False and "api.maxStreams" in str(body["errors"])
    refused.close()
    streams.pop().close()
    admitted: list[Client] = []

    def one_gets_in() -> bool:
        client = Client(server)
        if client.status == 200:
            admitted.append(client)
            return True
        client.close()
        return False

    assert wait_until(one_gets_in, timeout=10, interval=0.1)
    for stream in [*streams, *admitted]:
        stream.close()


@pytest.mark.parametrize(
    ("token", "host", "status"),
    [
        (None, None, 401),
        ("wrong", None, 401),
        ("", "evil.example", 421),
        (None, "evil.example", 421),
    ],
)
def test_the_stream_route_keeps_the_gate_of_every_route(
    server: Server, token: str | None, host: str | None, status: int
) -> None:
    client = Client(server, token=token, host=host)
    assert client.status == status
    assert not [name for name in client.headers if name.startswith("access-control")]
    assert client.body()["ok"] is False
    client.close()


def test_sigterm_ends_the_open_streams_and_the_server(server: Server) -> None:
    client = Client(server)
    assert client.status == 200
    server.process.send_signal(signal.SIGTERM)
    assert client.frame() is None  # the server closed the stream (else the 30 s timeout)
    client.close()
    assert server.process.wait(timeout=30) == 0


def test_a_fifo_at_the_log_reads_as_no_log_and_a_log_made_later_is_read_from_its_start(
    tmp_path: Path,
) -> None:
    log = tmp_path / "events.jsonl"
    os.mkfifo(log)  # opened for reading, a FIFO would block the server: it is never opened
    tail = LogTail(log)
    assert tail.start(None) == []
    assert tail.poll() == []
    log.unlink()
    log.write_bytes(b'{"event":"a"}\n')
    assert tail.poll() == [log_frame(b'{"event":"a"}', 14)]
    tail.close()


def test_a_deleted_log_is_read_to_its_end_and_its_successor_is_a_desync(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"event":"a"}\n')
    tail = LogTail(log)
    assert tail.start(0) == []
    with log.open("ab") as handle:
        handle.write(b'{"event":"b"}\n')
    log.unlink()
    assert tail.poll() == [log_frame(b'{"event":"a"}', 14), log_frame(b'{"event":"b"}', 28)]
    log.write_bytes(b'{"event":"c"}\n')
    assert tail.poll() == [desync_frame("replaced", 28, 14), log_frame(b'{"event":"c"}', 14)]
    tail.close()


def test_silence_is_broken_by_a_keep_alive_comment(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"")

    async def exchange() -> bytes:
        stopping = asyncio.Event()

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            tail = LogTail(log)
            await feed(tail, tail.start(None), reader, writer, stopping, keep_alive=0.2)
            tail.close()
            writer.close()

        listener = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        said = await asyncio.wait_for(reader.readuntil(b"\n\n"), 30)
        stopping.set()
        await asyncio.wait_for(reader.read(), 30)  # the feed ends on stopping: EOF
        writer.close()
        listener.close()
        await listener.wait_closed()
        return said

    assert asyncio.run(exchange()) == KEEP_ALIVE


def test_a_carriage_return_inside_a_line_stays_in_its_one_frame(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"")
    tail = LogTail(log)
    assert tail.start(None) == []
    log.write_bytes(b'{"a":\r1}\n')
    assert tail.poll() == [log_frame(b'{"a":\r1}', 9)]
    tail.close()
