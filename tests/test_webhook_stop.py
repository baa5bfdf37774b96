"""`the-loop webhook` stopped by SIGTERM with deliveries it accepted but has not acted on
yet, as a real process beside the loopback fake, real tmux and real git: it stops
accepting, acts on every one of them, then exits 0; past `webhook.finishSeconds` it says
how many it left, and they wait in the inbox for its next start, never lost.

The receiver's processing side is held in its first request to GitHub (the fake stalls
it) while six comments are accepted, and let go only once the receiver has stopped
listening: the six are then all waiting when the signal comes."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.webhook_payloads import comment_created
from tests.helpers.world import World
from tests.test_poll_e2e import REPO, TOKEN
from tests.test_webhook_feed import PushWorld
from the_loop.commands.webhook_feed import Feeding, InboxFeeder
from the_loop.eventlog.log import EventLog
from the_loop.webhook.inbox import Inbox

NOTES = tuple(f"accepted note {n} of six" for n in range(6))


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
    github.released.set()
    for process in made.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)


def inbox_of(world: World) -> Inbox:
    return Inbox(
        world.layout.local_dir / "webhook-inbox",
        lock_path=world.layout.local_locks_dir / "webhook-inbox.lock",
    )


def set_finish_seconds(world: PushWorld, seconds: float | None) -> None:
    config = json.loads(world.config_path.read_text("utf-8"))
    config["webhook"].pop("finishSeconds", None)
    if seconds is not None:
        config["webhook"]["finishSeconds"] = seconds
    world.config_path.write_text(json.dumps(config), encoding="utf-8")


def refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return True
    return False


def six_accepted_then_sigterm(world: PushWorld, github: FakeGitHub) -> subprocess.Popen[bytes]:
    """A live session, a receiver, six comments accepted while its processing side waits
    on GitHub, then SIGTERM; GitHub answers again once the receiver stopped listening."""
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert wait_until(lambda: "Fix the wobbling widget" in world.read(), timeout=30)
    receiver = world.receiver()
    github.fail_repository(REPO, stall_seconds=float("inf"))
    for number, text in enumerate(NOTES):
        github.advance(5)
        note = github.add_comment(REPO, 15, text, login="alice")
        world.push("issue_comment", comment_created(github, note), f"d-note-{number}")
    assert [entry.delivery_id for entry in inbox_of(world).pending()][-1] == "d-note-5"
    # The processing side is in its first request to the repository, held by the fake.
    assert wait_until(lambda: f"/repos/{REPO}/" not in github.failures, timeout=30)
    receiver.send_signal(signal.SIGTERM)
    assert wait_until(lambda: refused(world.address), timeout=30), "still accepting"
    github.released.set()
    return receiver


def test_sigterm_acts_on_all_six_accepted_comments_before_the_receiver_exits(
    world: PushWorld, github: FakeGitHub
) -> None:
    receiver = six_accepted_then_sigterm(world, github)
    assert receiver.wait(timeout=120) == 0
    assert inbox_of(world).pending() == []
    delivered = world.events_named("poll.comment_delivered")
    assert len([e for e in delivered if e["source"] == "webhook"]) == len(NOTES), delivered
    for text in NOTES:  # the agent reads what was pasted at its own pace
        assert wait_until(lambda text=text: world.pasted(text) == 1, timeout=30), world.read()
    [stopped] = world.events_named("webhook.stopped")
    assert (stopped["signal"], stopped["left"]) == ("SIGTERM", 0)
    assert world.events_named("webhook.left_in_inbox") == []
    assert receiver.stderr is not None
    assert "left in the inbox" not in receiver.stderr.read().decode()


def test_past_finish_seconds_it_says_what_it_left_and_the_next_start_acts_on_it(
    world: PushWorld, github: FakeGitHub
) -> None:
    set_finish_seconds(world, 0)
    receiver = six_accepted_then_sigterm(world, github)
    assert receiver.wait(timeout=120) == 0
    left = len(inbox_of(world).pending())
    assert left >= len(NOTES) - 1  # at most the one it was on when the deadline passed
    assert receiver.stderr is not None
    said = [line for line in receiver.stderr.read().decode().splitlines() if "left in" in line]
    assert said == [
        f"warning: webhook: {left} accepted deliveries left in the inbox (not finished within "
        "webhook.finishSeconds (0 s)): the next start of the receiver acts on them"
    ]
    [event] = world.events_named("webhook.left_in_inbox")
    assert (event["left"], event["reason"], event["seconds"], event["level"]) == (
        left,
        "deadline",
        0,
        "warning",
    )
    [stopped] = world.events_named("webhook.stopped")
    assert stopped["left"] == left

    set_finish_seconds(world, None)
    world.receiver()  # never lost: the next start takes them, each pasted once
    for text in NOTES:
        assert wait_until(lambda text=text: world.pasted(text) == 1, timeout=60), world.read()
    assert wait_until(lambda: inbox_of(world).pending() == [], timeout=30)


class ScriptedFeeder(InboxFeeder):
    """A feeder whose batches are scripted: each ``process`` takes the next outcome; a
    ``None`` waits until the feeder is told to stop (an item that outlasts the deadline)."""

    script: list[tuple[bool, bool] | None]

    def process(self) -> tuple[bool, bool]:
        self.inbox.arrived.clear()
        outcome = self.script.pop(0) if self.script else (False, False)
        if outcome is None:
            self.stopping.wait()
            return False, False
        return outcome


def feeding(tmp_path: Path, *script: tuple[bool, bool] | None, pending: int = 1) -> Feeding:
    world = World(tmp_path / "home")
    inbox = inbox_of(world)
    inbox.open()
    for number in range(pending):
        inbox.store(event="issues", delivery_id=f"d-{number}", text="{}", received_at="now")
    events = EventLog(world.layout.event_log, source="test")
    feeder = ScriptedFeeder(world.context, inbox, "token", events, threading.Event())
    feeder.script = list(script)
    thread = threading.Thread(target=feeder.run)
    thread.start()
    return Feeding(feeder, thread)


def test_finishing_ends_at_a_failed_batch_and_says_failed(tmp_path: Path) -> None:
    started = feeding(tmp_path, (False, False), (False, True), (False, False))
    assert started.finish(600.0) == "failed"  # not the deadline: the failure ended it
    assert not started.thread.is_alive()


def test_finishing_past_its_seconds_stops_the_feeder_after_its_item(tmp_path: Path) -> None:
    started = feeding(tmp_path, (False, False), None)
    assert started.finish(0.0) == "deadline"
    assert not started.thread.is_alive() and started.feeder.stopping.is_set()


def test_finishing_an_emptied_inbox_ends_at_once(tmp_path: Path) -> None:
    started = feeding(tmp_path, pending=0)
    assert started.finish(600.0) == ""
    assert not started.thread.is_alive()
