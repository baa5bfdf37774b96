"""Issue 28, items 3 to 5: GitHub as it really is.

A commit's check runs past the first page of 100 are read (``total_count`` and the
``Link`` header), still conditionally, and a change on a later page alone is seen;
paging needs no ``rel="last"``, which GitHub leaves out when it cannot count the pages;
a failed commit status names who posted it from the statuses list, since the combined
status does not say (real tmux, real git, the loopback fake).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_fake_github_pulls import ask as ask_with
from tests.test_fake_github_pulls import links
from tests.test_poll_ci import CHECK, PR, fail, linked, pasted, push, settle
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.adapters.github_reads import ClientReads
from the_loop.github.client import GitHubClient
from the_loop.intake.ci import status_creator, statuses_reading

COMMENTS = "/repos/octo/app/issues/comments"


def ask(fake: FakeGitHub, path: str) -> tuple[int, dict[str, str], Any]:
    return ask_with(fake, path, token=TOKEN)


def green_runs(fake: FakeGitHub, sha: str, count: int = 100) -> None:
    """``count`` check runs on ``sha`` that passed (as many as one page of GitHub's holds)."""
    for number in range(count):
        fake.add_check_run(REPO, sha, name=f"lint {number:03d}", conclusion="success")


def check_run_reads(fake: FakeGitHub, since: int = 0) -> list[tuple[str, int]]:
    """The check-run requests from ``since`` on: (their page, their status)."""
    return [
        (r.query.get("page", "1"), r.status)
        for r in fake.requests[since:]
        if r.path.endswith("/check-runs")
    ]


# -- item 3: every page of a commit's check runs ---------------------------------------


def test_the_fake_pages_more_than_a_hundred_check_runs_under_their_total_count(
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = github.new_sha(REPO)
    green_runs(github, sha, 101)
    path = f"/repos/octo/app/commits/{sha}/check-runs"
    _, headers, first = ask(github, f"{path}?per_page=100")
    assert first["total_count"] == 101 and len(first["check_runs"]) == 100
    _, _, second = ask(github, f"{path}?{links(headers)['next']}")
    assert second["total_count"] == 101 and [r["name"] for r in second["check_runs"]] == [
        "lint 100"
    ]


def test_a_check_run_that_fails_past_the_first_hundred_is_pasted(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    sha = push(github)
    green_runs(github, sha)
    fail(github, sha)  # the 101st: on the second page
    assert world.poll()["ci_failures"] == 1, "the second page was read"
    settle(world, 1)
    assert f'[the-loop] Check "{CHECK}" failed (failure) on {PR}' in world.read()


def test_a_run_that_fails_on_a_later_page_alone_is_seen_and_an_idle_head_stays_all_304s(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    sha = push(github)
    green_runs(github, sha)
    late = github.add_check_run(
        REPO, sha, name="slow", status="in_progress", conclusion=None, app_slug="other-ci"
    )
    assert world.poll()["ci_failures"] == 0, "still running"
    before = len(github.requests)
    github.complete_check_run(late.id, "failure")  # the first page and the count unchanged
    assert world.poll()["ci_failures"] == 1, "a change on the second page alone is seen"
    assert check_run_reads(github, before)[:2] == [("1", 304), ("2", 200)]
    assert wait_until(lambda: '"slow" failed' in world.read()), world.read()
    for _ in range(3):  # the turns come round to the check runs: every page asked, 304
        before = len(github.requests)
        report = world.poll()
        assert set(check_run_reads(github, before)) <= {("1", 304), ("2", 304)}
        assert report["requests"] == report["not_modified"], check_run_reads(github, before)
    assert pasted(world) == 1


# -- item 4: paging without rel="last" -----------------------------------------------


def test_the_fake_links_no_last_page_past_the_pages_it_counts(
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_history(REPO, 15, 3)
    _, counted, _ = ask(github, f"{COMMENTS}?per_page=1")
    assert set(links(counted)) == {"next", "last"}
    github.last_link_pages = 2
    _, uncounted, _ = ask(github, f"{COMMENTS}?per_page=1")
    assert set(links(uncounted)) == {"next"}


def test_a_listing_that_links_no_last_page_gives_its_last_pages_by_following_next() -> None:
    with serve(FakeGitHub(last_link_pages=0)) as fake:
        fake.add_issue(REPO, 15)
        ids = [comment.id for comment in fake.add_history(REPO, 15, 7)]
        with GitHubClient(fake.url, "", timeout=5) as client:
            params = {"per_page": 1, "sort": "updated", "direction": "asc"}
            last = client.get_all_pages(COMMENTS, params, max_pages=3, beyond="last")
            assert last.truncated and [c["id"] for c in last.items] == ids[-3:]
            again = client.get_all_pages(COMMENTS, params, max_pages=3, beyond="last")
            assert again.not_modified and not again.complete, "conditional, as any walk"
            whole = client.get_all_pages(COMMENTS, params, max_pages=7, beyond="last")
            assert not whole.truncated and len(whole.pages) == 7


def test_first_sight_reads_the_newest_comments_in_order_without_a_last_link() -> None:
    with serve(FakeGitHub(last_link_pages=0, max_per_page=2)) as fake:
        fake.add_issue(REPO, 15)
        ids = [comment.id for comment in fake.add_history(REPO, 15, 30)]
        with GitHubClient(fake.url, "", timeout=5) as client:
            page = ClientReads(client).comments_since("octo/app", None)
    assert [c["id"] for c in page.entries] == ids[-20:], "10 pages of 2, oldest first"
    assert page.truncated
    assert all(r.query["direction"] == "desc" for r in fake.logged("GET", COMMENTS))


# -- item 5: who posted a failed status ----------------------------------------------


def test_the_combined_status_names_no_creator_and_the_statuses_list_does(
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = github.new_sha(REPO)
    github.add_status(REPO, sha, context="ci/build", state="pending", login="builder")
    github.add_status(REPO, sha, context="ci/build", state="failure", login="builder")
    github.add_status(REPO, sha, context="ci/deploy", state="success", login="deployer")
    _, _, combined = ask(github, f"/repos/octo/app/commits/{sha}/status")
    assert all("creator" not in s for s in combined["statuses"])
    _, _, posted = ask(github, f"/repos/octo/app/commits/{sha}/statuses")
    assert [(s["context"], s["state"], s["creator"]["login"]) for s in posted] == [
        ("ci/deploy", "success", "deployer"),
        ("ci/build", "failure", "builder"),
        ("ci/build", "pending", "builder"),
    ]


def test_a_status_is_named_by_its_id_in_the_statuses_list_not_by_the_combined_answer() -> None:
    combined: dict[str, Any] = {
        "statuses": [{"id": 7, "context": "ci", "state": "error", "creator": {"login": "x"}}]
    }
    [check] = statuses_reading(combined).failed
    assert (check.by, check.status_id) == ("", 7)
    posted = [
        {"id": 8, "context": "ci", "creator": {"login": "later"}},
        {"id": 7, "context": "ci", "creator": {"login": "jenkins"}},
    ]
    assert status_creator(posted, 7) == "jenkins"
    assert status_creator(posted, 9) == ""
    assert status_creator([{"id": 7}], 7) == ""


@pytest.mark.parametrize("listed", [True, False])
def test_a_failed_status_is_delivered_from_whoever_posted_it(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    listed: bool,
) -> None:
    linked(world, github)
    sha = push(github)
    github.add_status(REPO, sha, context="ci/jenkins", state="error", login="jenkins-bot")
    if not listed:
        github.fail_next(f"/repos/octo/app/commits/{sha}/statuses", status=500)
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 0, err
    who = "@jenkins-bot" if listed else "someone"
    assert f"delivered the failure of check ci/jenkins from {who}" in out, out
    assert wait_until(lambda: '"ci/jenkins" failed (error)' in world.read())
