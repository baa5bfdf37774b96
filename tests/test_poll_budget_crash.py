"""The poller SIGKILLed at a random instant while a work item is over its budget and
comments wait for it, 20 times, then while an authorized raise is taken (issue 29): no
held comment is pasted, the budget is said once, the raise counts once and is said once,
and every held comment then reaches the pane exactly once, in thread order (real tmux,
real git, the loopback fake GitHub, real processes)."""

from __future__ import annotations

import random
import time

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_blocked_crash import _killed_at_random  # pyright: ignore[reportPrivateUsage]
from tests.test_poll_crash import poll_in_child
from tests.test_poll_e2e import REPO, PollWorld, github, world  # noqa: F401 - fixtures

TRIALS = 20
EXCEEDED = "<!-- the-loop:budget-exceeded"
RAISED = "<!-- the-loop:budget-raised"


def _budget(loop_world: PollWorld, turns: int) -> None:
    config = loop_world.context.config
    document = dict(config.data)
    routing = dict(document["routing"])
    routing["budget"] = {"turns": turns}
    loop_world.configure({**document, "routing": routing})


def test_a_poller_killed_over_budget_and_during_a_raise_loses_and_doubles_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    rng = random.Random(29)
    _budget(world, turns=3)  # the first prompt and two deliveries
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    for text in ("First paid note.", "Second paid note."):
        github.add_comment(REPO, 15, text, login="alice")
        assert poll_in_child(world) == 0
        assert wait_until(lambda text=text: text in world.read())
    began = time.monotonic()
    assert poll_in_child(world) == 0  # the third turn is reached: over its budget
    whole = time.monotonic() - began
    assert len([c for c in github.comments if EXCEEDED in c.body]) == 1
    texts = [f"Held note {trial:02d}." for trial in range(TRIALS)]
    killed = 0
    for text in texts:
        github.add_comment(REPO, 15, text, login="alice")
        killed += _killed_at_random(world, rng, whole * 0.8)
        assert not any(t in world.read() for t in texts), "nothing pasted over budget"
    assert killed >= TRIALS // 2, f"only {killed} of {TRIALS} runs were cut short"
    assert poll_in_child(world) == 0
    assert not any(t in world.read() for t in texts)
    assert len([c for c in github.comments if EXCEEDED in c.body]) == 1, "said once"

    github.add_comment(REPO, 15, "the-loop budget +50 turns", login="alice")
    raises_killed = 0
    for _ in range(TRIALS):
        raises_killed += _killed_at_random(world, rng, whole * 0.8)
    assert raises_killed >= TRIALS // 2, f"only {raises_killed} of {TRIALS} were cut short"
    for _ in range(3):
        assert poll_in_child(world) == 0
    assert wait_until(lambda: texts[-1] in world.read(), timeout=30)
    read = world.read()
    assert [read.count(text) for text in texts] == [1] * TRIALS, "0 lost, 0 doubled"
    assert [read.index(text) for text in texts] == sorted(read.index(text) for text in texts)
    assert len([c for c in github.comments if RAISED in c.body]) == 1, "the raise said once"
    assert len([c for c in github.comments if EXCEEDED in c.body]) == 1
    budget = (world.stores.store.section(f"github:{REPO}#15", "poll") or {})["budget"]
    assert budget["limits"]["turns"] == 53, "the raise counted once"
