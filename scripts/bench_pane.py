"""Comment-to-pane latency of ``make bench``: through the webhook receiver, and the poller's.

One world, as the end-to-end tests build it: a temporary state root and config, the
loopback fake GitHub of ``tests/`` (served from a thread of this process), a local bare
git remote for the checkout, real tmux on a private socket, and the ``command`` harness
running a stand-in agent that appends everything pasted into its pane to a file. One live
session is started by an authorized ``the-loop start`` comment that ``poll --once`` picks
up. Then, in this order (a receiver that counts would stretch the daemon's cycle):

- **the poller**: ``the-loop poll`` (the daemon) with ``polling.intervalSeconds`` at
  :data:`INTERVAL`; each comment is added to the fake at a random moment of the cycle (one
  in each equal slice of it) and timed until its token is in the agent's file: the wait
  for the next cycle, then the cycle;
- **the receiver**: the daemon stopped, ``the-loop webhook`` runs as its own process;
  each comment is added to the fake, its signed ``issue_comment`` delivery is pushed, and
  the time runs from the push until its token is in the agent's file.

The file is read every :data:`LOOK_SECONDS`. Target: p95 ≤ 2 s through the receiver.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.fake_github import FakeComment, FakeGitHub, serve  # noqa: E402
from tests.helpers.agent import reading_agent  # noqa: E402
from tests.helpers.gitrepo import make_remote  # noqa: E402
from tests.helpers.tmuxsock import private_tmux_socket  # noqa: E402
from tests.helpers.webhook_payloads import comment_created  # noqa: E402
from tests.helpers.webhook_sender import SECRET, deliver, free_port  # noqa: E402

TOKEN = "ghp_bench-pane-token"
REPO = "octo/app"
NUMBER = 15
#: Comments timed through the receiver, and through the poller.
PUSHED, POLLED = 40, 8
#: The poll daemon's interval for the bench (the default is 60 s).
INTERVAL = 5.0
DEFAULT_INTERVAL = 60.0
LOOK_SECONDS = 0.005
TARGET_P95_S = 2.0
WAIT_LIMIT_S = 60.0


@dataclass
class PaneWorld:
    """The state root, config, fake and agent file; the processes started, to stop."""

    home: Path
    fake: FakeGitHub
    socket: str
    port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list[subprocess.Popen[bytes]])
    tokens: list[str] = field(default_factory=list[str])
    _stamped: float = field(default_factory=time.monotonic)

    @property
    def config(self) -> Path:
        return self.home / "cli-config.yaml"

    @property
    def agent_file(self) -> Path:
        return self.home / "agent-read.txt"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "GITHUB_TOKEN": TOKEN, "THE_LOOP_GH_WEBHOOK_SECRET": SECRET}

    def write_config(self) -> None:
        document = {
            "state": {"root": str(self.home / "state")},
            "routing": {
                "defaultHarness": "command",
                "harnesses": {"command": {"argv": reading_agent(self.agent_file)}},
                "prompt": "Ticket {url}: {title}",
                "authorizedUsers": ["alice"],
                "workspace": {
                    "root": str(self.home / "workspaces"),
                    "repositories": {REPO: str(make_remote(self.home, "app"))},
                },
                "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 3},
            },
            # The breaker's 30 an hour would hold the bench's comments.
            "polling": {
                "repositories": [REPO],
                "labels": ["the-loop"],
                "intervalSeconds": INTERVAL,
                "maxDeliveriesPerHour": 10_000,
            },
            "integrations": {"github": {"apiUrl": self.fake.url}},
            "webhook": {"host": "127.0.0.1", "port": self.port},
        }
        self.config.write_text(json.dumps(document), encoding="utf-8")

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "the_loop", "--config", str(self.config), *args]

    def poll_once(self) -> None:
        done = subprocess.run(
            self.argv("poll", "--once"), env=self.env, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"bench: poll --once exited {done.returncode}: {done.stderr!r}")

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        log = (self.home / f"{args[0]}.log").open("ab")
        process = subprocess.Popen(
            self.argv(*args), env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        log.close()
        self.processes.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def start_receiver(self) -> subprocess.Popen[bytes]:
        """``the-loop webhook``, ready when its status file has its pid and no stoppedAt."""
        process = self.start("webhook")
        status = self.home / "state" / "local" / "webhook-status.json"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                said = json.loads(status.read_text("utf-8"))
                if said.get("pid") == process.pid and said.get("stoppedAt") is None:
                    return process
            time.sleep(0.02)
        raise SystemExit(f"bench: the receiver did not start: {self.log_tail('webhook')}")

    def log_tail(self, name: str) -> str:
        path = self.home / f"{name}.log"
        return path.read_text("utf-8", "replace")[-2000:] if path.exists() else ""

    def comment(self, text: str) -> tuple[FakeComment, str]:
        """Add an authorized comment carrying a new token; return it and the token. The
        fake's clock moves on with the real one, so its stamps follow the order of the adds."""
        now = time.monotonic()
        self.fake.advance(max(now - self._stamped, 0.001))
        self._stamped = now
        token = f"tok-{uuid.uuid4().hex[:16]}"
        self.tokens.append(token)
        return self.fake.add_comment(REPO, NUMBER, f"{text} {token}", login="alice"), token

    def pushed(self, text: str) -> float:
        """Seconds from the push of a new comment to its token in the agent's file."""
        comment, token = self.comment(text)
        payload = comment_created(self.fake, comment)
        started = time.perf_counter()
        answer = deliver(("127.0.0.1", self.port), payload, event="issue_comment")
        if answer.status != 202:
            raise SystemExit(f"bench: the receiver answered {answer.status}: {answer.body}")
        return self.appeared(token, started, "webhook")

    def appeared(self, token: str, started: float, process: str) -> float:
        """Seconds from ``started`` (``perf_counter``) until ``token`` is in the file."""
        wanted = token.encode()
        while True:
            with contextlib.suppress(FileNotFoundError):
                if wanted in self.agent_file.read_bytes():
                    return time.perf_counter() - started
            if time.perf_counter() - started > WAIT_LIMIT_S:
                raise SystemExit(f"bench: {token} never reached the pane: {self.log_tail(process)}")
            time.sleep(LOOK_SECONDS)


@contextlib.contextmanager
def pane_world() -> Iterator[PaneWorld]:
    home = Path(tempfile.mkdtemp(prefix="the-loop-bench-pane-"))
    try:
        with private_tmux_socket() as socket, serve(FakeGitHub(tokens={TOKEN: "bench"})) as fake:
            fake.add_issue(REPO, NUMBER, title="Fix the widget", labels=("the-loop",))
            world = PaneWorld(home, fake, socket)
            world.write_config()
            try:
                yield world
            finally:
                for process in world.processes:
                    world.stop(process)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def start_session(world: PaneWorld) -> None:
    """One live session: an authorized start comment, one ``poll --once``, the prompt read."""
    world.fake.add_comment(REPO, NUMBER, "the-loop start", login="alice")
    world.poll_once()
    world.appeared("Fix the widget", time.perf_counter(), "poll")


def through_poller(world: PaneWorld, count: int, rng: random.Random) -> list[float]:
    """Seconds from adding a comment at a random moment to its token in the pane, with the
    poll daemon running every :data:`INTERVAL` (the first comment, its start-up, not timed)."""
    daemon = world.start("poll")
    try:
        world.appeared(world.comment("poller warm-up")[1], time.perf_counter(), "poll")
        # A random moment in each of ``count`` equal slices of the interval, in random
        # order: each wait starts just after a delivery, so the comments land all over
        # the cycle rather than where a few draws happen to fall.
        waits = [(slot + rng.random()) * INTERVAL / count for slot in range(count)]
        rng.shuffle(waits)
        times: list[float] = []
        for number, wait in enumerate(waits):
            time.sleep(wait)
            _, token = world.comment(f"polled note {number}")
            times.append(world.appeared(token, time.perf_counter(), "poll"))
        return times
    finally:
        world.stop(daemon)


def through_receiver(world: PaneWorld, count: int, rng: random.Random) -> list[float]:
    """Seconds from each push to its comment's token in the pane (two warm-ups not timed)."""
    receiver = world.start_receiver()
    try:
        for number in range(2):
            world.pushed(f"pushed warm-up {number}")
        times: list[float] = []
        for number in range(count):
            time.sleep(rng.uniform(0.02, 0.1))
            times.append(world.pushed(f"pushed note {number}"))
        return times
    finally:
        world.stop(receiver)


def percentile(times: list[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def measure(pushed: int = PUSHED, polled: int = POLLED, seed: int = 20) -> dict[str, list[float]]:
    rng = random.Random(seed)
    with pane_world() as world:
        start_session(world)
        by_poller = through_poller(world, polled, rng) if polled else []
        by_receiver = through_receiver(world, pushed, rng)
        pasted = world.agent_file.read_text("utf-8")
        twice = [token for token in world.tokens if pasted.count(token) != 1]
        if twice:
            raise SystemExit(f"bench: {len(twice)} comments not pasted exactly once")
    return {"receiver": by_receiver, "poller": by_poller}


def rows(
    pushed: int = PUSHED, polled: int = POLLED
) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """The markdown rows and the (target, measured, passed) check of comment to pane."""
    found = measure(pushed, polled)
    receiver, poller = found["receiver"], found["poller"]
    lines = [
        "Comment to pane (real tmux, a stand-in agent; from the push, or from the comment "
        "for the poller, to the comment in the agent's file):",
        "",
        "| reader | comments | p50 s | p95 s | max s |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| webhook receiver (push) | {len(receiver)} | {percentile(receiver, 0.5):.3f} | "
        f"{percentile(receiver, 0.95):.3f} | {max(receiver):.3f} |",
    ]
    if poller:
        lines.append(
            f"| poller, `intervalSeconds` {INTERVAL:g} | {len(poller)} | "
            f"{percentile(poller, 0.5):.3f} | {percentile(poller, 0.95):.3f} | {max(poller):.3f} |"
        )
        lines += [
            "",
            f"The poller's comment waits for the next cycle, then the cycle: up to the interval "
            f"and a cycle; at the default `polling.intervalSeconds` of {DEFAULT_INTERVAL:g} s "
            f"that is up to about {DEFAULT_INTERVAL:g} s.",
        ]
    p95 = percentile(receiver, 0.95)
    checks = [
        (
            f"comment to pane through the receiver, real tmux: p95 ≤ {TARGET_P95_S:g} s",
            f"{p95:.3f} s (p50 {percentile(receiver, 0.5):.3f} s, max {max(receiver):.3f} s)",
            p95 <= TARGET_P95_S,
        )
    ]
    return lines, checks


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pushed", type=int, default=PUSHED, help="comments pushed")
    parser.add_argument("--polled", type=int, default=POLLED, help="comments polled (0: none)")
    args = parser.parse_args()
    lines, checks = rows(max(1, args.pushed), max(0, args.polled))
    print("\n".join(lines))
    for target, measured, passed in checks:
        print(f"{target}: {measured}: {'PASS' if passed else 'MISS'}")
    return 0 if all(passed for _, _, passed in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
