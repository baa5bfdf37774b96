"""GitHub's redirects (a renamed repository, a transferred issue) through the REST client
and its reads, against the loopback fake over real sockets: followed on the API's own
host, a bounded number of hops, the token never sent elsewhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_github import FakeGitHub, serve
from the_loop.adapters.github_reads import ClientReads, IntakeGitHub
from the_loop.github.client import MAX_REDIRECTS, GitHubClient
from the_loop.github.replies import GitHubHTTPError
from the_loop.ref import WorkItemRef

TOKEN = "ghp_secret-token-value"
REPO = "octo/app"
ITEM = "/repos/octo/app/issues/15"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the widget", labels=("the-loop",))
        yield fake


@pytest.fixture
def client(github: FakeGitHub) -> Iterator[GitHubClient]:
    with GitHubClient(github.url, TOKEN, timeout=5) as client:
        yield client


def test_a_get_of_a_renamed_repository_follows_its_redirect_on_the_api_host(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.rename_repository(REPO, "octo/app2")
    answer = client.get(ITEM)
    assert answer.object()["title"] == "Fix the widget"
    number = github.repository_id("octo", "app2")
    assert answer.url == f"{github.url}/repositories/{number}/issues/15"
    assert (answer.redirects, answer.moved) == ((301,), True)
    [moved] = github.logged("GET", ITEM)
    [served] = github.logged("GET", f"/repositories/{number}/issues/15")
    assert (moved.status, served.status) == (301, 200)
    assert served.headers["authorization"] == f"Bearer {TOKEN}", "the same host: the token"


def test_a_listing_read_through_a_redirect_is_a_304_the_next_time(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.rename_repository(REPO, "octo/app2")
    first = client.get_all_pages(f"/repos/{REPO}/issues", {"state": "open"})
    again = client.get_all_pages(f"/repos/{REPO}/issues", {"state": "open"})
    assert [item["number"] for item in first.items] == [15]
    assert again.not_modified and again.pages[0].moved


def test_a_redirect_to_another_host_is_not_followed_and_the_token_never_goes_there(
    github: FakeGitHub, client: GitHubClient
) -> None:
    with serve(FakeGitHub()) as elsewhere:
        github.fail_next(ITEM, status=301, headers={"location": f"{elsewhere.url}{ITEM}"})
        with pytest.raises(GitHubHTTPError, match="to another host") as refused:
            client.get(ITEM)
        assert elsewhere.requests == []
    assert TOKEN not in str(refused.value)


def test_a_redirect_loop_stops_after_a_bounded_number_of_hops(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.fail_next(ITEM, count=50, status=302, headers={"location": ITEM})
    with pytest.raises(GitHubHTTPError, match=f"more than {MAX_REDIRECTS} times"):
        client.get(ITEM)
    assert len(github.logged("GET", ITEM)) == MAX_REDIRECTS + 1


def test_a_write_to_a_renamed_repository_is_repeated_where_it_now_is(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.rename_repository(REPO, "octo/app2")
    posted = client.post_json(f"{ITEM}/comments", {"body": "hello"})
    assert posted.status == 201
    assert [r.status for r in github.logged("POST")] == [307, 201]
    with github.lock:
        [comment] = github.comments
    assert (comment.repo, comment.number, comment.body) == ("app2", 15, "hello")


def test_a_transferred_issue_is_gone_saying_where_it_went(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.add_issue("octo/other", 1)
    github.transfer_issue(REPO, 15, "octo/other")
    ref = WorkItemRef.parse(f"github:{REPO}#15")
    reads = ClientReads(client)
    with pytest.raises(GitHubHTTPError, match="transferred to octo/other#2") as moved:
        reads.item(ref)
    assert moved.value.status == 301
    issue = IntakeGitHub(reads, warn=lambda _line: None).item(ref)
    assert (issue.is_open, issue.ref) == (False, ref)
    assert "github:octo/app#15 was transferred to octo/other#2" in issue.gone


def test_an_item_of_a_renamed_repository_is_the_same_item_and_the_new_name_is_known(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.rename_repository(REPO, "octo/app2")
    reads = ClientReads(client)
    assert reads.item(WorkItemRef.parse(f"github:{REPO}#15"))["number"] == 15
    assert reads.moved_to(REPO) == "octo/app2"
    reads.changed_items(REPO, "2026-01-01T00:00:00Z")
    assert reads.moved_to(REPO) == "octo/app2"
    assert len(github.logged("GET", f"/repos/{REPO}")) == 1, "asked once"
    assert reads.refusals == []


def test_a_repository_whose_new_name_is_known_is_asked_by_it_and_a_later_rename_learned(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.rename_repository(REPO, "octo/app2")
    reads = ClientReads(client, names={REPO: "octo/app2"})
    ref = WorkItemRef.parse(f"github:{REPO}#15")
    assert reads.item(ref)["number"] == 15
    reads.changed_items(REPO, "2026-01-01T00:00:00Z")
    assert [r.status for r in github.logged()] == [200, 200], "no redirect paid for"
    assert {r.path for r in github.logged()} == {
        "/repos/octo/app2/issues/15",
        "/repos/octo/app2/issues",
    }
    github.rename_repository("octo/app2", "octo/app3")
    reads.changed_items(REPO, "2026-01-01T00:00:00Z")
    assert reads.moved_to(REPO) == "octo/app3"
    assert reads.item(ref)["number"] == 15
    assert github.logged()[-1].path == "/repos/octo/app3/issues/15"
    assert reads.refusals == []
