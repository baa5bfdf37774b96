"""The poller's REST client against the loopback fake GitHub, over real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import NO_ANSWER, FakeGitHub, iso, serve
from the_loop.github.client import GitHubClient
from the_loop.github.etags import FileEtagCache, MemoryEtagCache
from the_loop.github.poster import API_VERSION, USER_AGENT
from the_loop.github.replies import GitHubHTTPError, RateLimit, next_link
from the_loop.layout import StateLayout

TOKEN = "ghp_secret-token-value"
REPO = "octo/app"
COMMENTS = "/repos/octo/app/issues/comments"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the widget", labels=("the-loop",))
        yield fake


@pytest.fixture
def client(github: FakeGitHub) -> Iterator[GitHubClient]:
    with GitHubClient(github.url, TOKEN, timeout=5) as client:
        yield client


def add_comments(github: FakeGitHub, count: int) -> list[int]:
    ids: list[int] = []
    for index in range(count):
        github.advance(60)
        ids.append(github.add_comment(REPO, 15, f"comment {index}").id)
    return ids


def test_every_request_carries_the_token_the_user_agent_and_the_api_version(
    github: FakeGitHub, client: GitHubClient
) -> None:
    client.get("/repos/octo/app/issues/15")
    [request] = github.logged("GET", "/repos/octo/app/issues/15")
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["user-agent"] == USER_AGENT
    assert request.headers["x-github-api-version"] == API_VERSION
    assert request.headers["accept"] == "application/vnd.github+json"


def test_an_unchanged_page_is_a_304_across_clients_through_the_durable_cache(
    github: FakeGitHub, tmp_path: Path
) -> None:
    add_comments(github, 2)
    layout = StateLayout(tmp_path / "state")
    with GitHubClient(github.url, TOKEN, etags=FileEtagCache.for_layout(layout)) as first:
        fresh = first.get(COMMENTS, {"per_page": 100})
        first.etags.flush()
    cache_file = layout.local_dir / "poll-etags.json"
    assert TOKEN not in cache_file.read_text(encoding="utf-8")
    with GitHubClient(github.url, TOKEN, etags=FileEtagCache.for_layout(layout)) as second:
        again = second.get(COMMENTS, {"per_page": 100})
    assert (fresh.status, again.status, again.not_modified) == (200, 304, True)
    assert second.stats.not_modified == 1
    assert [r.status for r in github.logged("GET", COMMENTS)] == [200, 304]
    assert github.logged("GET", COMMENTS)[1].headers["if-none-match"] == fresh.headers["etag"]


def test_a_304_costs_no_rate_budget_and_a_changed_page_is_fetched_again(
    github: FakeGitHub, client: GitHubClient
) -> None:
    ids = add_comments(github, 1)
    first = client.get(COMMENTS)
    unchanged = client.get(COMMENTS)
    ids += add_comments(github, 1)
    changed = client.get(COMMENTS)
    assert first.rate is not None and unchanged.rate is not None and changed.rate is not None
    assert unchanged.rate.remaining == first.rate.remaining
    assert changed.rate.remaining == first.rate.remaining - 1
    assert (unchanged.status, changed.status) == (304, 200)
    assert [comment["id"] for comment in changed.json()] == ids


def test_a_kept_body_comes_back_on_a_304(github: FakeGitHub, client: GitHubClient) -> None:
    add_comments(github, 1)
    fetched = client.get(COMMENTS, keep_body=True)
    remembered = client.get(COMMENTS)
    assert remembered.not_modified and remembered.json() == fetched.json()


def test_every_page_is_followed_by_its_link_header(
    github: FakeGitHub, client: GitHubClient
) -> None:
    ids = add_comments(github, 7)
    listing = client.get_all_pages(COMMENTS, {"per_page": 3})
    assert [comment["id"] for comment in listing.items] == ids
    assert [request.query.get("page", "1") for request in github.logged("GET", COMMENTS)] == [
        "1",
        "2",
        "3",
    ]
    assert len(listing.pages) == 3 and not listing.not_modified and listing.complete


def test_an_unchanged_listing_is_all_304s_and_still_walks_every_page(
    github: FakeGitHub, client: GitHubClient
) -> None:
    add_comments(github, 7)
    client.get_all_pages(COMMENTS, {"per_page": 3})
    again = client.get_all_pages(COMMENTS, {"per_page": 3})
    assert again.not_modified and len(again.pages) == 3
    assert not again.complete and again.items == []
    assert [r.status for r in github.logged("GET", COMMENTS)] == [200] * 3 + [304] * 3


def test_since_returns_only_comments_updated_at_or_after_it(
    github: FakeGitHub, client: GitHubClient
) -> None:
    old, edge, new = add_comments(github, 3)
    edge_time = next(c.updated_at for c in github.comments if c.id == edge)
    github.advance(60)
    github.edit_comment(old, "edited")
    params = {"since": iso(edge_time), "sort": "updated", "direction": "asc", "per_page": 100}
    listing = client.get_all_pages(COMMENTS, params)
    assert [comment["id"] for comment in listing.items] == [edge, new, old]


def test_the_open_listing_keeps_items_carrying_every_label_and_marks_pull_requests(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.add_issue(REPO, 16, labels=("the-loop", "bug"), pull_request=True)
    github.add_issue(REPO, 17, labels=("bug",))
    github.add_issue(REPO, 18, labels=("the-loop", "bug"))
    github.set_state(REPO, 18, "closed")
    listing = client.get_all_pages(
        "/repos/octo/app/issues", {"state": "open", "labels": "the-loop,bug", "per_page": 100}
    )
    assert [(item["number"], "pull_request" in item) for item in listing.items] == [(16, True)]


def test_a_429_with_retry_after_is_the_typed_error_with_the_wait(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.fail_next(COMMENTS, status=429, retry_after=42)
    with pytest.raises(GitHubHTTPError) as caught:
        client.get(COMMENTS)
    error = caught.value
    assert (error.status, error.retry_after, error.rate_limited, error.retryable) == (
        429,
        42.0,
        True,
        True,
    )
    assert isinstance(error.rate, RateLimit) and TOKEN not in str(error)
    assert client.get(COMMENTS).status == 200  # the failure was for the next request only


def test_a_spent_budget_is_a_403_that_says_when_it_resets(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.set_budget(TOKEN, remaining=0, reset=1_900_000_000)
    with pytest.raises(GitHubHTTPError) as caught:
        client.get(COMMENTS)
    error = caught.value
    assert error.status == 403 and error.rate_limited and error.rate is not None
    assert (error.rate.remaining, error.rate.reset) == (0, 1_900_000_000)


def test_a_server_error_and_a_refusal_are_told_apart(
    github: FakeGitHub, client: GitHubClient
) -> None:
    github.fail_next(COMMENTS, status=500)
    with pytest.raises(GitHubHTTPError) as server_error:
        client.get(COMMENTS)
    with pytest.raises(GitHubHTTPError) as missing:
        client.get("/repos/octo/app/issues/99")
    assert (server_error.value.status, server_error.value.retryable) == (500, True)
    assert (missing.value.status, missing.value.retryable) == (404, False)
    assert "404 Not Found: Not Found" in str(missing.value)


def test_a_bad_token_is_refused_and_never_shown(github: FakeGitHub) -> None:
    with (
        GitHubClient(github.url, "ghp_wrong-token") as client,
        pytest.raises(GitHubHTTPError) as caught,
    ):
        client.get(COMMENTS)
    assert caught.value.status == 401 and "ghp_wrong-token" not in str(caught.value)


def test_a_hung_endpoint_is_cut_off_by_the_clients_timeout(github: FakeGitHub) -> None:
    github.fail_next(COMMENTS, stall_seconds=float("inf"))
    with GitHubClient(github.url, TOKEN, timeout=0.3) as client:
        with pytest.raises(GitHubHTTPError) as caught:
            client.get(COMMENTS)
        assert caught.value.status is None and "did not answer within 0.3s" in str(caught.value)
        github.released.set()
        assert client.get("/repos/octo/app/issues/15").status == 200  # a new connection works


def test_a_slow_answer_within_the_timeout_is_waited_for(github: FakeGitHub) -> None:
    github.fail_next(COMMENTS, stall_seconds=0.2)
    with GitHubClient(github.url, TOKEN, timeout=10) as client:
        assert client.get(COMMENTS).status == 200


def test_several_requests_share_one_kept_alive_connection(
    github: FakeGitHub, client: GitHubClient
) -> None:
    add_comments(github, 5)
    client.get_all_pages(COMMENTS, {"per_page": 2})
    client.get("/repos/octo/app/issues/15")
    client.post_json("/repos/octo/app/issues/15/comments", {"body": "hello"})
    assert len(github.requests) == 5
    assert {request.connection for request in github.requests} == {1}
    assert github.connections == 1 and client.stats.connections_opened == 1


def test_a_get_on_a_connection_the_server_dropped_is_asked_once_more_afresh(
    github: FakeGitHub, client: GitHubClient
) -> None:
    client.get("/repos/octo/app/issues/15")
    github.fail_next("/repos/octo/app/issues/15", hang_up=True)
    assert client.get("/repos/octo/app/issues/15").not_modified
    statuses = [(r.status, r.connection) for r in github.logged("GET", "/repos/octo/app/issues/15")]
    assert statuses == [(200, 1), (NO_ANSWER, 1), (304, 2)]
    assert client.stats.connections_opened == 2


def test_a_post_the_server_dropped_is_not_sent_again(
    github: FakeGitHub, client: GitHubClient
) -> None:
    client.get("/repos/octo/app/issues/15")
    github.fail_next("/repos/octo/app/issues/15/comments", hang_up=True)
    with pytest.raises(GitHubHTTPError, match="could not talk to") as caught:
        client.post_json("/repos/octo/app/issues/15/comments", {"body": "once"})
    assert caught.value.status is None
    assert len(github.logged("POST")) == 1 and github.comments == []


def test_a_post_creates_a_comment_authored_by_the_tokens_login(
    github: FakeGitHub, client: GitHubClient
) -> None:
    response = client.post_json("/repos/octo/app/issues/15/comments", {"body": "on it"})
    assert response.status == 201
    assert response.json()["user"]["login"] == "the-loop-bot"
    assert [(c.login, c.body) for c in github.comments] == [("the-loop-bot", "on it")]


def test_every_post_waits_for_its_turn(github: FakeGitHub) -> None:
    turns: list[str] = []
    with GitHubClient(github.url, TOKEN, before_post=lambda: turns.append("turn")) as client:
        client.post_json("/repos/octo/app/issues/15/comments", {"body": "one"})
        client.post_json("/repos/octo/app/issues/15/comments", {"body": "two"})
    assert turns == ["turn", "turn"]


def test_a_next_link_to_another_host_is_not_followed_with_the_token(github: FakeGitHub) -> None:
    cache = MemoryEtagCache()
    with GitHubClient(github.url.replace("127.0.0.1", "localhost"), TOKEN, etags=cache) as client:
        add_comments(github, 3)
        with pytest.raises(GitHubHTTPError, match="another host"):
            client.get_all_pages(COMMENTS, {"per_page": 1})
    assert len(github.logged("GET", COMMENTS)) == 1


def test_an_api_url_that_is_not_plain_http_is_refused() -> None:
    for url in ("file:///etc/passwd", "ftp://example.com", "https://user:pw@example.com"):
        with pytest.raises(GitHubHTTPError, match="refusing"):
            GitHubClient(url, TOKEN)


def test_an_api_root_with_a_path_prefixes_every_request() -> None:
    client = GitHubClient("https://ghe.example.com/api/v3/", TOKEN)
    assert client.url_for("/repos/o/r/issues", {"page": 2}) == (
        "https://ghe.example.com/api/v3/repos/o/r/issues?page=2"
    )


def test_the_link_header_parser_finds_next_among_the_other_relations() -> None:
    header = (
        '<https://api.github.com/x?page=1>; rel="prev", '
        '<https://api.github.com/x?page=3>; rel="next", '
        '<https://api.github.com/x?page=9>; rel="last"'
    )
    assert next_link(header) == "https://api.github.com/x?page=3"
    assert next_link('<https://api.github.com/x?page=1>; rel="first"') == ""
    assert next_link("") == ""


def test_rate_limit_headers_are_read_into_a_typed_value() -> None:
    headers = {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4990",
        "x-ratelimit-used": "10",
        "x-ratelimit-reset": "1900000000",
        "x-ratelimit-resource": "core",
    }
    assert RateLimit.from_headers(headers) == RateLimit(5000, 4990, 10, 1_900_000_000, "core")
    assert RateLimit.from_headers({"x-ratelimit-remaining": "many"}) is None
