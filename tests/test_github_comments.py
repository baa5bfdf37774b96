"""Keyword comments on the ticket (`sessions start|pause|resume|stop --comment`), against a
local HTTP server standing in for the GitHub REST API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.commands.common import current_user
from the_loop.github.poster import GitHubError, api_url_for, post_issue_comment
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

ITEM = "github:octo/app#15"
TOKEN = "ghp_secret-token-value"


DONE = {"start": "Started", "pause": "Paused", "resume": "Resumed", "stop": "Stopped"}


def echo(keyword: str) -> dict[str, str]:
    """The body the-loop posts for ``keyword``: what happened and who asked, then the marker."""
    session = "an agent session" if keyword == "start" else "the agent session"
    said = (
        f"{DONE[keyword]} {session} for this ticket, as {current_user()} asked on their "
        f"machine (`the-loop sessions {keyword}`)."
    )
    return {"body": f"{said}\n\n{AGENT_COMMENT_MARKER}"}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case: HTTP header names ignore case
    body: Any


@dataclass
class FakeGitHub:
    """A local server that records every request and answers with ``status``."""

    url: str
    status: int = 201
    requests: list[Received] = field(default_factory=list[Received])


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            fake.requests.append(
                Received(
                    "POST",
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    json.loads(raw or b"null"),
                )
            )
            payload = (
                {"html_url": "https://github.example/c/1"}
                if fake.status < 400
                else {"message": "Something went wrong"}
            )
            data = json.dumps(payload).encode()
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test output stays clean."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def write_config(
    tmp_path: Path,
    api_url: str,
    *,
    comment: bool | None = None,
    socket: str = "",
    token_env: str = "",
) -> World:
    """The shared world with the API URL in its config; no workspaces."""
    integration: dict[str, Any] = {"apiUrl": api_url}
    if token_env:
        integration["tokenEnv"] = token_env
    if comment is not None:
        integration["comment"] = comment
    workdir = tmp_path / "workdir"
    workdir.mkdir(exist_ok=True)
    routing: dict[str, Any] = {
        "defaultHarness": "command",
        "harnesses": {"command": {"argv": ["bash", "-c", "exec sleep 600"]}},
        "spawnWorkdir": str(workdir),
        "tmux": {"socket": socket},
    }
    document = {"routing": routing, "integrations": {"github": integration}}
    return World(tmp_path, document)


def held(world: World) -> World:
    """``world`` after recording a hand-started session of ITEM: the machine holds it."""
    session = Session(WorkItemRef.parse(ITEM), "command", "s1", cwd=str(world.home))
    world.registry.register(session)
    return world


def run(world: World, *argv: str) -> int:
    return world.run("sessions", *argv)


def events(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    log = tmp_path / "state" / "logs" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [event for event in map(json.loads, lines) if event["event"] == name]


def control_command(tmp_path: Path) -> str:
    record = json.loads((tmp_path / "state" / "portable" / "github-octo-app-15.json").read_text())
    return record["control"]["command"]


@pytest.mark.parametrize("verb", ["pause", "resume", "stop"])
def test_the_keyword_is_posted_with_the_token_and_the_api_headers(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    verb: str,
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = held(write_config(tmp_path, github.url))
    assert run(config, verb, "--work-item", ITEM) == 0
    [request] = github.requests
    assert (request.method, request.path) == ("POST", "/repos/octo/app/issues/15/comments")
    assert request.body == echo(verb)
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["user-agent"].startswith("the-loop/")
    captured = capsys.readouterr()
    assert "note:" not in captured.err
    assert (
        captured.out.splitlines()[-1]
        == f"{ITEM}: said so on the ticket: https://github.example/c/1"
    )
    assert [
        (event["work_item"], event["command"]) for event in events(tmp_path, "comment.posted")
    ] == [(ITEM, verb)]


def test_the_keyword_is_posted_with_the_token_that_token_env_names(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv("GH_TOKEN", "not-this-one")
    monkeypatch.setenv("LOOP_BOT_TOKEN", TOKEN)
    config = write_config(tmp_path, github.url, token_env="LOOP_BOT_TOKEN")
    assert run(held(config), "stop", "--work-item", ITEM) == 0
    [request] = github.requests
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "note:" not in capsys.readouterr().err


def test_a_named_token_variable_that_is_unset_is_named_in_the_note(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("LOOP_BOT_TOKEN", raising=False)
    config = write_config(tmp_path, github.url, token_env="LOOP_BOT_TOKEN")
    assert run(held(config), "stop", "--comment", "--work-item", ITEM) == 0
    assert github.requests == []
    assert f"note: {ITEM}: no comment posted: set $LOOP_BOT_TOKEN" in capsys.readouterr().err


def test_start_posts_start_after_the_session_was_spawned(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmux_socket: str,  # noqa: F811 - the imported fixture
):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    config = write_config(tmp_path, github.url, socket=tmux_socket)
    assert run(config, "start", "--work-item", ITEM) == 0
    assert [request.body for request in github.requests] == [echo("start")]
    assert len(events(tmp_path, "session.spawned")) == 1


def test_a_failed_start_posts_nothing(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = write_config(tmp_path, github.url, socket="no-such-loop-socket")
    monkeypatch.setenv("PATH", "/nonexistent")  # neither tmux nor bash: the start fails
    assert run(config, "start", "--work-item", ITEM) == 1
    assert github.requests == []


def test_a_failing_server_costs_one_note_and_never_the_local_action(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    github.status = 500
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = held(write_config(tmp_path, github.url))
    assert run(config, "pause", "--work-item", ITEM) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and captured.err.splitlines() == notes
    assert "500" in notes[0] and "Something went wrong" in notes[0] and TOKEN not in notes[0]
    assert captured.out == (f"{ITEM}: paused the command session; events are held until resume\n")
    assert control_command(tmp_path) == "pause"
    [failed] = events(tmp_path, "comment.failed")
    assert (failed["work_item"], failed["command"], failed["level"]) == (ITEM, "pause", "warning")
    assert events(tmp_path, "comment.posted") == []


def test_an_unreachable_api_is_one_note_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = held(write_config(tmp_path, "http://127.0.0.1:9"))  # the discard port: refused
    assert run(config, "stop", "--work-item", ITEM) == 0
    err = capsys.readouterr().err
    assert err.count("note:") == 1 and "could not reach 127.0.0.1:9" in err
    assert control_command(tmp_path) == "stop"


def test_comment_without_a_token_is_skipped_with_a_note(
    github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = held(write_config(tmp_path, github.url))
    assert run(config, "pause", "--work-item", ITEM, "--comment") == 0
    assert github.requests == []
    assert capsys.readouterr().err == (
        f"note: {ITEM}: no comment posted: set $GITHUB_TOKEN or $GH_TOKEN\n"
    )
    assert control_command(tmp_path) == "pause"


def test_without_a_token_the_default_is_silent(
    github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = held(write_config(tmp_path, github.url))
    assert run(config, "pause", "--work-item", ITEM) == 0
    assert github.requests == [] and capsys.readouterr().err == ""


def test_no_comment_posts_nothing_even_with_a_token(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = held(write_config(tmp_path, github.url))
    assert run(config, "resume", "--work-item", ITEM, "--no-comment") == 0
    assert github.requests == [] and capsys.readouterr().err == ""
    assert events(tmp_path, "comment.posted") == events(tmp_path, "comment.failed") == []


def test_the_config_can_turn_the_default_off_and_the_flag_back_on(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = held(write_config(tmp_path, github.url, comment=False))
    assert run(config, "pause", "--work-item", ITEM) == 0
    assert github.requests == []
    assert run(config, "pause", "--work-item", ITEM, "--comment") == 0
    assert [request.body for request in github.requests] == [echo("pause")]


def test_a_ref_of_another_provider_is_refused_and_nothing_is_posted(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    config = write_config(tmp_path, github.url)
    assert run(config, "pause", "--work-item", "gitlab:octo/app#15", "--comment") == 2
    assert "unknown provider 'gitlab'" in capsys.readouterr().err
    assert github.requests == []


def test_the_api_root_is_github_com_enterprise_or_the_override():
    assert api_url_for(WorkItemRef.parse(ITEM)) == "https://api.github.com"
    enterprise = WorkItemRef.parse("github:ghe.corp.example/octo/app#3")
    assert api_url_for(enterprise) == "https://ghe.corp.example/api/v3"
    assert api_url_for(enterprise, "http://127.0.0.1:8080/") == "http://127.0.0.1:8080"


def test_an_enterprise_ref_posts_to_its_own_repository_path(github: FakeGitHub):
    ref = WorkItemRef.parse("github:ghe.corp.example/octo/app#3")
    assert post_issue_comment(ref, "stop", token=TOKEN, api_url=github.url) == (
        "https://github.example/c/1"
    )
    assert github.requests[0].path == "/repos/octo/app/issues/3/comments"


def test_posting_without_a_token_or_to_a_non_http_url_is_refused():
    ref = WorkItemRef.parse(ITEM)
    with pytest.raises(GitHubError, match="no GitHub token"):
        post_issue_comment(ref, "stop", token="")
    with pytest.raises(GitHubError, match="must be http"):
        post_issue_comment(ref, "stop", token=TOKEN, api_url="file:///etc")


def test_every_posted_body_keeps_its_text_first_and_carries_the_marker_once(github: FakeGitHub):
    ref = WorkItemRef.parse(ITEM)
    post_issue_comment(ref, "gave up on comment 7\n", token=TOKEN, api_url=github.url)
    marked = f"already marked\n{AGENT_COMMENT_MARKER}"
    post_issue_comment(ref, marked, token=TOKEN, api_url=github.url)
    first, second = (request.body["body"] for request in github.requests)
    assert first.splitlines()[0] == "gave up on comment 7"
    assert first.endswith(f"\n{AGENT_COMMENT_MARKER}")
    assert second.count(AGENT_COMMENT_MARKER) == 1
