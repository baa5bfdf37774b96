"""The fake GitHub's pull-request loop endpoints answer over real HTTP as GitHub's REST
documentation says: pull requests, reviews and inline comments, check runs, commit
statuses, Actions jobs and their logs, reactions."""

from __future__ import annotations

import http.client
import json
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve

TOKEN = "ghp_fake-test-token"
REPO = "octo/app"
HUNK = "@@ -1,3 +1,4 @@\n def wobble():\n-    return 1\n+    return 2\n+    # steady"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the widget", labels=("the-loop",))
        fake.add_pull(REPO, 16, title="Steady the widget", body="Closes #15", head="loop/15")
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
    """One request, redirects not followed: (status, lower-case headers, parsed JSON or
    the text of a non-JSON answer, None when empty)."""
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
    finally:
        connection.close()
    if not raw:
        return response.status, received, None
    if received.get("content-type", "").startswith("application/json"):
        return response.status, received, json.loads(raw)
    return response.status, received, raw.decode()


def again(github: FakeGitHub, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    """The same GET with the ETag it answered: (status, headers)."""
    status, received, _ = ask(github, path, headers={"If-None-Match": headers["etag"]})
    return status, received


def links(headers: dict[str, str]) -> dict[str, str]:
    """``rel`` -> the query of its target."""
    found = re.findall(r'<([^>]+)>; rel="(\w+)"', headers.get("link", ""))
    return {rel: urllib.parse.urlsplit(url).query for url, rel in found}


def remaining(headers: dict[str, str]) -> int:
    return int(headers["x-ratelimit-remaining"])


# -- pull requests -------------------------------------------------------------------


def test_a_pull_request_is_listed_with_its_branches_and_head_sha(github: FakeGitHub) -> None:
    status, _, [pull] = ask(github, "/repos/octo/app/pulls")
    assert status == 200
    assert (pull["number"], pull["state"], pull["title"]) == (16, "open", "Steady the widget")
    assert pull["body"] == "Closes #15"
    assert pull["user"]["login"] == "alice"
    assert pull["head"]["ref"] == "loop/15" and re.fullmatch(r"[0-9a-f]{40}", pull["head"]["sha"])
    assert pull["head"]["repo"]["full_name"] == REPO and pull["head"]["label"] == "octo:loop/15"
    assert pull["base"]["ref"] == "main"
    assert pull["html_url"] == "https://github.com/octo/app/pull/16"
    assert pull["url"] == f"{github.url}/repos/octo/app/pulls/16"
    assert pull["created_at"] == pull["updated_at"] == "2026-12-01T09:00:00Z"
    assert (pull["merged_at"], pull["draft"], pull["closed_at"]) == (None, False, None)
    assert "merged" not in pull  # only a pull request's own GET says it
    _, _, single = ask(github, "/repos/octo/app/pulls/16")
    assert single["merged"] is False and single["head"] == pull["head"]


def test_the_issues_listing_keeps_a_pull_request_with_its_pull_request_key(
    github: FakeGitHub,
) -> None:
    _, _, items = ask(github, "/repos/octo/app/issues")
    by_number = {item["number"]: item for item in items}
    assert "pull_request" not in by_number[15]
    assert by_number[16]["pull_request"]["url"] == f"{github.url}/repos/octo/app/pulls/16"
    assert by_number[16]["pull_request"]["merged_at"] is None


def test_a_push_moves_the_head_and_bumps_the_pull_request(github: FakeGitHub) -> None:
    before = github.pull(REPO, 16).head_sha
    _, headers, _ = ask(github, "/repos/octo/app/pulls")
    assert again(github, "/repos/octo/app/pulls", headers)[0] == 304
    github.advance(60)
    sha = github.push(REPO, 16)
    assert sha != before
    status, _, [pull] = ask(
        github, "/repos/octo/app/pulls", headers={"If-None-Match": headers["etag"]}
    )
    assert status == 200
    assert (pull["head"]["sha"], pull["updated_at"]) == (sha, "2026-12-01T09:01:00Z")


def test_the_pulls_listing_filters_sorts_and_pages(github: FakeGitHub) -> None:
    for number in (17, 18, 19):
        github.advance(1)
        github.add_pull(REPO, number, head=f"loop/{number}")
    github.set_state(REPO, 18, "closed", merged=True)
    github.advance(1)
    github.push(REPO, 16)  # 16 is now the most recently updated
    _, _, newest_first = ask(github, "/repos/octo/app/pulls?state=all")
    assert [p["number"] for p in newest_first] == [19, 18, 17, 16]  # created, desc
    _, _, updated = ask(github, "/repos/octo/app/pulls?sort=updated&direction=desc")
    assert [p["number"] for p in updated] == [16, 19, 17]
    _, _, ascending = ask(github, "/repos/octo/app/pulls?sort=updated")  # asc by default
    assert [p["number"] for p in ascending] == [17, 19, 16]
    _, _, closed = ask(github, "/repos/octo/app/pulls?state=closed")
    assert [(p["number"], p["merged_at"]) for p in closed] == [(18, "2026-12-01T09:00:03Z")]
    _, _, headed = ask(github, "/repos/octo/app/pulls?head=octo:loop/17")
    assert [p["number"] for p in headed] == [17]
    assert ask(github, "/repos/octo/app/pulls?state=merged")[0] == 422
    status, headers, first = ask(github, "/repos/octo/app/pulls?state=all&per_page=3")
    assert status == 200 and len(first) == 3
    assert set(links(headers)) == {"next", "last"}
    assert "page=2" in links(headers)["next"] and "per_page=3" in links(headers)["next"]
    _, _, second = ask(github, f"/repos/octo/app/pulls?{links(headers)['next']}")
    assert [p["number"] for p in second] == [16]


def test_a_304_of_the_pulls_listing_costs_no_budget(github: FakeGitHub) -> None:
    _, headers, _ = ask(github, "/repos/octo/app/pulls")
    status, repeat = again(github, "/repos/octo/app/pulls", headers)
    assert status == 304 and remaining(repeat) == remaining(headers)


def test_a_pull_request_from_a_fork_names_the_fork_as_its_head(github: FakeGitHub) -> None:
    github.add_pull(REPO, 20, head="loop/15", head_repository="mallory/app", login="mallory")
    _, _, pull = ask(github, "/repos/octo/app/pulls/20")
    assert pull["head"]["repo"]["full_name"] == "mallory/app"
    assert pull["head"]["label"] == "mallory:loop/15"
    _, _, ours = ask(github, "/repos/octo/app/pulls?head=octo:loop/15")
    assert [p["number"] for p in ours] == [16]


# -- reviews and inline comments ---------------------------------------------------------


def test_a_review_lists_with_its_inline_comments_and_bumps_the_pull_request(
    github: FakeGitHub,
) -> None:
    github.advance(30)
    review = github.add_review(
        REPO,
        16,
        login="bob",
        state="CHANGES_REQUESTED",
        comments=[
            {"path": "widget.py", "line": 3, "body": "Why 2?", "diff_hunk": HUNK},
            {"path": "widget.py", "line": 4, "start_line": 2, "body": "Drop this."},
        ],
    )
    status, _, [listed] = ask(github, "/repos/octo/app/pulls/16/reviews")
    assert status == 200
    assert listed["id"] == review.id and listed["state"] == "CHANGES_REQUESTED"
    assert (listed["user"]["login"], listed["body"]) == ("bob", "")
    assert listed["submitted_at"] == "2026-12-01T09:00:30Z"
    assert listed["commit_id"] == github.pull(REPO, 16).head_sha
    assert (
        listed["html_url"] == f"https://github.com/octo/app/pull/16#pullrequestreview-{review.id}"
    )
    _, _, pull = ask(github, "/repos/octo/app/pulls/16")
    assert pull["updated_at"] == "2026-12-01T09:00:30Z"
    _, _, comments = ask(github, f"/repos/octo/app/pulls/16/reviews/{review.id}/comments")
    assert [c["id"] for c in comments] == [c.id for c in review.comments]
    assert {c["pull_request_review_id"] for c in comments} == {review.id}
    _, _, single = ask(github, f"/repos/octo/app/pulls/16/reviews/{review.id}")
    assert single == listed
    assert ask(github, "/repos/octo/app/pulls/16/reviews/1")[0] == 404
    assert ask(github, "/repos/octo/app/pulls/15/reviews")[0] == 404  # an issue


def test_an_inline_comment_has_the_fields_a_paste_needs(github: FakeGitHub) -> None:
    review = github.add_review(
        REPO,
        16,
        login="bob",
        comments=[
            {"path": "widget.py", "line": 4, "start_line": 2, "body": "Hm", "diff_hunk": HUNK}
        ],
    )
    [comment] = review.comments
    _, _, [item] = ask(github, "/repos/octo/app/pulls/16/comments")
    head = github.pull(REPO, 16).head_sha
    assert item["id"] == comment.id and item["pull_request_review_id"] == review.id
    assert (item["path"], item["line"], item["original_line"]) == ("widget.py", 4, 4)
    assert (item["start_line"], item["original_start_line"]) == (2, 2)
    assert (item["side"], item["start_side"], item["subject_type"]) == ("RIGHT", "RIGHT", "line")
    assert item["diff_hunk"] == HUNK and item["body"] == "Hm"
    assert item["user"] == {"login": "bob", "type": "User"}
    assert item["html_url"] == f"https://github.com/octo/app/pull/16#discussion_r{comment.id}"
    assert item["url"] == f"{github.url}/repos/octo/app/pulls/comments/{comment.id}"
    assert item["created_at"] == item["updated_at"] == "2026-12-01T09:00:00Z"
    assert item["commit_id"] == item["original_commit_id"] == head
    assert item["position"] == item["original_position"] == 4
    assert "in_reply_to_id" not in item
    assert item["reactions"]["total_count"] == 0
    _, _, single = ask(github, f"/repos/octo/app/pulls/comments/{comment.id}")
    assert single == item


def test_a_lone_inline_comment_is_a_review_of_one_and_a_reply_names_its_thread(
    github: FakeGitHub,
) -> None:
    first = github.add_review_comment(
        REPO, 16, login="bob", body="Typo", path="a.py", line=7, diff_hunk=HUNK
    )
    reply = github.add_review_comment(REPO, 16, login="alice", body="Fixed", in_reply_to=first.id)
    second = github.add_review_comment(REPO, 16, login="bob", body="Thanks", in_reply_to=reply.id)
    _, _, reviews = ask(github, "/repos/octo/app/pulls/16/reviews")
    assert [(r["state"], r["body"]) for r in reviews] == [("COMMENTED", "")] * 3
    assert [r["id"] for r in reviews] == [first.review_id, reply.review_id, second.review_id]
    _, _, items = ask(github, "/repos/octo/app/pulls/16/comments")
    by_id = {item["id"]: item for item in items}
    assert "in_reply_to_id" not in by_id[first.id]
    assert by_id[reply.id]["in_reply_to_id"] == by_id[second.id]["in_reply_to_id"] == first.id
    assert (by_id[reply.id]["path"], by_id[reply.id]["line"]) == ("a.py", 7)
    assert by_id[reply.id]["diff_hunk"] == HUNK


def test_an_outdated_thread_loses_its_line_and_position_but_keeps_the_originals(
    github: FakeGitHub,
) -> None:
    review = github.add_review(
        REPO, 16, login="bob", comments=[{"path": "a.py", "line": 9, "start_line": 8, "body": "x"}]
    )
    [comment] = review.comments
    reply = github.add_review_comment(REPO, 16, login="alice", body="ok", in_reply_to=comment.id)
    made_on = github.pull(REPO, 16).head_sha
    github.push(REPO, 16)
    github.outdate(comment.id)
    later = github.push(REPO, 16)
    _, _, items = ask(github, "/repos/octo/app/pulls/16/comments")
    for item in items:
        assert (item["line"], item["start_line"], item["position"]) == (None, None, None)
        assert (item["original_line"], item["original_start_line"]) == (9, 8)
        assert item["original_commit_id"] == made_on and item["commit_id"] != later
    assert {item["id"] for item in items} == {comment.id, reply.id}


def test_the_repository_comment_listing_filters_on_updated_at_sorts_and_pages(
    github: FakeGitHub,
) -> None:
    github.add_pull(REPO, 17)
    made = []
    for index in range(5):
        github.advance(10)
        made.append(
            github.add_review_comment(
                REPO, 16 + index % 2, login="bob", body=f"c{index}", path="a.py", line=1
            )
        )
    github.advance(10)
    github.edit_review_comment(made[0].id, "c0, edited")  # updated now, created first
    since = "2026-12-01T09:00:30Z"  # the third comment's time: at or after it
    path = f"/repos/octo/app/pulls/comments?since={since}&sort=updated&direction=asc"
    status, headers, items = ask(github, path)
    assert status == 200
    assert [i["body"] for i in items] == ["c2", "c3", "c4", "c0, edited"]
    assert {i["pull_request_url"].rsplit("/", 1)[1] for i in items} == {"16", "17"}
    status, repeat = again(github, path, headers)
    assert status == 304 and remaining(repeat) == remaining(headers)
    _, _, by_id = ask(github, "/repos/octo/app/pulls/comments")
    assert [i["id"] for i in by_id] == [c.id for c in made]  # the default: ascending id
    _, page_headers, first = ask(github, f"{path}&per_page=3")
    assert len(first) == 3 and "page=2" in links(page_headers)["next"]
    _, _, rest = ask(github, f"/repos/octo/app/pulls/comments?{links(page_headers)['next']}")
    assert [i["body"] for i in rest] == ["c0, edited"]
    github.delete_review_comment(made[4].id)
    _, _, after = ask(github, path)
    assert [i["body"] for i in after] == ["c2", "c3", "c0, edited"]
    assert ask(github, f"/repos/octo/app/pulls/comments/{made[4].id}")[0] == 404
    assert ask(github, "/repos/octo/app/pulls/comments?since=yesterday")[0] == 422


def test_the_reviews_listing_answers_304_and_pages(github: FakeGitHub) -> None:
    for login in ("bob", "carol", "dave"):
        github.add_review(REPO, 16, login=login, state="APPROVED")
    _, headers, first = ask(github, "/repos/octo/app/pulls/16/reviews?per_page=2")
    assert [r["user"]["login"] for r in first] == ["bob", "carol"]
    assert set(links(headers)) == {"next", "last"}
    assert again(github, "/repos/octo/app/pulls/16/reviews?per_page=2", headers)[0] == 304


def test_an_author_cannot_approve_their_own_pull_request(github: FakeGitHub) -> None:
    with pytest.raises(ValueError, match="own pull request"):
        github.add_review(REPO, 16, login="alice", state="APPROVED")


# -- checks, statuses, jobs -----------------------------------------------------------------


def test_check_runs_on_a_commit_are_the_newest_of_each_name_by_default(
    github: FakeGitHub,
) -> None:
    sha = github.pull(REPO, 16).head_sha
    github.add_check_run(REPO, sha, name="lint", conclusion="success")
    failed = github.add_check_run(REPO, sha, name="test", conclusion="failure")
    github.advance(60)
    rerun = github.add_check_run(REPO, sha, name="test", conclusion="timed_out")
    path = f"/repos/octo/app/commits/{sha}/check-runs"
    status, headers, listing = ask(github, path)
    assert status == 200 and listing["total_count"] == 2
    runs = {run["name"]: run for run in listing["check_runs"]}
    assert runs["test"]["id"] == rerun.id and runs["test"]["conclusion"] == "timed_out"
    run = runs["test"]
    assert (run["status"], run["head_sha"], run["app"]["slug"]) == (
        "completed",
        sha,
        "github-actions",
    )
    assert run["html_url"] == run["details_url"] == f"https://github.com/octo/app/runs/{rerun.id}"
    assert run["started_at"] == run["completed_at"] == "2026-12-01T09:01:00Z"
    assert [p["number"] for p in run["pull_requests"]] == [16]
    status, repeat = again(github, path, headers)
    assert status == 304 and remaining(repeat) == remaining(headers)
    _, _, everything = ask(github, f"{path}?filter=all&check_name=test")
    assert [r["id"] for r in everything["check_runs"]] == [failed.id, rerun.id]
    _, page_headers, paged = ask(github, f"{path}?filter=all&per_page=2")
    assert paged["total_count"] == 3 and len(paged["check_runs"]) == 2
    assert "page=2" in links(page_headers)["next"]
    _, _, by_branch = ask(github, "/repos/octo/app/commits/loop%2F15/check-runs")
    assert by_branch["total_count"] == 2
    assert ask(github, "/repos/octo/app/commits/nowhere/check-runs")[0] == 422


def test_a_queued_check_run_has_no_conclusion_until_it_completes(github: FakeGitHub) -> None:
    sha = github.pull(REPO, 16).head_sha
    run = github.add_check_run(REPO, sha, name="test", status="in_progress")
    path = f"/repos/octo/app/commits/{sha}/check-runs"
    _, headers, listing = ask(github, path)
    [queued] = listing["check_runs"]
    assert (queued["status"], queued["conclusion"], queued["completed_at"]) == (
        "in_progress",
        None,
        None,
    )
    github.complete_check_run(run.id, "failure")
    status, _, done = ask(github, path, headers={"If-None-Match": headers["etag"]})
    assert status == 200 and done["check_runs"][0]["conclusion"] == "failure"


def test_the_combined_status_takes_the_latest_of_each_context(github: FakeGitHub) -> None:
    sha = github.pull(REPO, 16).head_sha
    path = f"/repos/octo/app/commits/{sha}/status"
    _, _, empty = ask(github, path)
    assert (empty["state"], empty["total_count"], empty["statuses"]) == ("pending", 0, [])
    github.add_status(REPO, sha, context="ci/build", state="pending")
    github.add_status(REPO, sha, context="ci/build", state="success")
    github.add_status(REPO, sha, context="ci/deploy", state="error", target_url="https://ci/1")
    status, headers, combined = ask(github, path)
    assert status == 200 and combined["sha"] == sha
    assert (combined["state"], combined["total_count"]) == ("failure", 2)
    contexts = {s["context"]: s for s in combined["statuses"]}
    assert contexts["ci/build"]["state"] == "success"
    assert contexts["ci/deploy"]["target_url"] == "https://ci/1"
    assert contexts["ci/build"]["target_url"] is None  # not set: null, as on GitHub
    assert contexts["ci/build"]["description"] is None
    status, repeat = again(github, path, headers)
    assert status == 304 and remaining(repeat) == remaining(headers)


def test_a_job_serves_its_steps_and_its_log_through_a_redirect(github: FakeGitHub) -> None:
    sha = github.pull(REPO, 16).head_sha
    job = github.add_job(
        REPO,
        name="test (3.11)",
        steps=[
            {"name": "Set up job", "conclusion": "success"},
            {"name": "Run pytest", "conclusion": "failure"},
        ],
        log="collecting...\nFAILED tests/test_widget.py::test_steady\n",
    )
    run = github.add_check_run(REPO, sha, name="test (3.11)", conclusion="failure", job_id=job.id)
    assert run.id == job.id  # an Actions check run's id is its job's
    page = f"https://github.com/octo/app/actions/runs/{job.run_id}/job/{job.id}"
    assert run.html_url == page
    status, _, document = ask(github, f"/repos/octo/app/actions/jobs/{job.id}")
    assert status == 200
    assert (document["id"], document["run_id"], document["name"]) == (
        job.id,
        job.run_id,
        "test (3.11)",
    )
    assert (document["status"], document["conclusion"]) == ("completed", "failure")
    assert document["head_sha"] == sha  # the check run it ran as names the commit
    assert document["html_url"] == page
    assert [(s["number"], s["name"], s["conclusion"]) for s in document["steps"]] == [
        (1, "Set up job", "success"),
        (2, "Run pytest", "failure"),
    ]
    logs = f"/repos/octo/app/actions/jobs/{job.id}/logs"
    status, headers, _ = ask(github, logs)
    assert status == 302 and headers["location"] == f"{github.url}/_logs/{job.id}"
    blob = urllib.parse.urlsplit(headers["location"]).path
    status, blob_headers, text = ask(github, blob, token=None)  # a signed URL: no token
    assert status == 200 and text.endswith("FAILED tests/test_widget.py::test_steady\n")
    assert blob_headers["content-type"].startswith("text/plain")
    assert "x-ratelimit-remaining" not in blob_headers
    assert [r.status for r in github.logged("GET", logs)] == [302]
    assert [r.status for r in github.logged("GET", blob)] == [200]
    assert ask(github, "/repos/octo/app/actions/jobs/1/logs")[0] == 404


def test_urllib_follows_the_log_redirect(github: FakeGitHub) -> None:
    job = github.add_job(REPO, name="build", log="boom\n")
    request = urllib.request.Request(
        f"{github.url}/repos/octo/app/actions/jobs/{job.id}/logs",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.read() == b"boom\n"
    assert [r.path for r in github.logged()][-2:] == [
        f"/repos/octo/app/actions/jobs/{job.id}/logs",
        f"/_logs/{job.id}",
    ]


def test_a_log_download_can_fail_like_any_path(github: FakeGitHub) -> None:
    job = github.add_job(REPO, name="build", log="boom\n")
    github.fail_next(f"/_logs/{job.id}", status=503)
    assert ask(github, f"/_logs/{job.id}", token=None)[0] == 503
    assert ask(github, f"/_logs/{job.id}", token=None)[0] == 200


# -- reactions ---------------------------------------------------------------------------


def test_a_reaction_is_201_the_first_time_and_200_after(github: FakeGitHub) -> None:
    comment = github.add_comment(REPO, 15, "please fix")
    path = f"/repos/octo/app/issues/comments/{comment.id}/reactions"
    status, _, made = ask(github, path, method="POST", body={"content": "eyes"})
    assert status == 201
    assert (made["content"], made["user"]["login"]) == ("eyes", "the-loop-bot")
    status, _, same = ask(github, path, method="POST", body={"content": "eyes"})
    assert status == 200 and same["id"] == made["id"]
    assert github.reactions("issue_comment", comment.id) == [("the-loop-bot", "eyes")]
    _, _, listed = ask(github, f"{path}?content=eyes")
    assert [r["id"] for r in listed] == [made["id"]]
    assert ask(github, path, method="POST", body={"content": "eyeballs"})[0] == 422
    missing = "/repos/octo/app/issues/comments/999999/reactions"
    assert ask(github, missing, method="POST", body={"content": "eyes"})[0] == 404


def test_a_reaction_changes_the_comment_listing_body_and_so_its_etag(github: FakeGitHub) -> None:
    comment = github.add_comment(REPO, 15, "please fix")
    path = "/repos/octo/app/issues/15/comments"
    _, headers, [before] = ask(github, path)
    assert before["reactions"]["eyes"] == 0
    github.react("issue_comment", comment.id, "the-loop-bot", "eyes")
    status, _, [after] = ask(github, path, headers={"If-None-Match": headers["etag"]})
    assert status == 200 and after["reactions"]["eyes"] == 1
    assert after["updated_at"] == before["updated_at"]  # a reaction bumps nothing


def test_an_inline_comment_takes_reactions_and_a_failure_can_be_injected(
    github: FakeGitHub,
) -> None:
    comment = github.add_review_comment(REPO, 16, login="bob", body="x", path="a.py", line=1)
    path = f"/repos/octo/app/pulls/comments/{comment.id}/reactions"
    github.fail_next(path, status=502)
    assert ask(github, path, method="POST", body={"content": "eyes"})[0] == 502
    assert ask(github, path, method="POST", body={"content": "eyes"})[0] == 201
    assert ask(github, path, method="POST", body={"content": "eyes"})[0] == 200
    assert github.reactions("review_comment", comment.id) == [("the-loop-bot", "eyes")]
    assert [r.status for r in github.logged("POST", path)] == [502, 201, 200]
    _, _, [item] = ask(github, "/repos/octo/app/pulls/16/comments")
    assert (item["reactions"]["eyes"], item["reactions"]["total_count"]) == (1, 1)
    assert ask(github, "/repos/octo/app/pulls/comments/999999/reactions")[0] == 404


def test_a_bad_reply_adds_no_review_and_a_dismissed_review_says_so(github: FakeGitHub) -> None:
    with pytest.raises(KeyError):
        github.add_review_comment(REPO, 16, login="bob", body="?", in_reply_to=424242)
    assert github.reviews == []
    review = github.add_review(REPO, 16, login="bob", state="APPROVED")
    github.advance(5)
    github.dismiss_review(review.id)
    _, _, [listed] = ask(github, "/repos/octo/app/pulls/16/reviews")
    assert listed["state"] == "DISMISSED"
    assert ask(github, "/repos/octo/app/pulls/16")[2]["updated_at"] == "2026-12-01T09:00:05Z"


def test_checks_and_statuses_bump_no_pull_request(github: FakeGitHub) -> None:
    _, headers, _ = ask(github, "/repos/octo/app/pulls")
    sha = github.pull(REPO, 16).head_sha
    github.advance(60)
    github.add_check_run(REPO, sha, name="test", conclusion="failure")
    github.add_status(REPO, sha, context="ci", state="failure")
    assert again(github, "/repos/octo/app/pulls", headers)[0] == 304
