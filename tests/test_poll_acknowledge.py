"""Issue 19, acknowledgement: every comment and review delivered into a pane gets one 👀
on GitHub by the token's login once its ledger row says delivered; never twice, not
across a SIGKILL either; a refused reaction is a warning that blocks and repeats no
delivery and is tried again later (three times in all, for a day); off with
``integrations.github.acknowledge: false``; an idle cycle posts nothing.

Real tmux, real git, the loopback fake GitHub; the crash runs are real processes the
crash hook SIGKILLs (``tests/test_poll_crash.py``'s harness).
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_crash import comment_row, poll_in_child
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from tests.test_pr_linking import BRANCH, started
from the_loop.intake.acknowledgement import Reaction, owed, reaction_for
from the_loop.ref import WorkItemRef

BOT = "the-loop-bot"
EYES = [(BOT, "eyes")]
RUNS_PER_STEP = 20


def reactions_path(comment_id: int) -> str:
    return f"/repos/{REPO}/issues/comments/{comment_id}/reactions"


def posts(fake: FakeGitHub, since: int = 0) -> list[str]:
    """The paths of the POSTs the fake was sent (from request ``since`` on)."""
    return [r.path for r in fake.requests[since:] if r.method == "POST"]


def deliver_one(poll_world: PollWorld, fake: FakeGitHub, text: str) -> int:
    comment_id = fake.add_comment(REPO, 15, text, login="alice").id
    assert poll_world.poll()["delivered"] == 1
    assert wait_until(lambda: text in poll_world.read())
    return comment_id


def set_acknowledge(poll_world: PollWorld, on: bool) -> None:
    document = json.loads(poll_world.config_path.read_text(encoding="utf-8"))
    document["integrations"]["github"]["acknowledge"] = on
    poll_world.configure(document)


def row_of(poll_world: PollWorld, key: str) -> dict[str, Any]:
    section = poll_world.store.section(ITEM, "poll") or {}
    rows = [r for r in section.get("deliveries", []) if str(r.get("id")) == key]
    assert len(rows) == 1, rows
    return rows[0]


def poll_cli(poll_world: PollWorld) -> str:
    """One ``poll --once`` that exits 0; its stderr."""
    code, _, err = poll_world.run_cli(["poll", "--once"])
    assert code == 0, err
    return err


def test_a_delivered_comment_gets_one_eyes_reaction_by_the_tokens_login(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    start_id = github.comments[-1].id
    comment_id = github.add_comment(REPO, 15, "please cover the empty case", login="alice").id
    report = world.poll()
    assert (report["delivered"], report["acknowledged"]) == (1, 1), report
    assert github.reactions("issue_comment", comment_id) == EYES
    assert github.reactions("issue_comment", start_id) == [], "a command is no delivery"
    assert comment_row(world, comment_id)["acked"] is True
    events = world.events_named("poll.acknowledged")
    assert [(e["work_item"], e["key"], e["kind"], e["subject_id"]) for e in events] == [
        (ITEM, str(comment_id), "issue_comment", comment_id)
    ]
    before = len(github.requests)
    assert world.poll()["acknowledged"] == 0
    assert posts(github, before) == [], "an acknowledged row is never posted for again"
    assert github.reactions("issue_comment", comment_id) == EYES


def test_with_acknowledge_off_no_reaction_is_posted(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    set_acknowledge(world, False)
    started(world, github)
    comment_id = deliver_one(world, github, "a note nobody reacts to")
    world.poll()
    assert github.reactions("issue_comment", comment_id) == []
    assert [p for p in posts(github) if p.endswith("/reactions")] == []
    assert world.events_named("poll.acknowledged") == []


def test_a_refused_reaction_is_a_warning_the_delivery_stands_and_a_later_cycle_reacts(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    comment_id = github.add_comment(REPO, 15, "a note GitHub will not react to", login="alice").id
    github.fail_next(reactions_path(comment_id), status=500)
    github.add_comment(REPO, 15, "the note after it", login="alice")
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["summary"]["delivered"] == 2, "the refusal blocks no delivery"
    warnings = [line for line in err.splitlines() if f"acknowledge comment {comment_id}" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: "), err
    assert "tried again" in warnings[0]
    assert wait_until(lambda: "the note after it" in world.read())
    assert comment_row(world, comment_id)["state"] == "delivered"
    assert comment_row(world, comment_id).get("acked") is not True
    assert github.reactions("issue_comment", comment_id) == []
    failed = world.events_named("poll.acknowledge_failed")
    assert [(e["key"], e["failures"], e["level"]) for e in failed] == [
        (str(comment_id), 1, "warning")
    ]

    assert "acknowledge" not in poll_cli(world)
    assert github.reactions("issue_comment", comment_id) == EYES
    assert comment_row(world, comment_id)["acked"] is True
    assert world.read().count("a note GitHub will not react to") == 1, "never pasted again"


def test_a_reaction_refused_three_times_is_given_up(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    comment_id = github.add_comment(REPO, 15, "a note never reacted to", login="alice").id
    github.fail_next(reactions_path(comment_id), status=500, count=4)
    errors = [poll_cli(world) for _ in range(3)]
    assert all(f"acknowledge comment {comment_id}" in err for err in errors), errors
    assert "not tried again" in errors[-1] and "not tried again" not in errors[0]
    before = len(github.requests)
    assert "acknowledge" not in poll_cli(world)
    assert posts(github, before) == [], "three refusals in all, then no more"
    assert comment_row(world, comment_id)["ackFailures"] == 3
    assert world.read().count("a note never reacted to") == 1


def test_turned_on_later_a_delivery_of_the_last_day_is_acknowledged_an_older_one_not(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    set_acknowledge(world, False)
    started(world, github)
    old_id = deliver_one(world, github, "delivered two days ago")
    recent_id = deliver_one(world, github, "delivered just now")

    def backdate(section: dict[str, Any] | None) -> dict[str, Any]:
        assert section is not None
        for row in section["deliveries"]:
            if row["id"] == str(old_id):
                row["at"] -= 2 * 86_400
        return section

    world.store.update_section(ITEM, "poll", backdate)
    set_acknowledge(world, True)
    world.poll()
    assert github.reactions("issue_comment", recent_id) == EYES
    assert github.reactions("issue_comment", old_id) == []


def test_an_idle_cycle_posts_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    deliver_one(world, github, "one note")
    world.poll()
    before = len(github.requests)
    report = world.poll()
    assert posts(github, before) == []
    assert (report["delivered"], report["acknowledged"]) == (0, 0)


def linked_pull(poll_world: PollWorld, fake: FakeGitHub) -> None:
    started(poll_world, fake)
    fake.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login=BOT)
    fake.advance(5)
    poll_world.poll()


def test_a_review_is_acknowledged_once_on_its_first_inline_comment(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked_pull(world, github)
    spots = [{"path": f"src/mod{n}.py", "line": 10 + n, "body": f"nit {n}"} for n in range(3)]
    review = github.add_review(REPO, 40, login="alice", comments=spots)
    report = world.poll()
    assert (report["delivered"], report["acknowledged"]) == (1, 1), report
    first, *rest = [c.id for c in review.comments]
    assert github.reactions("review_comment", first) == EYES
    assert [github.reactions("review_comment", c) for c in rest] == [[], []]
    assert row_of(world, f"review-{review.id}")["acked"] is True
    events = world.events_named("poll.acknowledged")
    assert [(e["key"], e["kind"], e["subject_id"]) for e in events] == [
        (f"review-{review.id}", "review_comment", first)
    ]
    before = len(github.requests)
    world.poll()
    assert posts(github, before) == []


def test_a_review_without_inline_comments_is_acknowledged_on_its_pull_request(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked_pull(world, github)
    review = github.add_review(REPO, 40, login="alice", body="Looks right; one more test.")
    assert world.poll()["delivered"] == 1
    assert github.reactions("issue", 40) == EYES
    assert row_of(world, f"review-{review.id}")["acked"] is True


@pytest.mark.parametrize("step", ["after-delivered", "after-acknowledged"])
def test_a_poller_killed_around_the_reaction_reacts_once_and_pastes_once(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    texts = [f"note {step} {run:02d}." for run in range(RUNS_PER_STEP)]
    ids: list[int] = []
    for text in texts:
        comment_id = github.add_comment(REPO, 15, text, login="alice").id
        ids.append(comment_id)
        assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
        assert comment_row(world, comment_id)["state"] == "delivered"
        assert comment_row(world, comment_id).get("acked") is not True
        reacted = github.reactions("issue_comment", comment_id)
        assert reacted == (EYES if step == "after-acknowledged" else [])
        assert poll_in_child(world) == 0
        assert comment_row(world, comment_id)["acked"] is True
    assert wait_until(lambda: texts[-1] in world.read())
    assert poll_in_child(world) == 0
    read = world.read()
    pasted = [read.count(text) for text in texts]
    reactions = [len(github.reactions("issue_comment", i)) for i in ids]
    statuses = [[r.status for r in github.logged("POST", reactions_path(i))] for i in ids]
    summary = f"{step}: {len(texts)} kills, pasted {pasted}, reactions {reactions}, {statuses}"
    print(summary)
    assert pasted == [1] * len(texts) and reactions == [1] * len(texts), summary
    once = [201] if step == "after-delivered" else [201, 200]
    assert statuses == [once] * len(texts), summary
    acknowledged = [e["key"] for e in world.events_named("poll.acknowledged")]
    assert acknowledged == [str(i) for i in ids], "one event each"


def test_each_kind_of_row_has_its_one_subject() -> None:
    owner = WorkItemRef.parse(ITEM)
    pull = WorkItemRef.parse("github:octo/lib#40")
    review = {"id": "review-7", "comments": [True, 0, 71, 72], "pullRequest": pull.ref}
    assert reaction_for(owner, {"id": "1002"}) == Reaction(owner, "issue_comment", 1002)
    assert reaction_for(owner, review) == Reaction(pull, "review_comment", 71)
    assert reaction_for(owner, {"id": "review-7", "comments": [], "pullRequest": pull.ref}) == (
        Reaction(pull, "issue", 40)
    )
    assert reaction_for(owner, {"id": "review-7", "pullRequest": "not a ref"}) is None
    assert reaction_for(owner, {"id": "ci-abc-lint"}) is None


def test_a_row_is_owed_its_reaction_while_delivered_unacked_recent_and_refused_under_three() -> (
    None
):
    now = 1_000_000.0
    row = {"id": "1", "state": "delivered", "at": now - 60}
    assert owed(row, now)
    assert not owed({**row, "acked": True}, now)
    assert not owed({**row, "state": "given-up"}, now)
    assert not owed({**row, "at": now - 86_400}, now)
    assert not owed({**row, "ackFailures": 3}, now) and owed({**row, "ackFailures": 2}, now)
    assert not owed({"id": "1", "state": "delivered"}, now), "no time of delivery: not tried"
