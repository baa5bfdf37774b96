"""Webhook payloads of the shape GitHub sends, built from the loopback fake's own state,
so a push and the fake's REST answers describe the same comment, item or pull request."""

from __future__ import annotations

from typing import Any

from tests.fake_github import (
    FakeCheckRun,
    FakeComment,
    FakeGitHub,
    FakeIssue,
    FakeReview,
    FakeReviewComment,
    FakeStatus,
)
from tests.fake_github_pulls import check_run_json, review_comment_json, review_json


def _repository(owner: str, repo: str) -> dict[str, Any]:
    return {"full_name": f"{owner}/{repo}", "name": repo, "owner": {"login": owner}}


def comment_created(
    fake: FakeGitHub, comment: FakeComment, action: str = "created"
) -> dict[str, Any]:
    """``issue_comment`` (``created``, or ``edited``) for ``comment`` as the fake holds it."""
    issue = fake.issues[(comment.owner, comment.repo, comment.number)]
    return {
        "action": action,
        "issue": issue.to_json(fake.url),
        "comment": comment.to_json(fake.url),
        "repository": _repository(comment.owner, comment.repo),
        "sender": {"login": comment.login, "type": comment.user_type},
    }


def issue_event(fake: FakeGitHub, issue: FakeIssue, action: str) -> dict[str, Any]:
    """``issues`` (``closed``, ``reopened``, ``labeled``, ...) for ``issue`` as it is now."""
    return {
        "action": action,
        "issue": issue.to_json(fake.url, single=True),
        "repository": _repository(issue.owner, issue.repo),
        "sender": {"login": issue.closed_by or issue.login},
    }


def pull_request_event(fake: FakeGitHub, pull: FakeIssue, action: str) -> dict[str, Any]:
    """``pull_request`` (``opened``, ``synchronize``, ``closed``, ...) for ``pull``."""
    return {
        "action": action,
        "number": pull.number,
        "pull_request": pull.to_pull_json(fake.url),
        "repository": _repository(pull.owner, pull.repo),
        "sender": {"login": pull.login},
    }


def review_submitted_as_sent(fake: FakeGitHub, review: FakeReview) -> dict[str, Any]:
    """``pull_request_review`` ``submitted`` for ``review``: the review as the REST answer
    describes it but with its ``state`` in lowercase (``approved``, ``changes_requested``,
    ``commented``), as GitHub's webhook payloads carry it; no inline comments (a push does
    not carry them)."""
    pull = fake.pull(f"{review.owner}/{review.repo}", review.number)
    document = review_json(review, fake.url)
    document["state"] = review.state.lower()
    document["author_association"] = "COLLABORATOR"
    return {
        "action": "submitted",
        "review": document,
        "pull_request": pull.to_pull_json(fake.url),
        "repository": _repository(review.owner, review.repo),
        "sender": {"login": review.login, "type": review.user_type},
    }


def review_comment_created(fake: FakeGitHub, comment: FakeReviewComment) -> dict[str, Any]:
    """``pull_request_review_comment`` ``created`` for the inline ``comment``."""
    pull = fake.pull(f"{comment.owner}/{comment.repo}", comment.number)
    counts = fake.reaction_counts("review_comment", comment.id)
    return {
        "action": "created",
        "comment": review_comment_json(comment, fake.url, counts),
        "pull_request": pull.to_pull_json(fake.url),
        "repository": _repository(comment.owner, comment.repo),
        "sender": {"login": comment.login, "type": comment.user_type},
    }


def check_run_event(fake: FakeGitHub, run: FakeCheckRun, action: str = "") -> dict[str, Any]:
    """``check_run`` (``completed`` for a completed run, else ``created``, unless ``action``
    says) for ``run``; its ``pull_requests`` are the pull requests it heads (not a fork's)."""
    heads = [
        issue
        for issue in fake.issues.values()
        if issue.pull_request
        and (issue.owner, issue.repo) == (run.owner, run.repo)
        and issue.head_sha == run.head_sha
    ]
    return {
        "action": action or ("completed" if run.status == "completed" else "created"),
        "check_run": check_run_json(run, fake.url, heads),
        "repository": _repository(run.owner, run.repo),
        "sender": {"login": f"{run.app_slug}[bot]", "type": "Bot"},
    }


def status_event(fake: FakeGitHub, status: FakeStatus) -> dict[str, Any]:
    """``status`` (it has no ``action``) for the commit status ``status``."""
    repository = f"{status.owner}/{status.repo}"
    api = f"{fake.url}/repos/{repository}"
    branches = [
        {
            "name": issue.head,
            "commit": {"sha": issue.head_sha, "url": f"{api}/commits/{issue.head_sha}"},
        }
        for issue in fake.issues.values()
        if issue.pull_request
        and (issue.owner, issue.repo) == (status.owner, status.repo)
        and issue.head_sha == status.sha
    ]
    stamp = status.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": status.id,
        "sha": status.sha,
        "name": repository,
        "target_url": status.target_url or None,
        "context": status.context,
        "description": status.description or None,
        "state": status.state,
        "commit": {
            "sha": status.sha,
            "url": f"{api}/commits/{status.sha}",
            "html_url": f"https://github.com/{repository}/commit/{status.sha}",
        },
        "branches": branches,
        "created_at": stamp,
        "updated_at": stamp,
        "repository": _repository(status.owner, status.repo),
        "sender": {"login": status.login, "type": "User"},
    }


def check_run_completed(fake: FakeGitHub, run: Any, pull: FakeIssue) -> dict[str, Any]:
    """``check_run`` ``completed`` for ``run`` (a fake check run) on ``pull``'s head."""
    return {
        "action": "completed",
        "check_run": {
            "id": run.id,
            "name": run.name,
            "head_sha": run.head_sha,
            "status": "completed",
            "conclusion": run.conclusion,
            "pull_requests": [{"number": pull.number}],
        },
        "repository": _repository(pull.owner, pull.repo),
        "sender": {"login": "github-actions[bot]"},
    }
