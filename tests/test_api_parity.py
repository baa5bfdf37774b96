"""The API while four processes write (issue 30's proofs): ``/api/v1/sessions`` and
``/api/v1/events`` equal what ``sessions list`` and ``events`` print at each of 50
snapshots (the writers stopped for the moment of the snapshot, never between their
writes), and 10,000 reads ask GitHub nothing (the loopback fake counts every request)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.world import World
from tests.test_api_serve import _env
from the_loop.api.token import api_token

WRITERS = 4
RECORDS = 1_000
SNAPSHOTS = 50
READS = 10_000

#: One writer: its share of the records registered through the registry, an event each,
#: a short pause now and then so the snapshots fall among the writes.
_WRITER = """
import sys, time
from the_loop.adapters.stores import stores_at
from the_loop.layout import StateLayout
from the_loop.sessions.session import Session
from the_loop.ref import WorkItemRef
root, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stores = stores_at(StateLayout(__import__("pathlib").Path(root)), source="writer", on_warning=print)
for n in range(first, first + count):
    ref = WorkItemRef.parse(f"github:octo/app#{1000 + n}")
    stores.registry.register(Session(ref, "command", f"s-{n}", tmux_target=f"loop-x-{n}"))
    stores.events.emit("control.recorded", work_item=ref.ref, command="start", actor="w")
    if n % 25 == 0:
        time.sleep(0.05)
"""


def _get(url: str, token: str, path: str) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


@pytest.mark.slow
def test_the_api_equals_the_commands_while_four_processes_write_and_asks_github_nothing(
    tmp_path: Path,
) -> None:
    with serve(FakeGitHub(tokens={"ghp_api-test": "the-loop-bot"})) as github:
        world = World(tmp_path / "home", {"integrations": {"github": {"apiUrl": github.url}}})
        env = {**_env(world), "GITHUB_TOKEN": "ghp_api-test"}
        base = [sys.executable, "-m", "the_loop", "--config", str(world.config_path)]
        server = subprocess.Popen(
            [*base, "serve", "--port", "0"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        writers: list[subprocess.Popen[bytes]] = []
        try:
            assert server.stderr is not None
            first = server.stderr.readline()
            url = first.split("listening on ", 1)[1].split(" ", 1)[0]
            token = api_token(world.layout.api_token)
            share = RECORDS // WRITERS
            for n in range(WRITERS):
                argv = [
                    sys.executable,
                    "-c",
                    _WRITER,
                    str(world.layout.root),
                    str(n * share),
                    str(share),
                ]
                writers.append(subprocess.Popen(argv, env=env, cwd=tmp_path))
            differences, taken, seen = [], 0, set[int]()
            while taken < SNAPSHOTS:
                running = [w for w in writers if w.poll() is None]
                for writer in running:
                    os.kill(writer.pid, signal.SIGSTOP)
                try:
                    status, api = _get(url, token, "/api/v1/sessions")
                    said = subprocess.run(
                        [*base, "sessions", "list", "--format", "json"],
                        cwd=tmp_path,
                        env=env,
                        capture_output=True,
                        check=True,
                    ).stdout
                    _, events = _get(url, token, "/api/v1/events?limit=20")
                    printed = subprocess.run(
                        [*base, "events", "--limit", "20", "--format", "json"],
                        cwd=tmp_path,
                        env=env,
                        capture_output=True,
                        check=True,
                    ).stdout
                finally:
                    for writer in running:
                        os.kill(writer.pid, signal.SIGCONT)
                assert status == 200
                listed = json.loads(api)
                seen.add(len(listed["items"]))
                if listed != json.loads(said) or json.loads(events) != json.loads(printed):
                    differences.append(taken)
                taken += 1
                time.sleep(0.05)
            for writer in writers:
                assert writer.wait(timeout=300) == 0
            assert differences == [], f"snapshots that differ: {differences}"
            assert len(seen) > 1, "the snapshots fell among the writes"
            _, final = _get(url, token, "/api/v1/sessions")
            assert len(json.loads(final)["items"]) == RECORDS
            before = len(github.requests)
            routes = ("/api/v1/work-items", "/api/v1/attention", "/api/v1/health")
            for n in range(READS):
                assert _get(url, token, routes[n % len(routes)])[0] == 200
            assert len(github.requests) - before == 0 and len(github.requests) == 0
        finally:
            for writer in writers:
                if writer.poll() is None:
                    os.kill(writer.pid, signal.SIGCONT)
                    writer.kill()
                    writer.wait()
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=30) == 0
