"""The poller SIGKILLed at each step of a delivery, then run again: every comment reaches
the agent's pane exactly once (real tmux, real git, the loopback fake, a real subprocess)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.commands.poll import CRASH_AT_VARIABLE

#: Where the poller dies. The paste and the pane mark are one tmux command list, so
#: "after the paste" and "after the mark" are the same instant: ``after-mark``.
STEPS = ("before-pending", "after-pending", "after-mark", "after-delivered")
RUNS_PER_STEP = 3


def poll_process(loop_world: PollWorld, crash_at: str = "") -> int:
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, CRASH_AT_VARIABLE: crash_at}
    argv = [
        sys.executable,
        "-m",
        "the_loop",
        "--config",
        str(loop_world.config_path),
        "poll",
        "--once",
    ]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=120, check=False)
    return done.returncode


@pytest.mark.parametrize("step", STEPS)
def test_a_poller_killed_at_any_step_of_a_delivery_neither_loses_nor_repeats_a_comment(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_process(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    texts = [f"note {step} {run}" for run in range(RUNS_PER_STEP)]
    for text in texts:
        github.add_comment(REPO, 15, text, login="alice")
        assert poll_process(world, crash_at=step) == -signal.SIGKILL
        assert poll_process(world) == 0
    assert wait_until(lambda: texts[-1] in world.read())
    assert poll_process(world) == 0
    read = world.read()
    counts = [read.count(text) for text in texts]
    print(f"{step}: {len(texts)} comments, pasted {counts}")
    assert counts == [1] * len(texts)
