"""Both readers on (issue 20): the webhook receiver and the poll daemon, as real processes
beside the loopback fake, real tmux and real git, feed one intake. 1,000 comments over
ten items with live sessions; 5 % of the pushes dropped, 5 % sent twice (the same
delivery re-sent, or a second delivery of it as GitHub's redelivery makes one); the
receiver ``kill -9``-ed and started again 20 times during the run. Every comment reaches
its own pane exactly once: none pasted twice, none lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from tests.fake_github import FakeComment, FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.webhook_payloads import comment_created
from tests.helpers.webhook_sender import SECRET, deliver
from tests.test_poll_e2e import REPO, TOKEN
from tests.test_webhook_feed import SECRET_VARIABLE, PushWorld
from the_loop.dispatch.daemons import poller_holder

ITEMS = tuple(range(101, 111))
PER_ITEM = 100
COMMENTS = len(ITEMS) * PER_ITEM
KILLS = 20
DROPPED, TWICE = 0.05, 0.05
SEED = 20


def pane_agent(directory: Path) -> list[str]:
    """The stand-in agent, one file per session: its prompt, then what is pasted into it."""
    script = (
        'f="$3/$(printf %s "$2" | tr -c A-Za-z0-9 _).txt"; '
        'printf "PROMPT %s\\n" "$1" > "$f"; exec cat >> "$f"'
    )
    return ["bash", "-c", script, "agent", "{prompt}", "{work_item}", str(directory)]


def token(sequence: int) -> str:
    """The body of the run's comment ``sequence``: one short line, found nowhere else."""
    return f"note-{sequence:04d}-end"


class BothWorld(PushWorld):
    """A push world whose sessions each paste into a file of their own, and whose poller
    runs as a daemon beside the receiver."""

    def __init__(self, tmp_path: Path, socket: str, github: FakeGitHub) -> None:
        super().__init__(tmp_path, socket, github)
        self.panes = tmp_path / "panes"
        self.panes.mkdir()
        self.logs = tmp_path / "process-logs"
        self.logs.mkdir()
        config = json.loads(self.config_path.read_text("utf-8"))
        config["routing"]["harnesses"]["command"]["argv"] = pane_agent(self.panes)
        config["polling"] |= {
            "intervalSeconds": 1,
            "reconcileSeconds": 1,  # the poller reconciles behind the receiver all along
            "maxDeliveriesPerHour": 100_000,
        }
        # Each 👀 is a POST, and POSTs go a second apart (GitHub's guidance for writes): a
        # thousand of them would be the run's whole time, so none is made here.
        config["integrations"]["github"]["acknowledge"] = False
        self.configure(config)
        self._opened: list[IO[bytes]] = []

    def pane(self, number: int) -> str:
        path = self.panes / f"github_octo_app_{number}.txt"
        return path.read_text("utf-8") if path.exists() else ""

    def _log(self, name: str) -> IO[bytes]:
        handle = (self.logs / f"{name}.log").open("ab")
        self._opened.append(handle)
        return handle

    def start_receiver(self) -> subprocess.Popen[bytes]:
        """``the-loop webhook`` started (its stderr to a file, never a pipe nobody reads)."""
        env = {**os.environ, SECRET_VARIABLE: SECRET, "GITHUB_TOKEN": TOKEN}
        argv = [sys.executable, "-m", "the_loop", "--config", str(self.config_path), "webhook"]
        log = self._log(f"receiver-{len(self.processes)}")
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
        self.processes.append(process)
        return process

    def serving(self, process: subprocess.Popen[bytes]) -> bool:
        try:
            said = json.loads((self.layout.local_dir / "webhook-status.json").read_text("utf-8"))
        except (OSError, ValueError):
            return False
        return said.get("pid") == process.pid and said.get("stoppedAt") is None

    def start_poller(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "GITHUB_TOKEN": TOKEN}
        argv = [sys.executable, "-m", "the_loop", "--config", str(self.config_path), "poll"]
        log = self._log("poller")
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
        self.processes.append(process)
        return process

    def inbox_pending(self) -> int:
        from the_loop.webhook.inbox import Inbox

        inbox = Inbox(
            self.layout.local_dir / "webhook-inbox",
            lock_path=self.layout.local_locks_dir / "webhook-inbox.lock",
        )
        return len(inbox.pending())

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for handle in self._opened:
            handle.close()


@dataclass
class Sender:
    """GitHub's side of the run: each comment written in the fake, then pushed once, twice
    or not at all (seeded), with the receiver ``kill -9``-ed and started again between
    pushes; what it did, counted."""

    world: BothWorld
    github: FakeGitHub
    receiver: subprocess.Popen[bytes]
    rng: random.Random = field(default_factory=lambda: random.Random(SEED))
    items: tuple[int, ...] = ITEMS
    comments: int = COMMENTS
    kills_planned: int = KILLS
    items_of: dict[int, int] = field(default_factory=dict[int, int])  # sequence -> item
    arrived: dict[int, float] = field(default_factory=dict[int, float])  # monotonic, on GitHub
    once: int = 0
    twice_same_id: int = 0
    twice_new_id: int = 0
    dropped: int = 0
    down: int = 0  # pushes that found no receiver listening: dropped too
    refused: Counter[int] = field(default_factory=Counter[int])  # answered, but not 202
    kills: int = 0

    def run(self) -> None:
        planned = self.kills_planned
        kill_at = {self.comments * (k + 1) // (planned + 1) for k in range(planned)}
        for sequence in range(self.comments):
            if sequence in kill_at:
                self.kill()
            self.comment(sequence)
            if sequence in kill_at:  # the push after the kill found nobody: start again
                self.receiver = self.world.start_receiver()
                self.wait_serving()

    def wait_serving(self) -> None:
        receiver = self.receiver
        assert wait_until(lambda: self.world.serving(receiver), timeout=30)

    def kill(self) -> None:
        self.wait_serving()
        self.receiver.kill()  # kill -9: no handler runs, whatever it was doing
        self.receiver.wait(timeout=30)
        self.kills += 1

    def comment(self, sequence: int) -> None:
        number = self.items[sequence % len(self.items)]
        self.items_of[sequence] = number
        self.github.advance(1)
        comment = self.github.add_comment(REPO, number, token(sequence), login="alice")
        self.arrived[sequence] = time.monotonic()
        fate, delivery = self.rng.random(), f"d-{comment.id}"
        if fate < DROPPED:
            self.dropped += 1
        elif not self.push(comment, delivery):
            self.down += 1
        elif fate >= DROPPED + TWICE:
            self.once += 1
        elif self.rng.random() < 0.5:
            self.twice_same_id += 1
            self.push(comment, delivery)  # the same delivery sent again
        else:
            self.twice_new_id += 1
            self.push(comment, f"{delivery}-redelivered")  # a redelivery: a new delivery id

    def push(self, comment: FakeComment, delivery: str) -> bool:
        payload = comment_created(self.github, comment)
        try:
            answer = deliver(self.world.address, payload, delivery=delivery)
        except (OSError, AssertionError):  # refused, reset, or closed without an answer
            return False
        if answer.status != 202:
            self.refused[answer.status] += 1
            return False
        return True

    def said(self) -> str:
        twice = self.twice_same_id + self.twice_new_id
        refused = f", {dict(self.refused)} refused" if self.refused else ""
        return (
            f"{self.comments} comments over {len(self.items)} items; pushed once "
            f"{self.once}, twice {twice} ({self.twice_same_id} same id, {self.twice_new_id} "
            "new id), dropped "
            f"{self.dropped + self.down} ({self.dropped} not sent, {self.down} to a receiver "
            f"down{refused}); receiver kill -9 x{self.kills}"
        )


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        for number in ITEMS:
            fake.add_issue(REPO, number, title=f"Item {number}", labels=("the-loop",))
        yield fake


@pytest.fixture
def world(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[BothWorld]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    made = BothWorld(tmp_path, tmux_socket, github)
    try:
        yield made
    finally:
        made.stop()


def live_sessions(world: BothWorld, github: FakeGitHub) -> None:
    """A session on every item, started by an authorized comment, its agent running."""
    for number in ITEMS:
        github.add_comment(REPO, number, "the-loop start", login="alice")
    assert world.poll()["commands"] == len(ITEMS)

    def prompted() -> bool:
        return all("PROMPT Ticket" in world.pane(number) for number in ITEMS)

    assert wait_until(prompted, timeout=60), {n: world.pane(n)[:80] for n in ITEMS}


def poll_cycles(world: BothWorld, cycles: int) -> None:
    """Wait for the daemon to end ``cycles`` more cycles (its status file written each)."""
    status = world.layout.local_dir / "poll-status.json"
    for _ in range(cycles):
        before = status.stat().st_mtime_ns
        assert wait_until(lambda b=before: status.stat().st_mtime_ns != b, timeout=60)


@pytest.mark.slow
def test_both_readers_paste_every_comment_once_through_drops_repeats_and_kills(
    world: BothWorld, github: FakeGitHub
) -> None:
    started = time.monotonic()
    live_sessions(world, github)
    receiver = world.start_receiver()
    assert wait_until(lambda: world.serving(receiver), timeout=30)
    poller = world.start_poller()
    assert wait_until(lambda: poller_holder(world.layout.poll_pidfile) == poller.pid, timeout=30)

    sender = Sender(world, github, receiver)
    sender.run()
    pushed = time.monotonic() - started

    def counts() -> dict[int, int]:
        panes = {number: world.pane(number) for number in ITEMS}
        return {s: panes[n].count(token(s)) for s, n in sender.items_of.items()}

    wait_until(lambda: all(counts().values()), timeout=120, interval=0.5)
    poll_cycles(world, 2)  # and an empty inbox: a late second paste would be in now
    assert wait_until(lambda: world.inbox_pending() == 0, timeout=60)
    settled = time.monotonic() - started
    assert sender.receiver.poll() is None and poller.poll() is None

    found = counts()
    duplicates = sorted(s for s, n in found.items() if n > 1)
    lost = sorted(s for s, n in found.items() if n == 0)
    elsewhere = [
        s for s, n in sender.items_of.items() for other in ITEMS
        if other != n and token(s) in world.pane(other)
    ]  # fmt: skip
    events = world.events_named("poll.comment_delivered")
    by = Counter(str(event.get("source")) for event in events)
    summary = (
        f"both readers: {sender.said()}; pastes {sum(found.values())} (events: webhook "
        f"{by['webhook']}, poll {by['poll']}); duplicates {len(duplicates)}, lost {len(lost)}, "
        f"in another pane {len(elsewhere)}; pushed by {pushed:.0f} s, settled by {settled:.0f} s"
    )
    print(summary)
    assert (duplicates, lost, elsewhere) == ([], [], []), (
        f"{summary}; duplicated {duplicates[:20]}, lost {lost[:20]}, misplaced {elsewhere[:20]}"
    )
    assert by["webhook"] > 0 and by["poll"] > 0, f"both readers pasted: {summary}"
