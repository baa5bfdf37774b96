"""One issue or pull-request comment as a frozen value, converted once at the edge.

:func:`comment_from_json` takes one entry of GitHub's comment listing (a dict from
its JSON) and raises ``ValueError`` with a sentence when the entry lacks what the
poller relies on. Nothing else in the poller reads GitHub's JSON for a comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from the_loop.github.marker import AGENT_COMMENT_MARKER
from the_loop.ref import WorkItemRef

__all__ = ["AGENT_COMMENT_MARKER", "Comment", "comment_from_json", "parse_timestamp"]

_ISSUE_NUMBER = re.compile(r"/issues/([1-9][0-9]{0,17})\Z")


@dataclass(frozen=True)
class Comment:
    """What the poller needs of one comment; ``work_item`` is the issue or PR it is on."""

    id: int
    work_item: WorkItemRef
    login: str
    user_type: str
    body: str
    html_url: str
    created_at: datetime
    updated_at: datetime

    @property
    def edited(self) -> bool:
        """True when GitHub says the comment changed after it was written."""
        return self.updated_at > self.created_at

    @property
    def carries_marker(self) -> bool:
        """True when the body holds the-loop's own marker."""
        return AGENT_COMMENT_MARKER in self.body


def comment_from_json(data: Mapping[str, Any], *, repository: WorkItemRef) -> Comment:
    """The comment ``data`` describes; ``repository`` is any ref of its repository.

    The item's number comes from ``issue_url``. Raises ``ValueError`` for an entry
    without an integer id, an issue URL, an author or timestamps.
    """
    comment_id = data.get("id")
    if not isinstance(comment_id, int) or isinstance(comment_id, bool) or comment_id <= 0:
        raise ValueError(f"a comment needs a positive integer id, not {comment_id!r}")
    number = _ISSUE_NUMBER.search(_text(data, "issue_url"))
    if number is None:
        raise ValueError(f"comment {comment_id} has no issue_url naming its issue")
    user = data.get("user")
    author: Mapping[str, Any] = cast(Mapping[str, Any], user) if isinstance(user, Mapping) else {}
    login = _text(author, "login")
    if not login:
        raise ValueError(f"comment {comment_id} has no author login")
    created = _timestamp(data, "created_at", comment_id)
    updated = _timestamp(data, "updated_at", comment_id) if data.get("updated_at") else created
    return Comment(
        id=comment_id,
        work_item=repository.with_number(int(number.group(1))),
        login=login,
        user_type=_text(author, "type"),
        body=_text(data, "body"),
        html_url=_text(data, "html_url"),
        created_at=created,
        updated_at=updated,
    )


def parse_timestamp(text: str) -> datetime:
    """An ISO 8601 timestamp (``Z`` or an offset; naive means UTC) as an aware datetime."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _timestamp(data: Mapping[str, Any], key: str, comment_id: int) -> datetime:
    try:
        return parse_timestamp(_text(data, key))
    except ValueError:
        raise ValueError(f"comment {comment_id} has no readable {key}") from None
