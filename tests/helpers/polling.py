"""Comment values for the poller's pure tests, built the way GitHub's listing describes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from the_loop.intake.events import Comment, comment_from_json
from the_loop.ref import WorkItemRef

REPOSITORY = WorkItemRef.parse("github:octo/app#1")
BASE = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)


def comment_json(
    comment_id: int = 1001,
    *,
    number: int = 15,
    login: str = "alice",
    user_type: str = "User",
    body: str = "hello",
    minute: int = 0,
    edited_after: int = 0,
) -> dict[str, Any]:
    """One entry of ``GET /repos/octo/app/issues/comments``."""
    created = BASE + timedelta(minutes=minute)
    return {
        "id": comment_id,
        "html_url": f"https://github.com/octo/app/issues/{number}#issuecomment-{comment_id}",
        "issue_url": f"https://api.github.com/repos/octo/app/issues/{number}",
        "user": {"login": login, "type": user_type},
        "body": body,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "updated_at": (created + timedelta(seconds=edited_after)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def comment(comment_id: int = 1001, **fields: Any) -> Comment:
    """The :class:`Comment` of :func:`comment_json` with the same arguments."""
    return comment_from_json(comment_json(comment_id, **fields), repository=REPOSITORY)
