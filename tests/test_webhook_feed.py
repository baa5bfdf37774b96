"""`the-loop webhook` feeding the intake, as a real process beside the loopback fake, real
tmux and real git: a pushed comment reaches the live agent's pane once, whichever reader
(the receiver, then the poller) sees it; a start pushed spawns; a closed item pushed ends
its session; what a killed receiver had accepted is acted on when it starts again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.webhook_payloads import comment_created, issue_event
from tests.helpers.webhook_sender import SECRET, deliver, free_port
from tests.test_poll_e2e import REPO, TOKEN, PollWorld

SECRET_VARIABLE = "THE_LOOP_GH_WEBHOOK_SECRET"


class PushWorld(PollWorld):
    """A poll world whose receiver listens on a free loopback port."""

    def __init__(self, tmp_path: Path, socket: str, github: FakeGitHub) -> None:
        super().__init__(tmp_path, socket, github)
        self.port = free_port()
        config = json.loads(self.config_path.read_text("utf-8"))
        config["webhook"] = {"host": "127.0.0.1", "port": self.port}
        self.config_path.write_text(json.dumps(config), encoding="utf-8")
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def receiver(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, SECRET_VARIABLE: SECRET, "GITHUB_TOKEN": TOKEN}
        argv = [sys.executable, "-m", "the_loop", "--config", str(self.config_path), "webhook"]
        process = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE)
        self.processes.append(process)
        status = self.layout.local_dir / "webhook-status.json"

        def serving() -> bool:
            try:
                said = json.loads(status.read_text("utf-8"))
            except (OSError, ValueError):
                return process.poll() is not None
            return said.get("pid") == process.pid and said.get("stoppedAt") is None

        assert wait_until(serving, timeout=30)
        assert process.poll() is None
        return process

    def push(self, event: str, payload: dict[str, Any], delivery: str) -> None:
        answer = deliver(self.address, payload, event=event, delivery=delivery)
        assert answer.status == 202, answer

    def pasted(self, text: str) -> int:
        return self.read().count(text)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(
            REPO, 15, title="Fix the wobbling widget", body="It wobbles.", labels=("the-loop",)
        )
        yield fake


@pytest.fixture
def world(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[PushWorld]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    made = PushWorld(tmp_path, tmux_socket, github)
    yield made
    for process in made.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def test_a_pushed_start_spawns_and_a_pushed_comment_reaches_the_pane_once(
    world: PushWorld, github: FakeGitHub
) -> None:
    world.poll()  # the repository met once: its cursor set, nothing live
    receiver = world.receiver()
    github.advance(5)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.push("issue_comment", comment_created(github, start), "d-start")
    assert wait_until(lambda: world.live(), timeout=30)
    assert wait_until(lambda: "Fix the wobbling widget" in world.read(), timeout=30)

    github.advance(5)
    note = github.add_comment(REPO, 15, "please cover the empty case", login="alice")
    world.push("issue_comment", comment_created(github, note), "d-note")
    assert wait_until(lambda: world.pasted("please cover the empty case") == 1, timeout=30)
    world.push("issue_comment", comment_created(github, note), "d-note")  # re-sent: same id
    world.push("issue_comment", comment_created(github, note), "d-note-again")  # GitHub twice
    report = world.poll()  # the poller meets it too: the ledger holds it
    assert report["delivered"] == 0
    assert wait_until(lambda: len(world.events_named("webhook.processed")) >= 3, timeout=30)
    assert world.pasted("please cover the empty case") == 1
    assert receiver.poll() is None


def test_a_pushed_closure_ends_the_session(world: PushWorld, github: FakeGitHub) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert world.live()
    world.receiver()
    github.set_state(REPO, 15, "closed", by="alice")
    issue = github.issues[("octo", "app", 15)]
    world.push("issues", issue_event(github, issue, "closed"), "d-closed")
    assert wait_until(lambda: not world.live(), timeout=30)
    assert wait_until(lambda: bool(world.events_named("poll.closure")), timeout=30)
    [closure] = world.events_named("poll.closure")
    assert closure["source"] == "webhook"


def test_what_a_killed_receiver_accepted_is_acted_on_when_it_starts_again(
    world: PushWorld, github: FakeGitHub
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert wait_until(lambda: "Fix the wobbling widget" in world.read(), timeout=30)
    receiver = world.receiver()
    receiver.send_signal(signal.SIGSTOP)  # it answers nothing now: its feeder cannot run
    try:
        github.advance(5)
        note = github.add_comment(REPO, 15, "a note for after the crash", login="alice")
        payload = json.dumps(comment_created(github, note)).encode()
        world.processes.remove(receiver)
    finally:
        receiver.send_signal(signal.SIGKILL)
        receiver.wait(timeout=30)
    # Stored as a receiver stores it (the killed one could not answer), then a new one starts.
    from the_loop.webhook.inbox import Inbox

    inbox = Inbox(
        world.layout.local_dir / "webhook-inbox",
        lock_path=world.layout.local_locks_dir / "webhook-inbox.lock",
    )
    inbox.open()
    assert inbox.store(
        event="issue_comment", delivery_id="d-after", text=payload.decode(), received_at="now"
    )
    world.receiver()
    assert wait_until(lambda: world.pasted("a note for after the crash") == 1, timeout=30)
    assert wait_until(lambda: not inbox.pending(), timeout=30)
