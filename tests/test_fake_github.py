"""The loopback fake GitHub answers the way GitHub's REST documentation says GitHub does."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, etag_matches, serve, weak_etag

TOKEN = "ghp_fake-test-token"
REPO = "octo/app"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the widget", body="It wobbles.", labels=("the-loop",))
        yield fake


def ask(
    github: FakeGitHub,
    path: str,
    *,
    method: str = "GET",
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, dict[str, str], Any]:
    """One request on a fresh connection: (status, lower-case headers, parsed body or None)."""
    split = urllib.parse.urlsplit(github.url)
    connection = http.client.HTTPConnection(split.hostname or "", split.port, timeout=10)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        received = {name.lower(): value for name, value in response.getheaders()}
        return response.status, received, json.loads(raw) if raw else None
    finally:
        connection.close()


def test_a_repeated_get_with_its_etag_is_a_304_that_costs_nothing(github: FakeGitHub) -> None:
    status, headers, _ = ask(github, "/repos/octo/app/issues/15")
    assert status == 200 and headers["etag"].startswith('W/"')
    again, again_headers, body = ask(
        github, "/repos/octo/app/issues/15", headers={"If-None-Match": headers["etag"]}
    )
    assert (again, body) == (304, None)
    assert again_headers["x-ratelimit-remaining"] == headers["x-ratelimit-remaining"]
    github.add_comment(REPO, 15, "news")
    _, after, _ = ask(github, "/repos/octo/app/issues/15/comments")
    assert int(after["x-ratelimit-remaining"]) == int(headers["x-ratelimit-remaining"]) - 1


def test_an_unauthenticated_304_still_costs_budget() -> None:
    with serve() as github:
        github.add_issue(REPO, 1)
        _, headers, _ = ask(github, "/repos/octo/app/issues/1", token=None)
        status, again, _ = ask(
            github,
            "/repos/octo/app/issues/1",
            token=None,
            headers={"If-None-Match": headers["etag"]},
        )
    assert status == 304
    assert int(again["x-ratelimit-remaining"]) == int(headers["x-ratelimit-remaining"]) - 1


def test_the_etag_comparison_is_weak_and_takes_lists_and_a_star() -> None:
    tag = weak_etag(b"[]")
    assert etag_matches(tag.removeprefix("W/"), tag)
    assert etag_matches(f'"other", {tag}', tag)
    assert etag_matches("*", tag)
    assert not etag_matches('"other"', tag)


def test_a_configured_fake_refuses_a_missing_or_unknown_token(github: FakeGitHub) -> None:
    assert ask(github, "/repos/octo/app/issues/15", token=None)[0] == 401
    assert ask(github, "/repos/octo/app/issues/15", token="nope")[0] == 401


def test_the_rate_headers_count_down_and_a_spent_budget_is_a_403(github: FakeGitHub) -> None:
    github.set_budget(TOKEN, remaining=1, limit=10, reset=1_900_000_000)
    status, headers, _ = ask(github, "/repos/octo/app/issues/15")
    assert status == 200
    assert [headers[f"x-ratelimit-{name}"] for name in ("limit", "remaining", "used")] == [
        "10",
        "0",
        "10",
    ]
    assert (headers["x-ratelimit-reset"], headers["x-ratelimit-resource"]) == (
        "1900000000",
        "core",
    )
    refused, refused_headers, body = ask(github, "/repos/octo/app/issues/15")
    assert (refused, refused_headers["x-ratelimit-remaining"]) == (403, "0")
    assert "rate limit" in body["message"]


def test_pages_carry_next_and_last_links_that_keep_the_query(github: FakeGitHub) -> None:
    for index in range(5):
        github.add_comment(REPO, 15, f"c{index}")
    _, headers, page = ask(github, "/repos/octo/app/issues/comments?per_page=2&sort=created")
    links = dict(
        (rel.split('"')[1], target.strip(" <>"))
        for target, rel in (part.split(";") for part in headers["link"].split(","))
    )
    assert set(links) == {"next", "last"} and len(page) == 2
    assert (
        links["next"]
        == f"{github.url}/repos/octo/app/issues/comments?per_page=2&sort=created&page=2"
    )
    assert links["last"].endswith("page=3")
    _, last_headers, last = ask(github, links["last"].removeprefix(github.url))
    assert len(last) == 1 and 'rel="next"' not in last_headers["link"]


def test_since_means_updated_at_or_after(github: FakeGitHub) -> None:
    first = github.add_comment(REPO, 15, "first")
    github.advance(10)
    second = github.add_comment(REPO, 15, "second")
    since = second.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    _, _, items = ask(github, f"/repos/octo/app/issues/comments?since={since}")
    assert [item["id"] for item in items] == [second.id]
    github.advance(10)
    github.edit_comment(first.id, "first, edited")
    _, _, items = ask(
        github, f"/repos/octo/app/issues/comments?since={since}&sort=updated&direction=asc"
    )
    assert [item["id"] for item in items] == [second.id, first.id]


def test_a_comment_has_the_fields_the_poller_reads(github: FakeGitHub) -> None:
    comment = github.add_comment(REPO, 15, "beep", login="ci[bot]", bot=True)
    _, _, [item] = ask(github, "/repos/octo/app/issues/15/comments")
    assert item["id"] == comment.id and item["body"] == "beep"
    assert item["user"] == {"login": "ci[bot]", "type": "Bot"}
    assert item["html_url"] == f"https://github.com/octo/app/issues/15#issuecomment-{comment.id}"
    assert item["issue_url"] == f"{github.url}/repos/octo/app/issues/15"
    assert item["created_at"] == item["updated_at"] == "2026-12-01T09:00:00Z"


def test_a_pull_request_is_an_issue_with_a_pull_request_key_and_has_a_merged_state(
    github: FakeGitHub,
) -> None:
    github.add_issue(REPO, 16, labels=("the-loop",), pull_request=True)
    _, _, items = ask(github, "/repos/octo/app/issues?state=open&labels=the-loop")
    assert sorted((item["number"], "pull_request" in item) for item in items) == [
        (15, False),
        (16, True),
    ]
    assert ask(github, "/repos/octo/app/pulls/15")[0] == 404
    github.set_state(REPO, 16, "closed", merged=True)
    _, _, pull = ask(github, "/repos/octo/app/pulls/16")
    assert (pull["state"], pull["merged"]) == ("closed", True)
    _, _, open_items = ask(github, "/repos/octo/app/issues?state=open")
    assert [item["number"] for item in open_items] == [15]


def test_labels_filter_with_and(github: FakeGitHub) -> None:
    github.add_issue(REPO, 17, labels=("the-loop", "bug"))
    _, _, items = ask(github, "/repos/octo/app/issues?labels=the-loop,bug")
    assert [item["number"] for item in items] == [17]


def test_a_post_creates_a_comment_by_the_tokens_login(github: FakeGitHub) -> None:
    status, headers, created = ask(
        github, "/repos/octo/app/issues/15/comments", method="POST", body={"body": "on it"}
    )
    assert status == 201 and headers["location"] == created["url"]
    assert created["user"]["login"] == "the-loop-bot" and github.comments[0].body == "on it"
    assert ask(github, "/repos/octo/app/issues/15/comments", method="POST", body={})[0] == 422
    assert (
        ask(github, "/repos/octo/app/issues/99/comments", method="POST", body={"body": "x"})[0]
        == 404
    )


def test_an_injected_failure_answers_the_next_requests_then_stops(github: FakeGitHub) -> None:
    github.fail_next("/repos/octo/app/issues/15", count=2, status=403, retry_after=30)
    answers = [ask(github, "/repos/octo/app/issues/15") for _ in range(3)]
    assert [status for status, _, _ in answers] == [403, 403, 200]
    assert answers[0][1]["retry-after"] == "30"


def test_the_poll_interval_header_is_sent_when_set(github: FakeGitHub) -> None:
    github.poll_interval = 90
    assert ask(github, "/repos/octo/app/issues/15")[1]["x-poll-interval"] == "90"


def test_the_request_log_records_method_path_query_headers_and_status(github: FakeGitHub) -> None:
    ask(github, "/repos/octo/app/issues?state=open&per_page=5")
    ask(github, "/repos/octo/app/nothing-here")
    first, second = github.requests
    assert (first.method, first.path, first.query, first.status) == (
        "GET",
        "/repos/octo/app/issues",
        {"state": "open", "per_page": "5"},
        200,
    )
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert second.status == 404 and github.connections == 2


def test_a_malformed_query_value_is_a_422_not_a_dropped_connection(github: FakeGitHub) -> None:
    assert ask(github, "/repos/octo/app/issues/comments?since=yesterday")[0] == 422
    assert ask(github, "/repos/octo/app/issues?per_page=many")[0] == 422
