"""The poller SIGKILLed at each step of a delivery, then run again: every comment reaches
the agent's pane exactly once (real tmux, real git, the loopback fake, real processes).

Each run of ``poll --once`` is a child forked from this test process, running the CLI's
``main``: a real process that the crash hook really SIGKILLs (its unflushed state dies
with it), without the interpreter start-up and imports that would make 20 runs a step
cost minutes. The parent never runs the CLI itself, so every child starts alike; it
only imports every module of the package first, which the children would otherwise each
import again (most of a run's time).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import the_loop
from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.cli import main
from the_loop.commands.poll import CRASH_AT_VARIABLE
from the_loop.intake.delivery import DELIVERED_MARK

#: Where the poller dies, and what the comment's ledger row and the pane's mark are then.
#: The paste and the mark are one tmux command list, which the tmux server runs as one
#: unit: no instant lies between them, so ``after-paste`` is honestly the same instant
#: as ``after-mark`` (both checkpoints are passed one after the other).
STEPS: dict[str, tuple[str, bool]] = {
    "before-pending": ("waiting", False),
    "after-pending": ("pending", False),
    "after-paste": ("pending", True),
    "after-mark": ("pending", True),
    "after-delivered": ("delivered", True),
    "after-acknowledged": ("delivered", True),
}
RUNS_PER_STEP = 20
RUN_TIMEOUT_SECONDS = 60.0

for _module in pkgutil.walk_packages(the_loop.__path__, "the_loop."):
    if not _module.name.endswith(".__main__"):  # that one would run the CLI
        importlib.import_module(_module.name)


def poll_in_child(loop_world: PollWorld, crash_at: str = "") -> int:
    """``poll --once`` in a forked child; its exit code, or ``-signal`` when killed."""
    log = loop_world.home / "child-stderr.txt"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            os.environ[CRASH_AT_VARIABLE] = crash_at
            code = _run_cli(["--config", str(loop_world.config_path), "poll", "--once"], log)
        finally:
            os._exit(code)
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"poll --once hung: {log.read_text(encoding='utf-8')}")
        time.sleep(0.002)


def _run_cli(argv: list[str], log: Path) -> int:
    """The CLI with fresh streams: a thread of the parent may have held the old ones' locks."""
    with log.open("w", encoding="utf-8") as err, open(os.devnull, "w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout, sys.stderr = out, err
        return main(argv)


def comment_row(loop_world: PollWorld, comment_id: int) -> dict[str, Any]:
    section = loop_world.store.section(ITEM, "poll") or {}
    rows = [r for r in section.get("deliveries", []) if r.get("id") == str(comment_id)]
    assert len(rows) == 1, rows
    return rows[0]


def pane_mark(loop_world: PollWorld, socket: str) -> str:
    session = loop_world.registry.find_by_work_item(ITEM)
    assert session is not None
    argv = ["tmux", "-L", socket, "show-options", "-p", "-q", "-v"]
    argv += ["-t", f"={session.tmux_target}:", DELIVERED_MARK]
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()


@pytest.mark.parametrize("step", STEPS)
def test_a_poller_killed_at_any_step_of_a_delivery_neither_loses_nor_repeats_a_comment(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    tmux_socket: str,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    row_state, marked = STEPS[step]
    texts = [f"note {step} {run:02d}." for run in range(RUNS_PER_STEP)]
    for text in texts:
        comment_id = github.add_comment(REPO, 15, text, login="alice").id
        assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
        left = (comment_row(world, comment_id)["state"], pane_mark(world, tmux_socket))
        named = left[1].partition("~")[0]  # the mark: <comment id>~<attempt number>
        assert (left[0], named) == (row_state, str(comment_id) if marked else named)
        assert marked or named != str(comment_id)
        assert poll_in_child(world) == 0
        assert comment_row(world, comment_id)["state"] == "delivered"
    assert wait_until(lambda: texts[-1] in world.read())
    assert poll_in_child(world) == 0
    read = world.read()
    counts = [read.count(text) for text in texts]
    duplicates = sum(max(count - 1, 0) for count in counts)
    lost = counts.count(0)
    summary = f"{step}: {len(texts)} kills, pasted {counts}: {duplicates} duplicates, {lost} lost"
    print(summary)
    assert (duplicates, lost) == (0, 0), summary
