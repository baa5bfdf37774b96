"""Webhook payloads of the shape GitHub sends, built from the loopback fake's own state,
so a push and the fake's REST answers describe the same comment, item or pull request."""

from __future__ import annotations

from typing import Any

from tests.fake_github import FakeComment, FakeGitHub, FakeIssue


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
