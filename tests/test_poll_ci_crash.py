"""The poller SIGKILLed at each step of a CI delivery, and at each step of the escalation
notice, then run again: every failed check reaches the pane exactly once, and every
escalation posts exactly one comment (real tmux, real git, the loopback fake, real
processes forked as in ``tests/test_poll_crash.py``).
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_ci import BRANCH, CHECK, PR, escalations, fail, log_of, push
from tests.test_poll_crash import pane_mark, poll_in_child
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.intake.ci import FailedCheck, check_key

#: Where the poller dies in a CI paste's delivery, and the row's state and the pane's
#: mark then (the same steps as a comment's: the paste goes through the same drain).
STEPS: dict[str, tuple[str, bool]] = {
    "before-pending": ("waiting", False),
    "after-pending": ("pending", False),
    "after-paste": ("pending", True),
    "after-mark": ("pending", True),
    "after-delivered": ("delivered", True),
}
#: Where the poller dies in an escalation: the intent written, the comment posted, the
#: comment marked posted.
ESCALATION_STEPS = ("after-escalation-intent", "after-escalation-post", "after-escalation-posted")
RUNS_PER_STEP = 20


def linked_in_children(loop_world: PollWorld, fake: FakeGitHub, budget: int) -> None:
    document: dict[str, Any] = json.loads(loop_world.config_path.read_text(encoding="utf-8"))
    document["polling"]["ci"] = {"maxFailingPushes": budget}
    loop_world.configure(document)
    fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(loop_world) == 0
    assert wait_until(lambda: "PROMPT" in loop_world.read())
    fake.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login="the-loop-bot")
    assert poll_in_child(loop_world) == 0
    record = loop_world.registry.find_by_work_item(ITEM)
    assert record is not None and [e.work_item.ref for e in record.pull_requests] == [PR]


def ci_row(loop_world: PollWorld, key: str) -> dict[str, Any]:
    section = loop_world.store.section(ITEM, "poll") or {}
    rows = [r for r in section.get("deliveries", []) if r.get("id") == key]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("step", STEPS)
def test_a_poller_killed_at_any_step_of_a_ci_delivery_neither_loses_nor_repeats_it(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    tmux_socket: str,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    linked_in_children(world, github, budget=RUNS_PER_STEP + 1)
    row_state, marked = STEPS[step]
    lasts = [f"FAILED {step} run {run:02d}" for run in range(RUNS_PER_STEP)]
    for last in lasts:
        sha = push(github)
        fail(github, sha, log=log_of(2, last=last))
        key = check_key(sha, FailedCheck(CHECK, "failure"))
        assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
        state, mark = ci_row(world, key)["state"], pane_mark(world, tmux_socket)
        named = mark.partition("~")[0]  # the mark: <key>~<attempt number>
        assert (state, named) == (row_state, key if marked else named)
        assert marked or named != key
        assert poll_in_child(world) == 0
        assert ci_row(world, key)["state"] == "delivered"
    assert wait_until(lambda: lasts[-1] in world.read())
    assert poll_in_child(world) == 0
    read = world.read()
    counts = [read.count(f"> {last}\n") for last in lasts]
    duplicates = sum(max(count - 1, 0) for count in counts)
    lost = counts.count(0)
    summary = f"{step}: {len(lasts)} kills, pasted {counts}: {duplicates} duplicates, {lost} lost"
    print(summary)
    assert (duplicates, lost) == (0, 0), summary


@pytest.mark.parametrize("step", ESCALATION_STEPS)
def test_a_poller_killed_at_any_step_of_an_escalation_posts_its_comment_exactly_once(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    linked_in_children(world, github, budget=1)
    heads: list[str] = []
    for _ in range(RUNS_PER_STEP):
        push(github, green=True)
        assert poll_in_child(world) == 0  # the count starts again
        heads.append(push(github, failing=True))
        assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
        assert poll_in_child(world) == 0
    assert poll_in_child(world) == 0
    posted = escalations(github)
    counts = [sum(sha in body for body in posted) for sha in heads]
    duplicates = sum(max(count - 1, 0) for count in counts)
    lost = counts.count(0)
    summary = f"{step}: {len(heads)} kills, posted {counts}: {duplicates} duplicates, {lost} lost"
    print(summary)
    assert (duplicates, lost) == (0, 0), summary
    assert len(world.events_named("ci.escalated")) == len(heads)
