"""The pull-request loop through the receiver (real process, real tmux and git, the
loopback fake): a review pushed reaches the owner's pane once, with the inline comments
the receiver reads from GitHub; a failed check pushed reaches it once, with its log; the
poller after it pastes nothing more; a push for a repository not watched does nothing."""

from __future__ import annotations

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.webhook_payloads import (
    check_run_completed,
    comment_created,
    review_submitted_as_sent,
)
from tests.test_poll_ci import CHECK, fail, linked
from tests.test_poll_e2e import REPO
from tests.test_pr_reviews import inline
from tests.test_webhook_feed import PushWorld, github, world  # noqa: F401 - fixtures


def test_a_pushed_review_is_one_paste_with_its_inline_comments_read_from_github(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    world.receiver()
    github.advance(5)
    review = github.add_review(
        REPO, 40, login="alice", state="CHANGES_REQUESTED", comments=[inline(n) for n in range(3)]
    )
    world.push("pull_request_review", review_submitted_as_sent(github, review), "d-review")
    assert wait_until(lambda: "nit 2: rename" in world.read(), timeout=30), world.read()
    asked = [r.path for r in github.requests]
    assert f"/repos/{REPO}/pulls/40/reviews/{review.id}/comments" in asked
    assert wait_until(lambda: bool(world.events_named("poll.review_delivered")), timeout=30)
    [event] = world.events_named("poll.review_delivered")
    assert event["source"] == "webhook" and event["key"] == f"review-{review.id}"
    report = world.poll()
    assert (report["reviews"], report["delivered"]) == (0, 0), "pasted once, whoever saw it"
    assert world.read().count("nit 0: rename") == 1


def test_a_pushed_failed_check_is_one_paste_with_its_log(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = linked(world, github)
    world.receiver()
    fail(github, sha)
    run = next(r for r in github.check_runs if r.head_sha == sha and r.name == CHECK)
    pull = github.issues[("octo", "app", 40)]
    world.push("check_run", check_run_completed(github, run, pull), "d-check")
    assert wait_until(lambda: "[the-loop] Check " in world.read(), timeout=30), world.read()
    assert "> FAILED tests/test_widget.py::test_steady" in world.read()
    assert wait_until(lambda: bool(world.events_named("poll.ci_failure_delivered")), timeout=30)
    [event] = world.events_named("poll.ci_failure_delivered")
    assert event["source"] == "webhook"
    assert world.poll()["ci_failures"] == 0
    assert world.read().count("[the-loop] Check ") == 1


def test_a_push_for_a_repository_not_watched_is_marked_processed_and_does_nothing(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_issue("octo/other", 3, labels=("the-loop",))
    start = github.add_comment("octo/other", 3, "the-loop start", login="alice")
    world.receiver()
    world.push("issue_comment", comment_created(github, start), "d-other")
    assert wait_until(lambda: bool(world.events_named("webhook.not_acted")), timeout=30)
    [event] = world.events_named("webhook.not_acted")
    assert event["delivery"] == "d-other" and "not in polling.repositories" in event["reason"]
    assert not world.events_named("poll.command")
    assert world.registry.find_by_work_item("github:octo/other#3") is None
