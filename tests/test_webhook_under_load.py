"""Both readers under load (issue 28, item 11): the receiver and the poll daemon beside
the loopback fake, real tmux and real git, while other processes keep every core busy.
200 comments over four items; 5 % of the pushes dropped, 5 % sent twice; the receiver
``kill -9``-ed and started again five times. Each comment reaches its own pane once,
within two reconcile intervals of its arrival on GitHub (the delivery promise)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN
from tests.test_webhook_both_readers import BothWorld, Sender, poll_cycles, token
from the_loop.dispatch.daemons import poller_holder

ITEMS = (101, 102, 103, 104)
COMMENTS = 200
KILLS = 5
#: The test's ``polling.reconcileSeconds``; the promise is two of them from arrival.
RECONCILE_SECONDS = 5.0
PROMISE_SECONDS = 2 * RECONCILE_SECONDS
#: One busy loop per core, at the test's own priority: the machine is loaded, not idle.
BURNERS = max(2, len(os.sched_getaffinity(0)))
_TOKEN = re.compile(r"note-(\d{4})-end")


class PaneWatch:
    """When each comment's token first appeared in any pane file (monotonic seconds),
    read every 50 ms by a thread of its own."""

    def __init__(self, panes: Path) -> None:
        self.panes = panes
        self.seen: dict[int, float] = {}
        self._offsets: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pane-watch", daemon=True)

    def __enter__(self) -> PaneWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.look()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.look()

    def look(self) -> None:
        now = time.monotonic()
        for path in sorted(self.panes.glob("*.txt")):
            with path.open("rb") as handle:
                start = max(self._offsets.get(path, 0) - 16, 0)  # a token cut at the end
                handle.seek(start)
                data = handle.read()
            self._offsets[path] = start + len(data)
            for found in _TOKEN.finditer(data.decode("utf-8", "replace")):
                self.seen.setdefault(int(found.group(1)), now)


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
    config = json.loads(made.config_path.read_text("utf-8"))
    config["polling"] |= {"intervalSeconds": 1, "reconcileSeconds": RECONCILE_SECONDS}
    made.configure(config)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def busy_cores() -> Iterator[int]:
    """Every core kept busy by a process of its own until the test ends."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BURNERS)]
    try:
        yield len(burners)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def live_sessions(world: BothWorld, github: FakeGitHub) -> None:
    """A session on every item, started by an authorized comment, its agent running."""
    for number in ITEMS:
        github.add_comment(REPO, number, "the-loop start", login="alice")
    assert world.poll()["commands"] == len(ITEMS)

    def prompted() -> bool:
        return all("PROMPT Ticket" in world.pane(number) for number in ITEMS)

    assert wait_until(prompted, timeout=60), {n: world.pane(n)[:80] for n in ITEMS}


@pytest.mark.slow
def test_every_comment_reaches_its_pane_once_within_two_reconcile_intervals_under_load(
    world: BothWorld, github: FakeGitHub, busy_cores: int
) -> None:
    live_sessions(world, github)
    receiver = world.start_receiver()
    assert wait_until(lambda: world.serving(receiver), timeout=30)
    poller = world.start_poller()
    assert wait_until(lambda: poller_holder(world.layout.poll_pidfile) == poller.pid, timeout=30)

    sender = Sender(world, github, receiver, items=ITEMS, comments=COMMENTS, kills_planned=KILLS)
    with PaneWatch(world.panes) as watch:
        sender.run()
        last_push = time.monotonic()
        # Past the promise too: a late comment is told from a lost one.
        wait_until(lambda: len(watch.seen) == COMMENTS, timeout=PROMISE_SECONDS + 60)
        poll_cycles(world, 2)  # and an empty inbox: a late second paste would be in now
        assert wait_until(lambda: world.inbox_pending() == 0, timeout=60)
    assert sender.receiver.poll() is None and poller.poll() is None

    panes = {number: world.pane(number) for number in ITEMS}
    found = {s: panes[n].count(token(s)) for s, n in sender.items_of.items()}
    duplicates = sorted(s for s, n in found.items() if n > 1)
    lost = sorted(s for s, n in found.items() if n == 0)
    lateness = {s: watch.seen[s] - sender.arrived[s] for s in watch.seen}
    late = sorted(s for s, seconds in lateness.items() if seconds > PROMISE_SECONDS)
    latest = max(lateness, key=lateness.__getitem__, default=-1)
    last = max(watch.seen.values(), default=last_push) - last_push
    summary = (
        f"under load ({busy_cores} busy loops): {sender.said()}; duplicates "
        f"{len(duplicates)}, lost {len(lost)}, late {len(late)}; the latest comment (#{latest}) "
        f"reached its pane {lateness.get(latest, 0.0):.1f} s after it arrived (the promise: "
        f"{PROMISE_SECONDS:g} s, two reconcile intervals of {RECONCILE_SECONDS:g} s); the last "
        f"one {last:.1f} s after the last push"
    )
    print(summary)
    assert (duplicates, lost, late) == ([], [], []), (
        f"{summary}; duplicated {duplicates[:20]}, lost {lost[:20]}, late "
        f"{[(s, round(lateness[s], 1)) for s in late[:20]]}"
    )
