"""The poller SIGKILLed at a random instant while the agent is blocked on a dialog and
comments wait for it, 20 times: nothing is pasted while it is blocked, the block is said
on the ticket once, and once it ends every comment reaches the pane exactly once, in
thread order (real tmux, real git, the loopback fake GitHub, real processes)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_crash import poll_in_child
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures

TRIALS = 20


#: How far ahead a permission request is stamped. The stand-in draws no dialog, and a
#: request whose dialog a screen has not shown for three seconds was answered in the pane
#: (agent/state.py DRAWN_SECONDS): on a loaded machine a poll may start later than that,
#: and would rightly see the block end and a new one begin at the next request.
AHEAD_SECONDS = 300.0


def _hook(loop_world: PollWorld, event: str, **fields: object) -> None:
    """What the agent's hooks would append: the agent waits on a permission prompt (the
    request stamped ahead, as if its dialog stayed on the screen)."""
    stem = loop_world.registry.path_for(ITEM).stem
    log = loop_world.layout.local_dir / "agents" / f"{stem}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    ahead = AHEAD_SECONDS if event == "PermissionRequest" else 2 * AHEAD_SECONDS
    with log.open("a", encoding="utf-8") as appended:
        appended.write(json.dumps({"t": time.time() + ahead, "event": event, **fields}) + "\n")


def _killed_at_random(loop_world: PollWorld, rng: random.Random, within: float) -> bool:
    """``poll --once`` in a forked child, SIGKILLed after a random moment (or done); True
    when the kill cut it short."""
    pid = os.fork()
    if pid == 0:  # the child: the same run poll_in_child makes, never returning to pytest
        code = 3
        try:
            code = _child(loop_world)
        finally:
            os._exit(code)
    time.sleep(rng.uniform(0.0, within))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == -signal.SIGKILL


def _child(loop_world: PollWorld) -> int:
    from tests.test_poll_crash import _run_cli  # pyright: ignore[reportPrivateUsage]

    log = loop_world.home / "child-stderr.txt"
    return _run_cli(["--config", str(loop_world.config_path), "poll", "--once"], log)


def test_a_poller_killed_while_comments_wait_for_a_blocked_agent_loses_and_doubles_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    rng = random.Random(27)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    began = time.monotonic()
    assert poll_in_child(world) == 0  # a whole run while nothing waits: how long one takes
    whole = time.monotonic() - began
    texts = [f"Held note {trial:02d}." for trial in range(TRIALS)]
    killed = 0
    _hook(world, "PermissionRequest", tool="Bash", detail="make deploy")  # one block, all along
    for text in texts:
        github.add_comment(REPO, 15, text, login="alice")
        killed += _killed_at_random(world, rng, whole * 1.2)
        assert not any(t in world.read() for t in texts), "nothing pasted while blocked"
    assert killed >= TRIALS // 2, f"only {killed} of {TRIALS} runs were cut short"
    assert poll_in_child(world) == 0
    assert not any(t in world.read() for t in texts)
    notices = [c for c in github.comments if "blocked on a permission prompt" in c.body]
    assert len(notices) == 1, "the block is said once, whatever the kills"
    _hook(world, "Stop")  # answered in the pane: the agent is at its prompt again
    for _ in range(3):
        assert poll_in_child(world) == 0
    assert wait_until(lambda: texts[-1] in world.read())
    read = world.read()
    assert [read.count(text) for text in texts] == [1] * TRIALS, "0 lost, 0 doubled"
    assert [read.index(text) for text in texts] == sorted(read.index(text) for text in texts)
    assert "it was answered in the pane" in notices[0].body, "its notice says how it ended"
