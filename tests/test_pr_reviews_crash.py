"""Issue 19: the poller SIGKILLed at each step of a review's delivery, then run again:
every review reaches the owning session's pane exactly once, as one paste (real tmux,
real git, the loopback fake, forked real processes, as tests/test_poll_crash.py)."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_crash import RUNS_PER_STEP, STEPS, pane_mark, poll_in_child
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from tests.test_pr_linking import BRANCH


def review_row(loop_world: PollWorld, review_id: int) -> dict[str, Any]:
    section = loop_world.store.section(ITEM, "poll") or {}
    rows = [r for r in section.get("deliveries", []) if r.get("id") == f"review-{review_id}"]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("step", STEPS)
def test_a_poller_killed_at_any_step_of_a_review_delivery_neither_loses_nor_repeats_it(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    tmux_socket: str,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    github.add_pull(REPO, 40, head=BRANCH, login="the-loop-bot")
    github.advance(5)
    assert poll_in_child(world) == 0
    row_state, marked = STEPS[step]
    texts = [f"review {step} {run:02d}." for run in range(RUNS_PER_STEP)]
    for text in texts:
        github.advance(5)
        inline = {"path": "a.py", "line": 3, "body": f"inline of {text}", "diff_hunk": "@@ x"}
        review = github.add_review(REPO, 40, login="alice", body=text, comments=[inline])
        assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
        key = f"review-{review.id}"
        state, mark = review_row(world, review.id)["state"], pane_mark(world, tmux_socket)
        named = mark.partition("~")[0]  # the mark: <key>~<attempt number>
        assert (state, named) == (row_state, key if marked else named)
        assert marked or named != key
        assert poll_in_child(world) == 0
        assert review_row(world, review.id)["state"] == "delivered"
    assert wait_until(lambda: texts[-1] in world.read())
    assert poll_in_child(world) == 0
    read = world.read()
    counts = [read.count(f"> {text}") for text in texts]
    inline_counts = [read.count(f"> inline of {text}") for text in texts]
    duplicates = sum(max(count - 1, 0) for count in counts)
    lost = counts.count(0)
    summary = f"{step}: {len(texts)} kills, pasted {counts}: {duplicates} duplicates, {lost} lost"
    print(summary)
    assert (duplicates, lost) == (0, 0), summary
    assert inline_counts == counts, "each review's inline comment is in its one paste"
