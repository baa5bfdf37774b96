"""Issue 19, linking: a pull request whose head branch is the one the checkout made for
a live work item (``loop/<slug>``), or whose body closes it, is linked the first time the
poller sees it, exactly as ``sessions link-pr`` links; a fork's is not; an idle cycle's
listing is a 304.
"""

from __future__ import annotations

import json

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401
from the_loop.dispatch.workspace import BRANCH_PREFIX
from the_loop.intake import pulls
from the_loop.intake.pulls import closed_items
from the_loop.ref import WorkItemRef

BRANCH = "loop/github-octo-app-15"


def started(poll_world: PollWorld, fake: FakeGitHub) -> None:
    fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_world.poll()["commands"] == 1


def linked(poll_world: PollWorld) -> list[str]:
    record = poll_world.registry.find_by_work_item(ITEM)
    assert record is not None
    return [endpoint.work_item.ref for endpoint in record.pull_requests]


def test_the_agents_branch_links_its_pull_request_once_with_an_event_and_a_line(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    github.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login="the-loop-bot")
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 0, err
    line = f"{ITEM}: linked pull request github:octo/app#40 (by its head branch)"
    assert line in out.splitlines(), out
    assert linked(world) == ["github:octo/app#40"]
    [event] = world.events_named("pr.linked")
    assert (event["pull_request"], event["by"]) == ("github:octo/app#40", "branch")
    assert [e["pull_request"] for e in world.events_named("session.pr_linked")] == [
        "github:octo/app#40"
    ], "the same path as sessions link-pr"
    section = world.store.section(ITEM, "pullRequests")
    assert isinstance(section, dict) and "github:octo/app#40" in section

    before = len(github.requests)
    code, out, _ = world.run_cli(["poll", "--once", "--format", "json"])
    idle = github.requests[before:]
    assert [r.path for r in idle if r.path == f"/repos/{REPO}/pulls"] == [], "idle: not asked"
    assert {r.status for r in idle} == {304}, [(r.path, r.status) for r in idle]
    assert json.loads(out)["items"] == [] and len(world.events_named("pr.linked")) == 1


def test_a_closing_keyword_in_the_body_links_it_too(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    github.add_pull(REPO, 41, title="Widget", head="alice/widget", body="Fixes: #15\n")
    code, out, _ = world.run_cli(["poll", "--once"])
    assert code == 0
    assert f"{ITEM}: linked pull request github:octo/app#41 (by a closing keyword" in out
    assert linked(world) == ["github:octo/app#41"]


def test_a_fork_or_an_unrelated_branch_links_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    github.add_pull(REPO, 42, head=BRANCH, body="Closes #15", head_repository="mallory/app")
    github.add_pull(REPO, 43, head="loop/github-octo-app-150", body="see #15; closes #16")
    github.add_pull(REPO, 44, head="x", body="<!-- closes #15 -->")
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 0, err
    assert linked(world) == [] and "linked pull request" not in out
    assert world.events_named("pr.linked") == []


def test_no_live_session_no_pulls_request(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_pull(REPO, 40, head=BRANCH)
    world.poll()
    assert [r for r in github.requests if r.path == f"/repos/{REPO}/pulls"] == []


def test_closing_keywords_follow_githubs_forms() -> None:
    repo = WorkItemRef.parse("github:octo/app#1")
    body = "Closes #3, fixes octo/app#4 and RESOLVED: #5; closed other/app#6; prefix#7 fix #3"
    assert [r.number for r in closed_items(body, repo)] == [3, 4, 5]
    assert closed_items("closes#8 closing #9 fix - #10", repo) == []


def test_the_branch_rule_is_the_checkouts() -> None:
    assert pulls.BRANCH_PREFIX == BRANCH_PREFIX
