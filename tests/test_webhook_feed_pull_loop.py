"""The pull-request loop fed by `the-loop webhook` (a real receiver process beside the
loopback fake, real tmux and real git): a pushed pull request on a live session's branch
is linked as `sessions link-pr` links it; a pushed review reaches the owner's pane once
with the inline comments read from GitHub; a pushed failed check or status reaches it
once with what the poller pastes; the poller after the receiver pastes nothing more; a
push for a repository not watched is marked processed and does nothing; a label pushed
makes an item the poller never listed watched, so a start pushed on it spawns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fake_github import FakeGitHub, FakeIssue
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.webhook_payloads import (
    check_run_event,
    comment_created,
    issue_event,
    pull_request_event,
    review_comment_created,
    review_submitted_as_sent,
    status_event,
)
from tests.test_poll_ci import CHECK, STEPS, log_of
from tests.test_poll_e2e import ITEM, REPO
from tests.test_pr_reviews import inline
from tests.test_webhook_feed import PushWorld, github, world  # noqa: F401 - fixtures
from the_loop.webhook.inbox import Inbox

BRANCH = "loop/github-octo-app-15"
PR = "github:octo/app#40"
WAIT = 60.0


def events(push_world: PushWorld) -> list[dict[str, Any]]:
    log = push_world.layout.event_log
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [json.loads(line) for line in lines]


def story(push_world: PushWorld) -> str:
    """The events so far, one line each (for an assertion's message)."""
    said = []
    for event in events(push_world):
        fields = {k: v for k, v in event.items() if k not in ("ts", "pid", "level")}
        said.append(json.dumps(fields, sort_keys=True))
    return "\n".join(said)


def processed(push_world: PushWorld) -> int:
    """How many deliveries the receiver's batches handled so far."""
    return sum(e["deliveries"] for e in push_world.events_named("webhook.processed"))


def inbox(push_world: PushWorld) -> Inbox:
    opened = Inbox(
        push_world.layout.local_dir / "webhook-inbox",
        lock_path=push_world.layout.local_locks_dir / "webhook-inbox.lock",
    )
    opened.open()
    return opened


def linked_prs(push_world: PushWorld) -> list[str]:
    record = push_world.registry.find_by_work_item(ITEM)
    return [] if record is None else [e.work_item.ref for e in record.pull_requests]


def started(push_world: PushWorld, fake: FakeGitHub) -> None:
    """A live session on #15, started by the poller; then the receiver."""
    fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert push_world.poll()["commands"] == 1
    assert wait_until(lambda: "Fix the wobbling widget" in push_world.read(), timeout=WAIT)
    push_world.receiver()


def linked_by_push(push_world: PushWorld, fake: FakeGitHub) -> FakeIssue:
    """A live session on #15 and its pull request #40, opened on the session's branch
    after the poller last looked and linked by the receiver from the pushed ``opened``."""
    started(push_world, fake)
    fake.advance(5)
    pull = fake.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login="the-loop-bot")
    push_world.push("pull_request", pull_request_event(fake, pull, "opened"), "d-opened")
    assert wait_until(lambda: linked_prs(push_world) == [PR], timeout=WAIT), story(push_world)
    return pull


def test_a_pushed_pull_request_on_the_sessions_branch_is_linked_as_link_pr_links_it(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    before = len(github.requests)
    github.advance(5)
    pull = github.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login="the-loop-bot")
    world.push("pull_request", pull_request_event(github, pull, "opened"), "d-opened")
    assert wait_until(lambda: linked_prs(world) == [PR], timeout=WAIT), story(world)
    assert wait_until(lambda: bool(world.events_named("pr.linked")), timeout=WAIT)
    [event] = world.events_named("pr.linked")
    assert (event["work_item"], event["pull_request"], event["by"]) == (ITEM, PR, "branch")
    assert (event["source"], event["author"]) == ("webhook", "the-loop-bot")
    [recorded] = world.events_named("session.pr_linked")
    assert (recorded["work_item"], recorded["pull_request"]) == (ITEM, PR), "link-pr's path"
    section = world.store.section(ITEM, "pullRequests")
    assert isinstance(section, dict) and PR in section
    assert not [r for r in github.requests[before:] if r.path == f"/repos/{REPO}/pulls"], (
        "the push carried the pull request: no listing was read"
    )

    github.advance(5)
    github.push(REPO, 40)
    world.push("pull_request", pull_request_event(github, pull, "synchronize"), "d-sync")
    world.push("pull_request", pull_request_event(github, pull, "opened"), "d-opened")  # again
    assert wait_until(lambda: processed(world) >= 2, timeout=WAIT), story(world)
    world.poll()
    assert len(world.events_named("pr.linked")) == 1 and linked_prs(world) == [PR]


def test_a_pushed_pull_request_from_a_fork_or_another_branch_links_nothing(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    fork = github.add_pull(REPO, 41, head=BRANCH, body="Closes #15", head_repository="mallory/app")
    other = github.add_pull(REPO, 42, head="loop/github-octo-app-150", body="see #15")
    world.push("pull_request", pull_request_event(github, fork, "opened"), "d-fork")
    world.push("pull_request", pull_request_event(github, other, "opened"), "d-other-branch")
    assert wait_until(lambda: processed(world) >= 2, timeout=WAIT), story(world)
    assert linked_prs(world) == [] and world.events_named("pr.linked") == []


def test_a_pushed_review_is_pasted_once_with_its_inline_comments_read_from_github(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked_by_push(world, github)
    github.advance(5)
    review = github.add_review(
        REPO,
        40,
        login="alice",
        state="CHANGES_REQUESTED",
        body="Please look again.",
        comments=[inline(n) for n in range(3)],
    )
    world.push("pull_request_review", review_submitted_as_sent(github, review), "d-review")
    assert wait_until(lambda: "nit 2: rename" in world.read(), timeout=WAIT), (
        f"the review never reached the pane; events:\n{story(world)}"
    )
    text = world.read()
    assert "[the-loop] Review by @alice on " in text and ": changes requested:" in text
    assert "> Please look again." in text
    for n in range(3):
        assert f"src/mod{n}.py:{10 + n}" in text and f"> nit {n}: rename" in text
    asked = github.logged("GET", f"/repos/{REPO}/pulls/40/reviews/{review.id}/comments")
    assert asked, "the inline comments are read from GitHub: a push does not carry them"
    assert wait_until(lambda: bool(world.events_named("poll.review_delivered")), timeout=WAIT)
    [event] = world.events_named("poll.review_delivered")
    assert (event["key"], event["source"]) == (f"review-{review.id}", "webhook")

    # GitHub sends each inline comment of the review too: the same review, not pasted again.
    before = processed(world)
    first = review.comments[0]
    world.push("pull_request_review_comment", review_comment_created(github, first), "d-inline")
    assert wait_until(lambda: processed(world) > before, timeout=WAIT), story(world)
    report = world.poll()
    assert (report["reviews"], report["delivered"]) == (0, 0), "pasted once, whoever saw it"
    assert world.pasted("> nit 0: rename") == 1 and world.pasted("> Please look again.") == 1
    assert len(world.events_named("poll.review_delivered")) == 1


def test_a_pushed_lone_inline_comment_is_its_review_of_one_read_whole(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked_by_push(world, github)
    github.advance(5)
    lone = github.add_review_comment(
        REPO, 40, login="alice", body="typo here", path="README.md", line=3, diff_hunk="@@ -1 +1 @@"
    )
    world.push("pull_request_review_comment", review_comment_created(github, lone), "d-lone")
    assert wait_until(lambda: "> typo here" in world.read(), timeout=WAIT), story(world)
    assert "README.md:3" in world.read() and f"#discussion_r{lone.id}" in world.read()
    assert github.logged("GET", f"/repos/{REPO}/pulls/40/reviews/{lone.review_id}")
    assert world.poll()["reviews"] == 0
    assert world.pasted("> typo here") == 1


def test_a_pushed_failed_check_is_pasted_once_with_its_log_as_the_poller_pastes_it(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    pull = linked_by_push(world, github)
    sha = pull.head_sha
    job = github.add_job(REPO, name=CHECK, steps=STEPS, log=log_of(3), head_sha=sha)
    run = github.add_check_run(REPO, sha, name=CHECK, conclusion="failure", job_id=job.id)
    payload = check_run_event(github, run)
    assert payload["action"] == "completed"
    assert [p["number"] for p in payload["check_run"]["pull_requests"]] == [40]
    world.push("check_run", payload, "d-check")
    assert wait_until(lambda: "[the-loop] Check " in world.read(), timeout=WAIT), (
        f"the failure never reached the pane; events:\n{story(world)}"
    )
    assert wait_until(lambda: "exit code 1." in world.read(), timeout=WAIT)
    read = world.read()
    assert f'[the-loop] Check "{CHECK}" failed (failure) on {PR} at commit {sha[:12]}:' in read
    assert f"https://github.com/octo/app/actions/runs/{job.run_id}/job/{job.id}" in read
    assert "[the-loop] The first failed step: Run pytest" in read
    assert "> line 001 of the run" in read and "> line 003 of the run" in read
    assert "> FAILED tests/test_widget.py::test_steady" in read
    assert "> ##[error]Process completed with exit code 1." in read
    assert "\x1b" not in read and "Post job" not in read
    assert wait_until(lambda: bool(world.events_named("poll.ci_failure_delivered")), timeout=WAIT)
    [event] = world.events_named("poll.ci_failure_delivered")
    assert (event["work_item"], event["source"]) == (ITEM, "webhook")
    assert event["key"].startswith(f"ci-{sha[:12]}-test-3.11-")

    before = processed(world)
    world.push("check_run", payload, "d-check-again")  # GitHub's redelivery
    assert wait_until(lambda: processed(world) > before, timeout=WAIT), story(world)
    assert world.poll()["ci_failures"] == 0, "the poller after it pastes nothing more"
    assert world.pasted("[the-loop] Check ") == 1
    assert len(world.events_named("poll.ci_failure_delivered")) == 1
    assert len(github.logged("GET", f"/_logs/{job.id}")) == 1, "the log is fetched once"


def test_a_pushed_failed_status_on_a_pushed_new_head_is_pasted_once(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    pull = linked_by_push(world, github)
    github.advance(10)
    sha = github.push(REPO, 40)
    world.push("pull_request", pull_request_event(github, pull, "synchronize"), "d-sync")
    status = github.add_status(
        REPO, sha, context="ci/jenkins", state="error", target_url="https://ci.example/1"
    )
    world.push("status", status_event(github, status), "d-status")
    assert wait_until(lambda: "ci/jenkins" in world.read(), timeout=WAIT), (
        f"the status never reached the pane; events:\n{story(world)}"
    )
    read = world.read()
    assert f'[the-loop] Status "ci/jenkins" failed (error) on {PR}' in read
    assert "https://ci.example/1" in read and sha[:12] in read
    assert wait_until(lambda: bool(world.events_named("poll.ci_failure_delivered")), timeout=WAIT)
    [event] = world.events_named("poll.ci_failure_delivered")
    assert event["source"] == "webhook"
    assert world.poll()["ci_failures"] == 0
    assert world.pasted('[the-loop] Status "ci/jenkins"') == 1


def test_a_push_for_a_repository_not_watched_is_marked_processed_and_acted_on_not_at_all(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_issue("octo/other", 3, title="Elsewhere", labels=("the-loop",))
    start = github.add_comment("octo/other", 3, "the-loop start", login="alice")
    world.receiver()
    world.push("issue_comment", comment_created(github, start), "d-other")
    issue = github.issues[("octo", "other", 3)]
    world.push("issues", issue_event(github, issue, "labeled"), "d-other-labeled")
    waiting = inbox(world)
    assert wait_until(lambda: len(world.events_named("webhook.not_acted")) >= 2, timeout=WAIT)
    assert wait_until(lambda: not waiting.pending(), timeout=WAIT), "marked processed"
    said = {e["delivery"]: e for e in world.events_named("webhook.not_acted")}
    assert set(said) == {"d-other", "d-other-labeled"}
    for delivery, event in (("d-other", "issue_comment"), ("d-other-labeled", "issues")):
        assert said[delivery]["github_event"] == event
        assert said[delivery]["reason"] == "octo/other is not in polling.repositories"
        assert said[delivery]["source"] == "webhook"
    assert (said["d-other"]["action"], said["d-other-labeled"]["action"]) == ("created", "labeled")
    assert world.events_named("poll.command") == [] and world.events_named("poll.baselined") == []
    assert world.registry.find_by_work_item("github:octo/other#3") is None
    assert "Elsewhere" not in world.read()
    assert not [r.path for r in github.requests if "/repos/octo/other" in r.path], (
        "nothing of it was asked of GitHub"
    )


def test_a_pushed_label_watches_an_item_the_poller_never_listed_and_a_pushed_start_spawns(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    knob = "github:octo/app#16"
    github.add_issue(REPO, 16, title="Polish the knob", body="It sticks.")
    world.poll()  # lists the labelled items: #15 only
    asked = [r for r in github.requests if r.path == f"/repos/{REPO}/issues"]
    assert asked and all(r.query.get("labels") == "the-loop" for r in asked)
    world.receiver()

    github.advance(5)
    early = github.add_comment(REPO, 16, "the-loop start", login="alice")
    world.push("issue_comment", comment_created(github, early), "d-unlabelled-start")
    assert wait_until(lambda: processed(world) >= 1, timeout=WAIT), story(world)
    assert world.registry.find_by_work_item(knob) is None, "not labelled: not watched"

    github.advance(5)
    github.set_labels(REPO, 16, ("the-loop",))
    issue = github.issues[("octo", "app", 16)]
    world.push("issues", issue_event(github, issue, "labeled"), "d-labeled")
    assert wait_until(lambda: processed(world) >= 2, timeout=WAIT), story(world)
    github.advance(5)
    start = github.add_comment(REPO, 16, "the-loop start", login="alice")
    world.push("issue_comment", comment_created(github, start), "d-start")
    assert wait_until(lambda: world.registry.find_by_work_item(knob) is not None, timeout=WAIT), (
        story(world)
    )
    assert wait_until(lambda: "Polish the knob" in world.read(), timeout=WAIT)

    def commands() -> list[dict[str, Any]]:
        return [e for e in world.events_named("poll.command") if e["work_item"] == knob]

    assert wait_until(lambda: bool(commands()), timeout=WAIT), story(world)
    assert [(e["command"], e["source"]) for e in commands()] == [("start", "webhook")]
    assert world.poll()["commands"] == 0, "the poller after it starts nothing again"
    assert world.read().count("Polish the knob") == 1


def test_a_pushed_deletion_ends_the_session_as_a_gone_item_keeping_its_checkout(
    world: PushWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    """GitHub's ``issues`` ``deleted`` payload describes the issue as it was (open); the
    item is gone (its GET answers 410), and its session ends as the poller ends it."""
    started(world, github)
    record = world.registry.find_by_work_item(ITEM)
    assert record is not None and record.cwd
    checkout = Path(record.cwd)
    payload = issue_event(github, github.issues[("octo", "app", 15)], "deleted")
    github.remove_issue(REPO, 15, status=410)
    world.push("issues", payload, "d-deleted")
    assert wait_until(lambda: processed(world) >= 1, timeout=WAIT), story(world)
    assert wait_until(lambda: not world.live(), timeout=WAIT), (
        f"the session of a deleted item goes on; events:\n{story(world)}"
    )
    assert wait_until(lambda: bool(world.events_named("poll.item_gone")), timeout=WAIT)
    [gone] = world.events_named("poll.item_gone")
    assert (gone["work_item"], gone["source"]) == (ITEM, "webhook") and "410" in gone["why"]
    assert checkout.is_dir() and (checkout / "README.md").exists(), "checkouts are kept"
