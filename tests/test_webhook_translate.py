"""A delivery as the intake takes it: each event and action acted on gives its values;
anything else, and any payload without what its event needs, is ignored with a reason
and never raises."""

from __future__ import annotations

from typing import Any

import pytest

from the_loop.webhook.translate import translate

SHA = "a" * 40
REPO = {"full_name": "octo/app"}


def issue(
    number: int = 15, *, state: str = "open", labels: tuple[str, ...] = ("the-loop",)
) -> dict[str, Any]:
    return {
        "number": number,
        "title": "Fix it",
        "state": state,
        "labels": [{"name": n} for n in labels],
        "user": {"login": "alice"},
        "html_url": f"https://github.com/octo/app/issues/{number}",
    }


def comment(comment_id: int = 1001, *, updated: str = "2026-12-01T09:00:00Z") -> dict[str, Any]:
    return {
        "id": comment_id,
        "body": "please",
        "user": {"login": "alice", "type": "User"},
        "created_at": "2026-12-01T09:00:00Z",
        "updated_at": updated,
        "html_url": "https://github.com/octo/app/issues/15#issuecomment-1001",
    }


def pull(number: int = 20, *, state: str = "open", merged_at: str | None = None) -> dict[str, Any]:
    return {
        "number": number,
        "state": state,
        "title": "A fix",
        "body": "Fixes #15",
        "user": {"login": "bot"},
        "merged_at": merged_at,
        "head": {"ref": "loop/github-octo-app-15", "sha": SHA, "repo": {"full_name": "octo/app"}},
        "base": {"ref": "main"},
        "html_url": f"https://github.com/octo/app/pull/{number}",
    }


def test_a_created_comment_carries_the_comment_and_its_item_as_it_is_now() -> None:
    push = translate(
        "d1",
        "issue_comment",
        {"action": "created", "issue": issue(), "comment": comment(), "repository": REPO},
    )
    assert push.kind == "comment" and push.repository == "octo/app"
    assert (
        push.comment is not None and push.comment.id == 1001 and push.comment.work_item.number == 15
    )
    assert (
        push.issue is not None
        and push.issue.labels == frozenset({"the-loop"})
        and push.issue.is_open
    )


def test_an_edited_comment_is_a_comment_whose_update_says_so() -> None:
    data = {
        "action": "edited",
        "issue": issue(),
        "comment": comment(updated="2026-12-01T09:05:00Z"),
        "repository": REPO,
    }
    push = translate("d1", "issue_comment", data)
    assert push.kind == "comment" and push.comment is not None and push.comment.edited


def test_a_deleted_comment_is_settled_not_delivered() -> None:
    push = translate(
        "d1",
        "issue_comment",
        {"action": "deleted", "issue": issue(), "comment": comment(), "repository": REPO},
    )
    assert push.kind == "ignored" and "deleted" in push.reason


@pytest.mark.parametrize("action", ["closed", "reopened", "labeled", "unlabeled"])
def test_an_issue_event_carries_the_item(action: str) -> None:
    state = "closed" if action == "closed" else "open"
    push = translate(
        "d1", "issues", {"action": action, "issue": issue(state=state), "repository": REPO}
    )
    assert (
        push.kind == "item" and push.issue is not None and push.issue.is_open == (state == "open")
    )


def test_a_pull_request_carries_its_head_and_a_merge() -> None:
    opened = translate(
        "d1", "pull_request", {"action": "opened", "pull_request": pull(), "repository": REPO}
    )
    assert opened.kind == "pull" and opened.pull is not None and opened.pull.head_sha == SHA
    closed = pull(state="closed", merged_at="2026-12-01T10:00:00Z")
    merged = translate(
        "d2", "pull_request", {"action": "closed", "pull_request": closed, "repository": REPO}
    )
    assert merged.issue is not None and merged.issue.merged and merged.issue.is_pull


def test_a_review_and_an_inline_comment_name_the_review_to_read() -> None:
    review = {
        "id": 77,
        "state": "changes_requested",
        "body": "no",
        "user": {"login": "bob"},
        "submitted_at": "2026-12-01T10:00:00Z",
    }
    push = translate(
        "d1",
        "pull_request_review",
        {"action": "submitted", "review": review, "pull_request": pull(), "repository": REPO},
    )
    assert push.kind == "review" and push.review_id == 77 and push.review is not None
    assert push.pull_request is not None and push.pull_request.number == 20
    said = {"id": 5, "pull_request_review_id": 78}
    inline = translate(
        "d2",
        "pull_request_review_comment",
        {"action": "created", "comment": said, "pull_request": pull(), "repository": REPO},
    )
    assert inline.kind == "review" and inline.review_id == 78 and inline.review is None


def test_a_completed_check_and_a_status_name_the_head() -> None:
    run = {
        "head_sha": SHA,
        "status": "completed",
        "conclusion": "failure",
        "pull_requests": [{"number": 20}, "x", {"number": True}],
    }
    push = translate(
        "d1", "check_run", {"action": "completed", "check_run": run, "repository": REPO}
    )
    assert push.kind == "checks" and push.head_sha == SHA and push.pull_numbers == (20,)
    status = translate("d2", "status", {"sha": SHA, "state": "failure", "repository": REPO})
    assert status.kind == "checks" and status.head_sha == SHA


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("issues", {"action": "assigned", "issue": issue(), "repository": REPO}),
        ("check_run", {"action": "created", "check_run": {"head_sha": SHA}, "repository": REPO}),
        ("pull_request", {"action": "labeled", "pull_request": pull(), "repository": REPO}),
        ("push", {"ref": "refs/heads/main", "repository": REPO}),
        ("issue_comment", {"comment": comment(), "issue": issue(), "repository": REPO}),
    ],
)
def test_what_is_not_acted_on_is_ignored_with_its_reason(
    event: str, payload: dict[str, Any]
) -> None:
    push = translate("d1", event, payload)
    assert push.kind == "ignored" and "not acted on" in push.reason


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("issue_comment", {"action": "created", "issue": issue(), "comment": comment()}),
        (
            "issue_comment",
            {
                "action": "created",
                "issue": issue(),
                "comment": comment(),
                "repository": {"full_name": "no slash"},
            },
        ),
        (
            "issue_comment",
            {
                "action": "created",
                "issue": issue(),
                "comment": {**comment(), "id": "1"},
                "repository": REPO,
            },
        ),
        (
            "issue_comment",
            {"action": "created", "issue": [], "comment": comment(), "repository": REPO},
        ),
        (
            "issue_comment",
            {
                "action": "created",
                "issue": issue(),
                "comment": {**comment(), "user": "x"},
                "repository": REPO,
            },
        ),
        ("issues", {"action": "closed", "issue": {"number": -1}, "repository": REPO}),
        ("pull_request", {"action": "opened", "pull_request": {"number": 3}, "repository": REPO}),
        (
            "pull_request_review",
            {
                "action": "submitted",
                "review": {"id": 1},
                "pull_request": pull(),
                "repository": REPO,
            },
        ),
        (
            "pull_request_review_comment",
            {
                "action": "created",
                "comment": {"pull_request_review_id": "7"},
                "pull_request": pull(),
                "repository": REPO,
            },
        ),
        (
            "check_run",
            {"action": "completed", "check_run": {"head_sha": "not-a-sha"}, "repository": REPO},
        ),
        ("status", {"sha": SHA.upper(), "repository": REPO}),
        ("status", {"sha": SHA, "repository": "octo/app"}),
    ],
)
def test_a_payload_without_what_its_event_needs_is_ignored_never_raised(
    event: str, payload: dict[str, Any]
) -> None:
    push = translate("d1", event, payload)
    assert push.kind == "ignored" and push.reason
