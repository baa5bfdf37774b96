"""`translate(delivery_id, event, payload)` on payloads of the shapes GitHub's webhooks send
(trimmed of the fields nothing reads): each event and action the intake acts on gives its
push (the kind and the values), everything else is ignored with the reason said, and a
payload without what its event needs is ignored too, never an exception."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from the_loop.ref import WorkItemRef
from the_loop.webhook.translate import ACTIONS, Push, translate

API = "https://api.github.com"
HEAD = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
NEW_HEAD = "c9f2b3a8d5e1f4a7b6c0d9e8f7a6b5c4d3e2f1a0"
CREATED = "2026-12-01T09:00:00Z"
UPDATED = "2026-12-01T09:05:00Z"
ISSUE = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/app#40")


def user(login: str = "alice", kind: str = "User") -> dict[str, Any]:
    return {
        "login": login,
        "id": 583231,
        "node_id": "MDQ6VXNlcjU4MzIzMQ==",
        "url": f"{API}/users/{login}",
        "html_url": f"https://github.com/{login}",
        "type": kind,
        "site_admin": False,
    }


def repository(full_name: str = "octo/app") -> dict[str, Any]:
    owner, _, name = full_name.rpartition("/")
    return {
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": user(owner, "Organization"),
        "html_url": f"https://github.com/{full_name}",
        "url": f"{API}/repos/{full_name}",
        "default_branch": "main",
    }


def issue(
    number: int = 15,
    *,
    state: str = "open",
    labels: tuple[str, ...] = ("the-loop",),
    pull: bool = False,
    closed_by: str = "",
) -> dict[str, Any]:
    """An ``issue`` object of an ``issues`` or ``issue_comment`` payload."""
    kind = "pull" if pull else "issues"
    document: dict[str, Any] = {
        "url": f"{API}/repos/octo/app/issues/{number}",
        "html_url": f"https://github.com/octo/app/{kind}/{number}",
        "id": 1000 + number,
        "node_id": "I_kwDOABCD",
        "number": number,
        "title": "Fix the wobbling widget",
        "user": user("alice"),
        "labels": [
            {"id": 208045946, "name": name, "color": "f29513", "default": False} for name in labels
        ],
        "state": state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "comments": 3,
        "created_at": CREATED,
        "updated_at": UPDATED,
        "closed_at": UPDATED if state == "closed" else None,
        "author_association": "MEMBER",
        "body": "It wobbles.",
    }
    if closed_by:
        document["closed_by"] = user(closed_by)
    if pull:
        document["pull_request"] = {
            "url": f"{API}/repos/octo/app/pulls/{number}",
            "html_url": f"https://github.com/octo/app/pull/{number}",
            "merged_at": None,
        }
    return document


def comment(
    comment_id: int = 1001, number: int = 15, *, body: str = "the-loop start", edited: bool = False
) -> dict[str, Any]:
    return {
        "url": f"{API}/repos/octo/app/issues/comments/{comment_id}",
        "html_url": f"https://github.com/octo/app/issues/{number}#issuecomment-{comment_id}",
        "issue_url": f"{API}/repos/octo/app/issues/{number}",
        "id": comment_id,
        "node_id": "IC_kwDOABCD",
        "user": user("alice"),
        "created_at": CREATED,
        "updated_at": UPDATED if edited else CREATED,
        "author_association": "MEMBER",
        "body": body,
        "reactions": {"url": f"{API}/repos/octo/app/issues/comments/{comment_id}/reactions"},
    }


def branch(ref: str, sha: str, full_name: str = "octo/app") -> dict[str, Any]:
    owner = full_name.partition("/")[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(owner),
        "repo": repository(full_name),
    }


def pull_request(
    number: int = 40,
    *,
    state: str = "open",
    merged: bool = False,
    head: str = "loop/github-octo-app-15",
    sha: str = HEAD,
    head_repository: str = "octo/app",
) -> dict[str, Any]:
    """A ``pull_request`` object of a ``pull_request`` (or review) payload."""
    return {
        "url": f"{API}/repos/octo/app/pulls/{number}",
        "id": 1000 + number,
        "node_id": "PR_kwDOABCD",
        "html_url": f"https://github.com/octo/app/pull/{number}",
        "issue_url": f"{API}/repos/octo/app/issues/{number}",
        "number": number,
        "state": state,
        "locked": False,
        "title": "Fix the widget",
        "user": user("the-loop-bot"),
        "body": "Closes #15",
        "labels": [],
        "created_at": CREATED,
        "updated_at": UPDATED,
        "closed_at": UPDATED if state == "closed" else None,
        "merged_at": UPDATED if merged else None,
        "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
        "draft": False,
        "head": branch(head, sha, head_repository),
        "base": branch("main", "9049f1265b7d61be4a8904a9a27120d2064dab3b"),
        "author_association": "CONTRIBUTOR",
        "merged": merged,
        "merged_by": user("alice") if merged else None,
        "comments": 0,
        "review_comments": 2,
        "commits": 3,
    }


def review(review_id: int = 2001, *, state: str = "changes_requested") -> dict[str, Any]:
    """A ``review`` object: GitHub's webhook spells its state in lowercase."""
    html = f"https://github.com/octo/app/pull/40#pullrequestreview-{review_id}"
    pull_url = f"{API}/repos/octo/app/pulls/40"
    return {
        "id": review_id,
        "node_id": "PRR_kwDOABCD",
        "user": user("alice"),
        "body": "A few things.",
        "commit_id": HEAD,
        "submitted_at": UPDATED,
        "state": state,
        "html_url": html,
        "pull_request_url": pull_url,
        "author_association": "MEMBER",
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
    }


def review_comment(comment_id: int = 3001, review_id: int = 2001) -> dict[str, Any]:
    html = f"https://github.com/octo/app/pull/40#discussion_r{comment_id}"
    return {
        "url": f"{API}/repos/octo/app/pulls/comments/{comment_id}",
        "pull_request_review_id": review_id,
        "id": comment_id,
        "node_id": "PRRC_kwDOABCD",
        "diff_hunk": "@@ -16,33 +16,40 @@ class Widget:",
        "path": "src/widget.py",
        "commit_id": HEAD,
        "original_commit_id": HEAD,
        "user": user("alice"),
        "body": "rename this",
        "created_at": UPDATED,
        "updated_at": UPDATED,
        "html_url": html,
        "pull_request_url": f"{API}/repos/octo/app/pulls/40",
        "author_association": "MEMBER",
        "line": 12,
        "original_line": 12,
        "side": "RIGHT",
        "subject_type": "line",
    }


def check_run(
    *, sha: str = HEAD, status: str = "completed", pulls: tuple[int, ...] = (40,)
) -> dict[str, Any]:
    return {
        "id": 4,
        "name": "test (3.11)",
        "node_id": "MDg6Q2hlY2tSdW40",
        "head_sha": sha,
        "external_id": "",
        "url": f"{API}/repos/octo/app/check-runs/4",
        "html_url": "https://github.com/octo/app/actions/runs/5/job/4",
        "details_url": "https://github.com/octo/app/actions/runs/5/job/4",
        "status": status,
        "conclusion": "failure" if status == "completed" else None,
        "started_at": CREATED,
        "completed_at": UPDATED if status == "completed" else None,
        "output": {"title": None, "summary": None, "text": None, "annotations_count": 0},
        "check_suite": {"id": 5, "head_branch": "loop/github-octo-app-15", "head_sha": sha},
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": [
            {
                "url": f"{API}/repos/octo/app/pulls/{number}",
                "id": 1000 + number,
                "number": number,
                "head": {"ref": "loop/github-octo-app-15", "sha": sha, "repo": {"id": 1}},
                "base": {"ref": "main", "sha": "9049f126", "repo": {"id": 1}},
            }
            for number in pulls
        ],
    }


def status_body(sha: str = HEAD) -> dict[str, Any]:
    """A ``status`` payload's own fields (it has no ``action``)."""
    return {
        "id": 6,
        "sha": sha,
        "name": "octo/app",
        "target_url": "https://ci.example/builds/6",
        "context": "ci/jenkins",
        "description": "The build failed",
        "state": "failure",
        "commit": {"sha": sha, "url": f"{API}/repos/octo/app/commits/{sha}"},
        "branches": [{"name": "loop/github-octo-app-15", "commit": {"sha": sha}}],
        "created_at": UPDATED,
        "updated_at": UPDATED,
    }


def payload(event: str, action: str = "") -> dict[str, Any]:
    """A whole delivery of ``event`` (``action``) on octo/app."""
    common: dict[str, Any] = {"repository": repository(), "sender": user("alice")}
    if event == "issue_comment":
        body = {"issue": issue(), "comment": comment(edited=action == "edited")}
    elif event == "issues":
        body = {"issue": issue(state="closed" if action == "closed" else "open")}
    elif event == "pull_request":
        merged = action == "closed"
        body = {
            "number": 40,
            "pull_request": pull_request(state="closed" if merged else "open", merged=merged),
        }
    elif event == "pull_request_review":
        body = {"review": review(), "pull_request": pull_request()}
    elif event == "pull_request_review_comment":
        body = {"comment": review_comment(), "pull_request": pull_request()}
    elif event == "check_run":
        body = {"check_run": check_run(status="completed" if action == "completed" else "queued")}
    elif event == "status":
        body = status_body()
    else:
        body = {}
    return ({"action": action} if event != "status" else {}) | body | common


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def ignored(push: Push, *words: str) -> None:
    assert push.kind == "ignored", push
    assert push.reason and all(word in push.reason for word in words), push.reason
    assert (push.comment, push.pull, push.review, push.head_sha) == (None, None, None, "")


# -- issue_comment ------------------------------------------------------------------


def test_a_created_comment_is_the_comment_and_its_item_as_github_describes_it() -> None:
    push = translate("d-1", "issue_comment", payload("issue_comment", "created"))
    assert (push.delivery_id, push.event, push.action, push.kind) == (
        "d-1",
        "issue_comment",
        "created",
        "comment",
    )
    assert push.repository == "octo/app" and push.reason == ""
    assert push.repository_ref == WorkItemRef.parse("github:octo/app#1")
    assert push.comment is not None and push.issue is not None
    said = push.comment
    assert (said.id, said.work_item, said.login, said.user_type) == (1001, ISSUE, "alice", "User")
    assert said.body == "the-loop start" and not said.edited
    assert said.html_url == "https://github.com/octo/app/issues/15#issuecomment-1001"
    assert said.created_at == said.updated_at == at(CREATED)
    item = push.issue
    assert (item.ref, item.is_open, item.is_pull, item.merged) == (ISSUE, True, False, False)
    assert item.labels == frozenset({"the-loop"}) and item.title == "Fix the wobbling widget"
    assert item.author == "alice" and item.url == "https://github.com/octo/app/issues/15"
    assert push.pull is None and push.review is None and push.pull_request is None


def test_an_edited_comment_is_the_comment_edited() -> None:
    push = translate("d-2", "issue_comment", payload("issue_comment", "edited"))
    assert push.kind == "comment" and push.comment is not None
    assert push.comment.edited and push.comment.updated_at == at(UPDATED)


def test_a_comment_on_a_pull_requests_thread_is_on_the_pull_request() -> None:
    document = payload("issue_comment", "created")
    document["issue"] = issue(40, pull=True, labels=())
    document["comment"] = comment(1002, 40, body="please rebase")
    push = translate("d-3", "issue_comment", document)
    assert push.kind == "comment" and push.comment is not None and push.issue is not None
    assert push.comment.work_item == PR and push.issue.ref == PR and push.issue.is_pull


def test_a_comment_without_issue_url_takes_its_item_from_the_payloads_issue() -> None:
    document = payload("issue_comment", "created")
    del document["comment"]["issue_url"]
    push = translate("d-4", "issue_comment", document)
    assert push.kind == "comment" and push.comment is not None
    assert push.comment.work_item == ISSUE


def test_a_comment_on_a_closed_unlabelled_item_says_so() -> None:
    document = payload("issue_comment", "created")
    document["issue"] = issue(state="closed", labels=(), closed_by="bob")
    push = translate("d-5", "issue_comment", document)
    assert push.kind == "comment" and push.issue is not None
    assert (push.issue.is_open, push.issue.labels, push.issue.closed_by) == (
        False,
        frozenset(),
        "bob",
    )


def test_a_deleted_comment_is_ignored_with_the_reason() -> None:
    push = translate("d-6", "issue_comment", payload("issue_comment", "deleted"))
    ignored(push, "deleted")
    assert (push.event, push.action, push.repository) == ("issue_comment", "deleted", "octo/app")


# -- issues ------------------------------------------------------------------------


def test_a_closed_issue_is_the_item_closed_and_who_closed_it() -> None:
    document = payload("issues", "closed")
    document["issue"] = issue(state="closed", closed_by="bob")
    push = translate("d-7", "issues", document)
    assert push.kind == "item" and push.issue is not None and push.comment is None
    assert (push.issue.ref, push.issue.is_open, push.issue.closed_by) == (ISSUE, False, "bob")


def test_a_labeled_issue_is_the_item_with_its_labels_now() -> None:
    document = payload("issues", "labeled")
    document["issue"] = issue(16, labels=("bug", "the-loop"))
    document["label"] = {"id": 1, "name": "the-loop", "color": "ededed"}
    push = translate("d-8", "issues", document)
    assert push.kind == "item" and push.issue is not None
    assert push.issue.ref == ISSUE.with_number(16) and push.issue.is_open
    assert push.issue.labels == frozenset({"bug", "the-loop"})


@pytest.mark.parametrize("action", sorted(ACTIONS["issues"]))
def test_every_issues_action_acted_on_is_the_item(action: str) -> None:
    push = translate("d-9", "issues", payload("issues", action))
    assert (push.kind, push.action, push.reason) == ("item", action, "")
    assert push.issue is not None and push.issue.ref == ISSUE


@pytest.mark.parametrize("action", ["deleted", "transferred"])
def test_an_issue_deleted_or_transferred_is_not_taken_for_open(action: str) -> None:
    """GitHub's payload describes the item as it was (``state`` open); it is no longer
    there (deleted) or no longer here (transferred), so it must not read as open."""
    document = payload("issues", action)
    if action == "transferred":
        document["changes"] = {
            "new_issue": issue(7) | {"url": f"{API}/repos/octo/elsewhere/issues/7"},
            "new_repository": repository("octo/elsewhere"),
        }
    push = translate("d-10", "issues", document)
    assert push.kind == "item" and push.issue is not None
    assert not push.issue.is_open, f"an issue {action} reads as open: {push.issue}"


# -- pull_request -------------------------------------------------------------------


@pytest.mark.parametrize("action", ["opened", "reopened", "edited"])
def test_an_opened_pull_request_is_the_pull_and_its_item(action: str) -> None:
    push = translate("d-11", "pull_request", payload("pull_request", action))
    assert (push.kind, push.action) == ("pull", action)
    assert push.pull is not None and push.issue is not None
    pull = push.pull
    assert (pull.ref, pull.head_branch, pull.head_sha) == (PR, "loop/github-octo-app-15", HEAD)
    assert (pull.head_repository, pull.author, pull.is_open) == ("octo/app", "the-loop-bot", True)
    assert pull.body == "Closes #15" and pull.from_own_repository()
    item = push.issue
    assert (item.ref, item.is_open, item.is_pull, item.merged) == (PR, True, True, False)


def test_a_synchronized_pull_request_carries_its_new_head() -> None:
    document = payload("pull_request", "synchronize")
    document["pull_request"] = pull_request(sha=NEW_HEAD)
    document["before"], document["after"] = HEAD, NEW_HEAD
    push = translate("d-12", "pull_request", document)
    assert push.kind == "pull" and push.pull is not None and push.pull.head_sha == NEW_HEAD


def test_a_merged_pull_request_is_closed_and_merged() -> None:
    push = translate("d-13", "pull_request", payload("pull_request", "closed"))
    assert push.kind == "pull" and push.pull is not None and push.issue is not None
    assert not push.pull.is_open
    assert (push.issue.is_open, push.issue.merged, push.issue.closed_by) == (False, True, "alice")


def test_a_pull_request_closed_unmerged_is_closed_not_merged() -> None:
    document = payload("pull_request", "closed")
    document["pull_request"] = pull_request(state="closed", merged=False)
    push = translate("d-14", "pull_request", document)
    assert push.kind == "pull" and push.issue is not None
    assert (push.issue.is_open, push.issue.merged) == (False, False)


def test_a_forks_pull_request_says_where_its_head_is() -> None:
    document = payload("pull_request", "opened")
    document["pull_request"] = pull_request(head_repository="mallory/app")
    push = translate("d-15", "pull_request", document)
    assert push.pull is not None and push.pull.head_repository == "mallory/app"
    assert not push.pull.from_own_repository()


# -- reviews ------------------------------------------------------------------------


def test_a_submitted_review_is_the_review_to_read() -> None:
    push = translate("d-16", "pull_request_review", payload("pull_request_review", "submitted"))
    assert push.kind == "review" and push.reason == ""
    assert (push.pull_request, push.review_id) == (PR, 2001)
    assert push.review is not None
    said = push.review
    assert (said.id, said.pull_request, said.login) == (2001, PR, "alice")
    assert said.body == "A few things." and said.submitted_at == at(UPDATED)
    assert said.key == "review-2001"
    assert said.html_url == "https://github.com/octo/app/pull/40#pullrequestreview-2001"


@pytest.mark.parametrize("state", ["approved", "changes_requested", "commented"])
def test_a_submitted_reviews_state_as_the_webhook_spells_it_reads_as_submitted(state: str) -> None:
    """GitHub's webhook sends ``review.state`` in lowercase, where its REST answer says
    ``APPROVED``; the review a push carries is submitted all the same."""
    document = payload("pull_request_review", "submitted")
    document["review"] = review(state=state)
    push = translate("d-17", "pull_request_review", document)
    assert push.kind == "review" and push.review is not None
    assert push.review.submitted, f"a review submitted as {state!r} reads as not submitted"


def test_an_inline_comment_created_names_its_review() -> None:
    push = translate(
        "d-18", "pull_request_review_comment", payload("pull_request_review_comment", "created")
    )
    assert (push.kind, push.pull_request, push.review_id) == ("review", PR, 2001)
    assert push.review is None, "a push carries the comment, not its review: it is read"
    assert push.comment is None and push.pull is None


# -- checks -------------------------------------------------------------------------


def test_a_completed_check_run_is_its_head_and_the_pull_requests_it_heads() -> None:
    push = translate("d-19", "check_run", payload("check_run", "completed"))
    assert (push.kind, push.head_sha, push.pull_numbers) == ("checks", HEAD, (40,))
    assert push.repository == "octo/app" and push.pull_request is None


def test_a_check_run_of_several_or_no_pull_requests_says_so() -> None:
    document = payload("check_run", "completed")
    document["check_run"] = check_run(pulls=(40, 41))
    assert translate("d-20", "check_run", document).pull_numbers == (40, 41)
    document["check_run"] = check_run(pulls=())  # a fork's, or a branch no PR heads
    push = translate("d-21", "check_run", document)
    assert (push.kind, push.head_sha, push.pull_numbers) == ("checks", HEAD, ())


def test_a_status_is_its_sha() -> None:
    push = translate("d-22", "status", payload("status"))
    assert (push.kind, push.action, push.head_sha) == ("checks", "", HEAD)
    assert push.pull_numbers == ()


# -- what is not acted on ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "action"),
    [
        ("issues", "assigned"),
        ("issues", "milestoned"),
        ("issues", "locked"),
        ("pull_request", "labeled"),
        ("pull_request", "review_requested"),
        ("pull_request", "converted_to_draft"),
        ("pull_request", "assigned"),
        ("pull_request_review", "edited"),
        ("pull_request_review", "dismissed"),
        ("pull_request_review_comment", "edited"),
        ("pull_request_review_comment", "deleted"),
        ("check_run", "created"),
        ("check_run", "rerequested"),
        ("check_run", "requested_action"),
    ],
)
def test_an_action_not_acted_on_is_ignored_saying_which(event: str, action: str) -> None:
    push = translate("d-23", event, payload(event, action))
    ignored(push, event, action, "not acted on")
    assert (push.event, push.action) == (event, action)


@pytest.mark.parametrize(
    "event", ["push", "ping", "check_suite", "workflow_run", "issues_comment", "star", ""]
)
def test_an_unknown_event_is_ignored_saying_so(event: str) -> None:
    push = translate("d-24", event, payload("issues", "opened"))
    ignored(push, "events are not acted on")
    assert push.repository == "" and push.issue is None


def test_an_action_missing_or_not_text_is_ignored() -> None:
    document = payload("issues", "closed")
    del document["action"]
    ignored(translate("d-25", "issues", document), "issues (no action) is not acted on")
    document["action"] = 3
    ignored(translate("d-26", "issues", document), "issues (no action) is not acted on")
    document["action"] = ["closed"]
    ignored(translate("d-27", "issues", document), "not acted on")


# -- malformed payloads -----------------------------------------------------------------


def repositories_not_sent() -> Iterator[Any]:
    yield from (None, "octo/app", ["octo/app"], {}, {"name": "app"}, {"full_name": 5})
    yield from ({"full_name": name} for name in ("", "octo", "octo/", "/app", "octo/app#5"))
    yield from ({"full_name": name} for name in ("octo/app/extra", "octo app/x", "a/b/c/d"))


@pytest.mark.parametrize("value", list(repositories_not_sent()))
@pytest.mark.parametrize("event", sorted(ACTIONS))
def test_a_payload_naming_no_repository_is_ignored(event: str, value: Any) -> None:
    document = payload(event, sorted(ACTIONS[event])[0])
    if value is None:
        del document["repository"]
    else:
        document["repository"] = value
    push = translate("d-28", event, document)
    ignored(push, "no repository")
    assert push.repository == ""


@pytest.mark.parametrize("full_name", ["ghe.example.com/octo/app", "github.com/octo/app"])
def test_a_full_name_with_a_host_in_front_is_not_a_repository_github_sends(full_name: str) -> None:
    """``full_name`` is ``owner/repo`` on github.com and on GitHub Enterprise alike; one
    of three parts is no repository GitHub could have sent (and is not octo/app)."""
    document = payload("issue_comment", "created")
    document["repository"] = repository(full_name)
    push = translate("d-29", "issue_comment", document)
    ignored(push, "no repository")


def test_a_repository_spelled_in_other_case_is_that_repository() -> None:
    document = payload("issue_comment", "created")
    document["repository"] = repository("Octo/App")
    push = translate("d-30", "issue_comment", document)
    assert push.kind == "comment" and push.repository.casefold() == "octo/app"


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``document`` with the value at the dotted ``path`` replaced (``...``: removed)."""
    changed = copy.deepcopy(document)
    *parents, last = path.split(".")
    target: Any = changed
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    key: Any = int(last) if isinstance(target, list) else last
    if value is ...:
        del target[key]
    else:
        target[key] = value
    return changed


MALFORMED: list[tuple[str, str, str, Any]] = [
    # issue_comment: the comment's id, author, times; the item's number
    ("issue_comment", "created", "comment", ...),
    ("issue_comment", "created", "comment", ["id", 1001]),
    ("issue_comment", "created", "comment", "the-loop start"),
    ("issue_comment", "created", "comment.id", ...),
    ("issue_comment", "created", "comment.id", "1001"),
    ("issue_comment", "created", "comment.id", 0),
    ("issue_comment", "created", "comment.id", -5),
    ("issue_comment", "created", "comment.id", True),
    ("issue_comment", "created", "comment.id", 1001.0),
    ("issue_comment", "created", "comment.id", None),
    ("issue_comment", "created", "comment.user", ...),
    ("issue_comment", "created", "comment.user", ["alice"]),
    ("issue_comment", "created", "comment.user", "alice"),
    ("issue_comment", "created", "comment.user.login", 583231),
    ("issue_comment", "created", "comment.created_at", ...),
    ("issue_comment", "created", "comment.created_at", "yesterday"),
    ("issue_comment", "created", "comment.created_at", 1764579600),
    ("issue_comment", "created", "comment.updated_at", "2026-13-45T99:00:00Z"),
    ("issue_comment", "created", "comment.issue_url", f"{API}/repos/octo/app/issues/x"),
    ("issue_comment", "edited", "comment.issue_url", 15),
    ("issue_comment", "created", "issue", ...),
    ("issue_comment", "created", "issue", [issue()]),
    ("issue_comment", "created", "issue.number", ...),
    ("issue_comment", "created", "issue.number", "15"),
    ("issue_comment", "created", "issue.number", 0),
    ("issue_comment", "created", "issue.number", 15.0),
    ("issue_comment", "deleted", "issue.number", "15"),
    # issues: the item's number
    ("issues", "closed", "issue", ...),
    ("issues", "closed", "issue", "octo/app#15"),
    ("issues", "labeled", "issue", [issue()]),
    ("issues", "labeled", "issue.number", ...),
    ("issues", "labeled", "issue.number", "15"),
    ("issues", "reopened", "issue.number", -1),
    ("issues", "reopened", "issue.number", False),
    # pull_request: its number and head branch
    ("pull_request", "opened", "pull_request", ...),
    ("pull_request", "opened", "pull_request", [pull_request()]),
    ("pull_request", "opened", "pull_request.number", "40"),
    ("pull_request", "opened", "pull_request.number", ...),
    ("pull_request", "synchronize", "pull_request.head", ...),
    ("pull_request", "synchronize", "pull_request.head", ["loop/github-octo-app-15"]),
    ("pull_request", "synchronize", "pull_request.head", "loop/github-octo-app-15"),
    ("pull_request", "synchronize", "pull_request.head.ref", ""),
    ("pull_request", "closed", "pull_request.head.ref", 7),
    # pull_request_review: the review's id and author, its pull request's number, its time
    ("pull_request_review", "submitted", "review", ...),
    ("pull_request_review", "submitted", "review", [review()]),
    ("pull_request_review", "submitted", "review.id", ...),
    ("pull_request_review", "submitted", "review.id", "2001"),
    ("pull_request_review", "submitted", "review.id", 0),
    ("pull_request_review", "submitted", "review.user", ...),
    ("pull_request_review", "submitted", "review.user", "alice"),
    ("pull_request_review", "submitted", "review.submitted_at", "soon"),
    ("pull_request_review", "submitted", "pull_request", ...),
    ("pull_request_review", "submitted", "pull_request", [pull_request()]),
    ("pull_request_review", "submitted", "pull_request.number", "40"),
    # pull_request_review_comment: the comment's review, its pull request's number
    ("pull_request_review_comment", "created", "comment", ...),
    ("pull_request_review_comment", "created", "comment", [review_comment()]),
    ("pull_request_review_comment", "created", "comment.pull_request_review_id", ...),
    ("pull_request_review_comment", "created", "comment.pull_request_review_id", None),
    ("pull_request_review_comment", "created", "comment.pull_request_review_id", "2001"),
    ("pull_request_review_comment", "created", "pull_request.number", ...),
    ("pull_request_review_comment", "created", "pull_request.number", 40.5),
    ("pull_request_review_comment", "created", "pull_request", "octo/app#40"),
    # check_run: its head SHA
    ("check_run", "completed", "check_run", ...),
    ("check_run", "completed", "check_run", [check_run()]),
    ("check_run", "completed", "check_run.head_sha", ...),
    ("check_run", "completed", "check_run.head_sha", ""),
    ("check_run", "completed", "check_run.head_sha", HEAD[:12]),
    ("check_run", "completed", "check_run.head_sha", HEAD.upper()),
    ("check_run", "completed", "check_run.head_sha", HEAD[:-1] + "g"),
    ("check_run", "completed", "check_run.head_sha", HEAD + "0"),
    ("check_run", "completed", "check_run.head_sha", int(HEAD, 16)),
    ("check_run", "completed", "check_run.head_sha", [HEAD]),
    # status: its SHA
    ("status", "", "sha", ...),
    ("status", "", "sha", None),
    ("status", "", "sha", "main"),
    ("status", "", "sha", {"sha": HEAD}),
    ("status", "", "sha", f" {HEAD}"),
]


@pytest.mark.parametrize(("event", "action", "path", "value"), MALFORMED)
def test_a_payload_without_what_its_event_needs_is_ignored_with_the_reason(
    event: str, action: str, path: str, value: Any
) -> None:
    push = translate("d-31", event, _set(payload(event, action), path, value))
    ignored(push)
    assert (push.event, push.action, push.repository) == (event, action, "octo/app")
    assert push.reason.startswith("the payload cannot be read: "), push.reason


def test_a_check_runs_pull_requests_not_a_list_or_not_numbered_are_left_out() -> None:
    document = payload("check_run", "completed")
    run = document["check_run"]
    for value in ({"number": 40}, "40", 40, None):
        run["pull_requests"] = value
        push = translate("d-32", "check_run", document)
        assert (push.kind, push.head_sha, push.pull_numbers) == ("checks", HEAD, ())
    run["pull_requests"] = [
        {"number": "41"},
        {"number": 0},
        {"number": True},
        ["number", 42],
        43,
        {"number": 44.0},
        {"id": 1045},
        {"number": 40},
    ]
    assert translate("d-33", "check_run", document).pull_numbers == (40,)


def test_an_items_labels_or_author_of_the_wrong_shape_read_as_none() -> None:
    document = payload("issues", "labeled")
    document["issue"]["labels"] = {"name": "the-loop"}
    document["issue"]["user"] = ["alice"]
    push = translate("d-34", "issues", document)
    assert push.kind == "item" and push.issue is not None
    assert (push.issue.labels, push.issue.author) == (frozenset(), "")
    document["issue"]["labels"] = ["the-loop", {"name": 5}, None, {"name": "bug"}]
    push = translate("d-35", "issues", document)
    assert push.issue is not None and push.issue.labels == frozenset({"bug"})


JUNK: tuple[Any, ...] = (None, "", "x", 0, -1, 2**70, 1.5, True, [], [1], {}, {"a": 1})


def _paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every dotted path into ``value`` (a list's entries by index)."""
    if isinstance(value, dict):
        for key, inner in value.items():  # pyright: ignore[reportUnknownVariableType]
            path = f"{prefix}{key}"
            yield path
            yield from _paths(inner, path + ".")
    elif isinstance(value, list):
        for index, inner in enumerate(value):  # pyright: ignore[reportUnknownArgumentType]
            path = f"{prefix}{index}"
            yield path
            yield from _paths(inner, path + ".")


def _every_acted_payload() -> Iterator[tuple[str, str]]:
    for event, actions in sorted(ACTIONS.items()):
        for action in sorted(actions):
            yield event, action


@pytest.mark.parametrize(("event", "action"), list(_every_acted_payload()))
def test_no_value_anywhere_in_a_payload_makes_translation_raise(event: str, action: str) -> None:
    """Each value of each payload replaced by each shape of junk (and removed): a push
    every time, its kind the event's own or ignored with a reason."""
    document = payload(event, action)
    expected = translate("d-36", event, document).kind
    assert expected != "ignored" or action == "deleted"
    tried = 0
    for path in _paths(document):
        for value in (*JUNK, ...):
            push = translate("d-37", event, _set(document, path, value))
            tried += 1
            assert isinstance(push, Push)
            assert push.kind in (expected, "ignored"), (path, value, push)
            if push.kind == "ignored":
                assert push.reason, (path, value)
    assert tried > 100
