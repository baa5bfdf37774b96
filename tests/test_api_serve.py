"""`the-loop serve` on a loopback port over a state root of real records: who may read it
(the token, the Host allowlist, no CORS, loopback unless --expose), its routes equal to
the commands they stand for, and the board's reads joined from the records."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.helpers.world import World
from the_loop.api.routes import ROUTES
from the_loop.portable.poll import Ledger, PollState
from the_loop.ref import WorkItemRef

ITEM = "github:octo/app#15"
OTHER = "github:octo/app#20"
_FOREIGN = ("THE_LOOP_", "GITHUB_TOKEN", "GH_TOKEN", "TMUX", "GIT_")


@dataclass
class Server:
    world: World
    place: Path
    url: str
    token: str
    process: subprocess.Popen[str]

    def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return request(self.url, "GET", path, {"Authorization": f"Bearer {self.token}", **headers})

    def cli(self, *argv: str) -> str:
        env = _env(self.world)
        base = [sys.executable, "-m", "the_loop", "--config", str(self.world.config_path)]
        done = subprocess.run(
            [*base, *argv], cwd=self.place, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout


def request(
    url: str, method: str, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest(method, path, skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def _env(world: World) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    env["HOME"] = str(world.home)
    return env


@contextlib.contextmanager
def serving(place: Path, *extra: str) -> Iterator[Server]:
    world = World(place / "home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(world.home))
        for name in [name for name in os.environ if name.startswith(_FOREIGN)]:
            patch.delenv(name)
        patch.chdir(place)
        for ref in (ITEM, OTHER):
            argv = ["sessions", "register", "--work-item", ref, "--harness", "command"]
            assert world.run_cli([*argv, "--harness-session-id", f"s-{ref[-2:]}"])[0] == 0
        linked = ["sessions", "link-pr", "--work-item", ITEM, "--pull-request", "16"]
        assert world.run_cli(linked)[0] == 0
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "serve"]
    process = subprocess.Popen(
        [*argv, "--port", "0", *extra],
        cwd=place,
        env=_env(world),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "listening on " in first, first + process.stderr.read()
        url = first.split("listening on ", 1)[1].split(" ", 1)[0]
        token_file = Path(first.rsplit("the token is in ", 1)[1].strip())
        yield Server(world, place, url, token_file.read_text().strip(), process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path) as running:
        yield running


def _document(body: bytes) -> dict[str, Any]:
    return json.loads(body)


def test_the_token_is_made_once_for_the_operator_alone(server: Server) -> None:
    token_file = server.world.layout.root / "local" / "api-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert len(server.token) >= 32 and server.token in token_file.read_text()


def test_every_route_is_401_without_the_token_and_421_for_a_foreign_host(server: Server) -> None:
    paths = [r for r in ROUTES if r != "/login"] + [f"/api/v1/work-items/{quote(ITEM, safe='')}"]
    for path in paths:
        status, _, body = request(server.url, "GET", path, {})
        assert status == 401, path
        if path.startswith("/api/"):
            assert _document(body)["ok"] is False, path
        wrong = {"Authorization": "Bearer " + "x" * len(server.token)}
        assert request(server.url, "GET", path, wrong)[0] == 401, path
        foreign = {"Host": "evil.example:80", "Authorization": f"Bearer {server.token}"}
        assert request(server.url, "GET", path, foreign)[0] == 421, path
    assert server.get("/api/v1/health")[0] == 200
    assert server.get("/api/v1/health", Host="localhost:1")[0] == 200


def test_no_answer_carries_a_cors_header_not_even_a_preflights(server: Server) -> None:
    origin = {"Origin": "https://evil.example"}
    asked = [
        request(
            server.url,
            "OPTIONS",
            "/api/v1/sessions",
            {**origin, "Access-Control-Request-Method": "GET"},
        ),
        request(server.url, "GET", "/api/v1/sessions", origin),
        server.get("/api/v1/sessions", **origin),
        server.get("/api/v1/work-items", **origin),
        request(
            server.url,
            "OPTIONS",
            "/api/v1/sessions",
            {**origin, "Authorization": f"Bearer {server.token}"},
        ),
    ]
    for status, headers, _ in asked:
        assert not [name for name in headers if name.startswith("access-control-")], headers
        assert status in (200, 401, 405)
    assert asked[-1][0] == 405


def test_sessions_and_events_are_the_commands_own_documents(server: Server) -> None:
    status, headers, body = server.get("/api/v1/sessions")
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert _document(body) == json.loads(server.cli("sessions", "list", "--format", "json"))
    status, _, body = server.get("/api/v1/events?limit=3&type=session.*")
    expected = server.cli("events", "--limit", "3", "--type", "session.*", "--format", "json")
    assert status == 200 and _document(body) == json.loads(expected)
    assert len(_document(body)["items"]) == 3
    status, _, body = server.get("/api/v1/events?bogus=1")
    assert status == 400 and "bogus" in _document(body)["errors"][0]


def test_an_unchanged_answer_is_304_by_its_etag(server: Server) -> None:
    for path in ("/api/v1/work-items", "/api/v1/sessions", "/api/v1/health"):
        status, headers, _ = server.get(path)
        assert status == 200 and headers["etag"].startswith('"'), path
        status, again, body = server.get(path, **{"If-None-Match": headers["etag"]})
        assert (status, body) == (304, b""), path
        assert again["etag"] == headers["etag"]


def test_work_items_nest_pull_requests_and_follow_a_changed_record(server: Server) -> None:
    status, _, body = server.get("/api/v1/work-items")
    items = _document(body)["items"]
    assert status == 200 and [item["ref"] for item in items] == [ITEM, OTHER]
    first = items[0]
    assert [pr["ref"] for pr in first["pullRequests"]] == ["github:octo/app#16"]
    assert first["pullRequests"][0]["url"] == "https://github.com/octo/app/pull/16"
    assert first["session"]["status"] == "active" and first["repository"] == "octo/app"
    assert set(first) >= {"ref", "url", "session", "control", "claim", "nodes", "attention"}
    store = _poll_state(server)

    def blocked(ledger: Ledger) -> None:
        ledger["blocked"] = {"on": "permission", "since": 1_700_000_000.0, "at": 1_700_000_001.0}

    store.change(WorkItemRef.parse(ITEM), blocked)
    status, _, body = server.get("/api/v1/work-items?attention=1")
    [item] = _document(body)["items"]
    assert item["ref"] == ITEM and item["attention"] == ["blocked"]
    assert item["session"]["agent"] == {
        "state": "blocked",
        "blockedOn": "permission",
        "since": 1_700_000_000.0,
    }
    status, _, body = server.get("/api/v1/attention")
    [need] = _document(body)["items"]
    assert (need["ref"], need["kind"], need["since"]) == (ITEM, "blocked", "2023-11-14T22:13:20Z")
    assert need["ageSeconds"] > 0
    assert [
        i["ref"] for i in _document(server.get("/api/v1/work-items?state=none")[2])["items"]
    ] == []
    assert server.get("/api/v1/work-items?state=sleepy")[0] == 400
    repo = _document(server.get("/api/v1/work-items?repo=OCTO/app")[2])["items"]
    assert len(repo) == 2


def test_one_work_item_with_its_timeline_and_a_404_for_none(server: Server) -> None:
    status, _, body = server.get("/api/v1/work-items/" + quote(ITEM, safe=""))
    [item] = _document(body)["items"]
    assert status == 200 and item["ref"] == ITEM
    assert [e["event"] for e in item["timeline"]][:1] == ["session.registered"]
    assert all(e["work_item"] == ITEM for e in item["timeline"])
    by_pr = _document(server.get("/api/v1/work-items/" + quote("github:octo/app#16", safe=""))[2])
    assert by_pr["items"][0]["ref"] == ITEM
    status, _, body = server.get("/api/v1/work-items/" + quote("github:octo/app#99", safe=""))
    assert status == 404 and _document(body)["ok"] is False


def test_health_names_the_root_the_config_and_this_server(server: Server) -> None:
    [item] = _document(server.get("/api/v1/health")[2])["items"]
    assert item["stateRoot"] == str(server.world.layout.root)
    assert item["config"] == str(server.world.config_path)
    assert item["configWhy"] == "named by --config"
    daemons = {d["name"]: d for d in item["daemons"]}
    assert daemons["API server"]["running"] is True
    assert daemons["API server"]["pid"] == server.process.pid
    assert daemons["API server"]["report"]["url"] == server.url
    assert daemons["poller"]["running"] is False and daemons["poller"]["report"] is None
    assert item["rateRemaining"] is None and item["backoff"] is None


def test_status_says_where_it_runs_and_stop_ends_it(server: Server) -> None:
    said = json.loads(server.cli("serve", "status", "--format", "json"))["items"][0]
    assert said == {"running": True, "pid": server.process.pid, "url": server.url}
    link = server.cli("serve", "link").strip()
    assert link.startswith(server.url + "/login?code=") and server.token not in link
    stopped = json.loads(server.cli("serve", "stop", "--format", "json"))["items"][0]
    assert stopped == {"stopped": True, "pid": server.process.pid}
    assert server.process.wait(timeout=30) == 0
    assert "not running" in server.cli("serve", "status")


def test_a_second_server_on_the_root_is_refused(server: Server) -> None:
    base = [sys.executable, "-m", "the_loop", "--config", str(server.world.config_path)]
    second = subprocess.run(
        [*base, "serve", "--port", "0"],
        cwd=server.place,
        env=_env(server.world),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1 and str(server.process.pid) in second.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7"])
def test_an_address_beyond_loopback_is_refused_without_expose(tmp_path: Path, host: str) -> None:
    world = World(tmp_path / "home")
    base = [sys.executable, "-m", "the_loop", "--config", str(world.config_path)]
    done = subprocess.run(
        [*base, "serve", "--host", host, "--port", "0"],
        cwd=tmp_path,
        env=_env(world),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "--expose" in done.stderr
    assert not (world.layout.root / "local" / "api-token").exists(), (
        "refused before anything is made"
    )


def _poll_state(server: Server) -> PollState:
    from the_loop.adapters.stores import stores_at

    stores = stores_at(server.world.layout, source="test", on_warning=lambda _s: None)
    return PollState(stores.store)


def test_a_config_problem_needs_a_person(server: Server) -> None:
    """What the daemons started now would refuse is on the attention list, as `config
    check` words it, until the file is right again."""
    assert _document(server.get("/api/v1/attention")[2])["items"] == []
    path = server.world.config_path
    good = path.read_text()
    document = json.loads(good)
    document["polling"] = {**document.get("polling", {}), "intervalSecs": 5}
    path.write_text(json.dumps(document))
    [need] = _document(server.get("/api/v1/attention")[2])["items"]
    assert (need["ref"], need["kind"]) == (None, "config") and "intervalSecs" in need["detail"]
    path.write_text(good)
    assert _document(server.get("/api/v1/attention")[2])["items"] == []


def test_an_items_nodes_are_its_repository_files_and_follow_it(server: Server) -> None:
    """``nodes`` lists the process state of the item's repository file in its session's
    checkout, read again when that file changes; empty for an item without one."""
    items = _document(server.get("/api/v1/work-items")[2])["items"]
    assert [item["nodes"] for item in items] == [[], []]
    specs = server.place / "docs" / "specs" / WorkItemRef.parse(ITEM).slug
    specs.mkdir(parents=True)
    state = specs / "work-item-state.json"
    document = {"version": 2, "workItem": ITEM, "currentNode": "design"}
    document["nodes"] = {"requirements": {"status": "pass", "by": "alice"}, "design": "active"}
    state.write_text(json.dumps(document))
    _poll_state(server).change(WorkItemRef.parse(ITEM), lambda ledger: ledger.update(seen=1))
    first = _document(server.get("/api/v1/work-items")[2])["items"][0]
    empty = {"by": None, "at": None, "link": None}
    assert first["nodes"] == [  # a spec lane's phases, as `the-loop check` lists them
        {**empty, "node": "requirements", "status": "pass", "by": "alice"},
        {**empty, "node": "design", "status": "active"},
        {**empty, "node": "tasks", "status": "pending"},
        {**empty, "node": "implementation", "status": "pending"},
    ]
    document["nodes"]["design"] = {"status": "pass", "by": "bob"}
    temp = state.with_name(".next")
    temp.write_text(json.dumps(document))
    temp.replace(state)  # as the file is written: replaced, nothing else changed
    again = _document(server.get("/api/v1/work-items")[2])["items"][0]
    assert again["nodes"][1] == {**empty, "node": "design", "status": "pass", "by": "bob"}
    document["nodes"] = {"upstream-node": {"status": "done"}}  # no lane: the file's nodes
    temp.write_text(json.dumps(document))
    temp.replace(state)
    other = _document(server.get("/api/v1/work-items")[2])["items"][0]
    assert other["nodes"] == [{"node": "upstream-node", "status": "done"}]


def test_a_record_holding_odd_values_costs_its_item_never_the_board(server: Server) -> None:
    """A key that is no ref, a time out of any range: the item is listed as unreadable (a
    need says so), the other items as ever, and the board is not served stale after."""
    before = _document(server.get("/api/v1/work-items")[2])["items"]
    odd = WorkItemRef.parse("github:octo/app#21")
    record = {
        "ref": odd.ref,
        "url": odd.url,
        "poll": {"deliveries": [{"id": "9", "state": "given-up", "at": 1e20}]},
    }
    record["pullRequests"] = {"bogus": {}}
    record["control"] = {"command": "start", "requestedAt": "0001-01-01T00:00:00+14:00"}
    (server.world.layout.portable_dir / f"{odd.slug}.json").write_text(json.dumps(record))
    status, _, body = server.get("/api/v1/work-items")
    items = {item["ref"]: item for item in _document(body)["items"]}
    assert status == 200 and set(items) == {item["ref"] for item in before} | {odd.ref}
    status, _, body = server.get("/api/v1/attention")
    assert status == 200 and odd.ref in {need["ref"] for need in _document(body)["items"]}
    assert server.get("/api/v1/work-items/" + quote(odd.ref, safe=""))[0] == 200


def test_idle_connections_hold_no_place_of_a_request(server: Server) -> None:
    """Connections that send nothing wait for their own deadline beside the requests, not
    in front of them: a request is answered while more idle ones than the server answers
    at once (64) are still open."""
    import socket

    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(80)]
    try:
        assert server.get("/api/v1/health")[0] == 200
        idle[0].setblocking(False)
        with contextlib.suppress(BlockingIOError):
            assert idle[0].recv(1) != b"", "the idle ones are still waiting, not refused"
    finally:
        for connection in idle:
            connection.close()


def test_an_exposed_server_answers_the_names_it_is_told_and_no_other(tmp_path: Path) -> None:
    with serving(tmp_path, "--allow-host", "Loop.Example") as running:
        assert running.get("/api/v1/health", Host="loop.example:8788")[0] == 200
        assert running.get("/api/v1/health", Host="other.example")[0] == 421
        assert request(running.url, "GET", "http://evil.example/api/v1/health", {})[0] == 400


def test_a_back_off_leaves_attention_when_it_ends_without_a_file_changing(server: Server) -> None:
    """The poller's back-offs end with time: attention reads them at each request, as
    `poll status` does, never from a board built while one held."""
    import time

    from tests.helpers.tmuxsock import wait_until
    from the_loop.fsio import write_json
    from the_loop.github.backoff import Backoff, Backoffs

    now = time.time()
    held = Backoffs(Backoff(), {"octo/app": Backoff(2, now + 2.0, "502 from GitHub")})
    write_json(server.world.layout.local_dir / "poll-status.json", held.to_dict(now))
    [need] = _document(server.get("/api/v1/attention")[2])["items"]
    assert need["kind"] == "backoff" and "octo/app" in need["detail"]

    def ended() -> bool:
        return _document(server.get("/api/v1/attention")[2])["items"] == []

    assert wait_until(ended, timeout=30)
