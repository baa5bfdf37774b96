"""The poller beside a webhook receiver: the decision (a receiver counts when it holds the
lock, wrote the status and accepted a signed delivery), the stretched wait, and the
daemon in a real subprocess beside a fake receiver (this test process holding the
receiver's pidfile lock and writing its status file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from tests.test_poll_e2e import TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.commands.poll_reconcile import (
    Reconciler,
    changes,
    counting_receiver,
    cycle_wait,
    receiver_of,
)
from the_loop.dispatch.daemons import DaemonLock, receiver_files
from the_loop.fsio import write_json
from the_loop.webhook.status import status_path

RECEIVER = 4242


def status(**fields: Any) -> dict[str, Any]:
    """A receiver's status file as it writes it: signed, one delivery accepted."""
    return {"pid": RECEIVER, "insecure": False, "accepted": 1, "startedAt": "x", **fields}


@pytest.mark.parametrize(
    ("holder", "document", "counting"),
    [
        (RECEIVER, status(), RECEIVER),
        (RECEIVER, status(accepted=7, duplicate=3), RECEIVER),
        (None, status(), None),  # nobody holds the lock: a status left by a dead receiver
        (-1, status(), None),  # held, but its pid not written yet
        (RECEIVER, None, None),  # no status file (yet)
        (RECEIVER, status(pid=RECEIVER + 1), None),  # the status of another (earlier) run
        (RECEIVER, status(insecure=True), None),  # unsigned deliveries prove nothing
        (RECEIVER, status(accepted=0, ping=1, rejected=5), None),  # nothing accepted yet
        (RECEIVER, {"pid": RECEIVER, "insecure": False}, None),
        (RECEIVER, status(accepted="3"), None),
        (RECEIVER, status(accepted=True), None),
    ],
)
def test_a_receiver_counts_only_holding_its_lock_with_its_own_status_and_a_signed_delivery(
    holder: int | None, document: dict[str, Any] | None, counting: int | None
) -> None:
    assert counting_receiver(holder, document) == counting


def test_the_wait_stretches_to_the_reconcile_seconds_but_never_below_the_normal_wait() -> None:
    assert cycle_wait(60, 600, receiver=None) == 60
    assert cycle_wait(60, 600, receiver=RECEIVER) == 600
    assert cycle_wait(900, 600, receiver=RECEIVER) == 900  # a back-off still holds
    assert cycle_wait(60, 30, receiver=RECEIVER) == 60


def test_each_change_of_the_receiver_is_said_once() -> None:
    assert changes(None, None) == ()
    assert changes(RECEIVER, RECEIVER) == ()
    assert changes(None, RECEIVER) == (("started", RECEIVER),)
    assert changes(RECEIVER, None) == (("ended", RECEIVER),)
    assert changes(RECEIVER, 7) == (("ended", RECEIVER), ("started", 7))


def test_receiver_of_reads_the_lock_and_the_status_file(tmp_path: Path) -> None:
    layout = World(tmp_path).layout
    assert receiver_of(layout) is None
    lock = DaemonLock(receiver_files(layout))
    lock.acquire()
    try:
        assert receiver_of(layout) is None  # no status file yet
        write_json(status_path(layout.local_dir), status(pid=os.getpid()))
        assert receiver_of(layout) == os.getpid()
    finally:
        lock.release()
    assert receiver_of(layout) is None


class Clock:
    """A monotonic clock that only the recorded sleeps move."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


@pytest.fixture
def reconcile_world(tmp_path: Path) -> World:
    return World(tmp_path, {"polling": {"intervalSeconds": 10, "reconcileSeconds": 100}})


def waited(
    root: World, looks: list[int | None], *, normal: float = 10, started: float = 0.0
) -> tuple[Clock, list[int | None]]:
    """One :meth:`Reconciler.wait` whose receiver is, look after look, ``looks`` (the
    last one repeated); the sleeps it made and what it saw."""
    clock, seen = Clock(), list[int | None]()

    def look(_layout: object) -> int | None:
        seen.append(looks[min(len(seen), len(looks) - 1)])
        return seen[-1]

    reconciler = Reconciler(look, clock)
    reconciler.wait(
        root.context, started=started, normal=normal, sleep=clock.sleep, stop=lambda: False
    )
    return clock, seen


def event_names(root: World) -> list[str]:
    log = root.layout.event_log
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [json.loads(line)["event"] for line in lines]


def test_without_a_receiver_the_wait_is_the_normal_one(reconcile_world: World) -> None:
    clock, seen = waited(reconcile_world, [None], started=-3.0)  # the cycle took 3 s
    assert (clock.sleeps, seen) == ([7.0], [None])
    assert event_names(reconcile_world) == []


def test_beside_a_receiver_the_wait_stretches_looking_every_interval(
    reconcile_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, seen = waited(reconcile_world, [RECEIVER])
    assert clock.sleeps == [10.0] * 10 and clock.now == 100
    assert set(seen) == {RECEIVER}
    assert event_names(reconcile_world) == ["poll.reconciling"]
    err = capsys.readouterr().err
    assert (
        err
        == f"poll: the webhook receiver (pid {RECEIVER}) runs: polling every 100 s to reconcile\n"
    )


def test_a_receiver_that_stops_ends_the_stretched_wait_at_the_next_look(
    reconcile_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    clock, seen = waited(reconcile_world, [RECEIVER, RECEIVER, None])
    assert (clock.sleeps, seen) == ([10.0, 10.0], [RECEIVER, RECEIVER, None])
    assert event_names(reconcile_world) == ["poll.reconciling", "poll.reconcile_ended"]
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"poll: the webhook receiver (pid {RECEIVER}) stopped: polling every 10 s again"
    )


def test_a_back_off_longer_than_the_reconcile_wait_is_waited_out_once(
    reconcile_world: World,
) -> None:
    clock, _ = waited(reconcile_world, [RECEIVER], normal=300)
    assert clock.sleeps == [300.0]


def test_a_stop_asked_before_the_wait_skips_it_and_says_nothing(reconcile_world: World) -> None:
    clock = Clock()
    reconciler = Reconciler(lambda _layout: RECEIVER, clock)
    reconciler.wait(
        reconcile_world.context, started=0, normal=10, sleep=clock.sleep, stop=lambda: True
    )
    assert clock.sleeps == [] and event_names(reconcile_world) == []


@pytest.fixture
def receiver_lock(world: PollWorld) -> Iterator[DaemonLock]:  # noqa: F811 - the fixture
    """The receiver's lock, held by this test process (its pid written beside it)."""
    lock = DaemonLock(receiver_files(world.layout))
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def start_daemon(loop_world: PollWorld) -> subprocess.Popen[bytes]:
    document = json.loads(loop_world.config_path.read_text(encoding="utf-8"))
    document["polling"].update(intervalSeconds=0.2, reconcileSeconds=600)
    loop_world.configure(document)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(loop_world.config_path), "poll"]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def cycles(loop_world: PollWorld) -> int:
    return len(loop_world.events_named("poll.cycle"))


def test_the_daemon_reconciles_behind_a_counting_receiver_and_returns_when_it_stops(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    receiver_lock: DaemonLock,
) -> None:
    status_file = status_path(world.layout.local_dir)
    write_json(status_file, status(pid=os.getpid(), accepted=0))
    daemon = start_daemon(world)
    try:
        assert wait_until(lambda: cycles(world) >= 3, timeout=30)  # nothing accepted yet
        assert world.events_named("poll.reconciling") == []

        write_json(status_file, status(pid=os.getpid(), accepted=1))
        assert wait_until(lambda: bool(world.events_named("poll.reconciling")), timeout=30)
        [reconciling] = world.events_named("poll.reconciling")
        assert (reconciling["receiver_pid"], reconciling["seconds"]) == (os.getpid(), 600)
        code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
        assert (code, json.loads(out)["items"][0]["reconcilingBehind"]) == (0, os.getpid())
        stretched = cycles(world)
        # A dozen intervals and more: an unstretched daemon would have cycled again.
        assert not wait_until(lambda: cycles(world) > stretched, timeout=3)

        receiver_lock.release()  # the receiver stops
        assert wait_until(lambda: cycles(world) >= stretched + 3, timeout=30)
        [ended] = world.events_named("poll.reconcile_ended")
        assert ended["receiver_pid"] == os.getpid()
        code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
        assert json.loads(out)["items"][0]["reconcilingBehind"] is None
        code, _, _ = world.run_cli(["poll", "stop"])
        assert code == 0
        _, err = daemon.communicate(timeout=30)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0
    lines = err.decode().splitlines()
    said = [line for line in lines if "webhook receiver" in line]
    assert said == [
        f"poll: the webhook receiver (pid {os.getpid()}) runs: polling every 600 s to reconcile",
        f"poll: the webhook receiver (pid {os.getpid()}) stopped: polling every 0.2 s again",
    ]


def test_a_stop_ends_a_stretched_wait_at_once_and_an_insecure_receiver_stretches_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    receiver_lock: DaemonLock,
) -> None:
    status_file = status_path(world.layout.local_dir)
    write_json(status_file, status(pid=os.getpid(), accepted=5, insecure=True))
    daemon = start_daemon(world)
    try:
        assert wait_until(lambda: cycles(world) >= 3, timeout=30)
        assert world.events_named("poll.reconciling") == []

        write_json(status_file, status(pid=os.getpid(), accepted=5))
        assert wait_until(lambda: bool(world.events_named("poll.reconciling")), timeout=30)
        code, _, _ = world.run_cli(["poll", "stop"])  # within 30 s of a 600 s wait
        assert code == 0
        assert daemon.wait(timeout=30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    [stopped] = world.events_named("poll.stopped")
    assert stopped["cut_short"] is False
