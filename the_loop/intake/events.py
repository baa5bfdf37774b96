"""What GitHub said, as the intake takes it: plain frozen values named after GitHub's events.

- :class:`IssueComment`: the comment of an ``issue_comment`` event (created or edited:
  GitHub's ``updated_at`` says which), on an issue or a pull request's thread.
- :class:`Issue`: the ``issue`` (or ``pull_request``) of an ``issues`` or
  ``pull_request`` event as GitHub describes it now: open or closed, merged, who closed
  it, its labels, title and body. An item closed, reopened, relabelled or merged is
  one of these, read fresh; so is one GitHub no longer has (``gone``: an ``issues``
  event's ``deleted`` or ``transferred``, or a look-up GitHub answered that way).

A reader's job is translation: :func:`comment_from_json` and :func:`issue_from_json`
take the objects GitHub's REST answers and webhook payloads both carry (a dict from
its JSON), so a poll and a push give the intake the same values. A comment without
what the intake relies on raises ``ValueError`` with a sentence; an item never does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from the_loop.github.marker import AGENT_COMMENT_MARKER, carries_marker
from the_loop.ref import WorkItemRef

__all__ = [
    "AGENT_COMMENT_MARKER",
    "Comment",
    "Issue",
    "IssueComment",
    "comment_from_json",
    "comments_from_json",
    "issue_from_json",
    "parse_timestamp",
]

_ISSUE_NUMBER = re.compile(r"/issues/([1-9][0-9]{0,17})\Z")


@dataclass(frozen=True)
class IssueComment:
    """What the intake needs of one comment; ``work_item`` is the issue or PR it is on."""

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
        return carries_marker(self.body)


#: The name the poller's first release gave the comment value.
Comment = IssueComment


@dataclass(frozen=True)
class Issue:
    """An issue or pull request as GitHub describes it now (``closed_by``: the login that
    closed or merged it, ``author`` the login that opened it; ``""`` when GitHub did not
    say)."""

    ref: WorkItemRef
    is_open: bool
    merged: bool = False
    closed_by: str = ""
    title: str = ""
    url: str = ""
    body: str = ""
    labels: frozenset[str] = frozenset()
    author: str = ""
    #: Why GitHub no longer has the item (deleted or transferred), as a sentence; ``""``
    #: while it does. A gone item is not open.
    gone: str = ""
    #: A pull request (its issue object carries ``pull_request``, or it is one).
    is_pull: bool = False


def issue_from_json(data: Mapping[str, Any], ref: WorkItemRef) -> Issue:
    """The item ``ref`` as ``data`` describes it: GitHub's issue object (a pull request's
    merge under ``pull_request.merged_at``, its closer in ``closed_by``) or its pull
    request object (``merged_at`` and ``merged_by`` at the top, as a webhook's
    ``pull_request`` carries them). What it lacks reads as empty; an answer that is not
    an open item reads as closed."""
    # An issue object says who closed it and whether it merged; only an object without
    # those keys (a pull request's own) is read for merged_by and a top-level merged_at.
    closer_fields = _object(data, "closed_by" if "closed_by" in data else "merged_by")
    pull_fields = _object(data, "pull_request") if "pull_request" in data else data
    raw_labels = data.get("labels")
    labels = cast(list[Any], raw_labels) if isinstance(raw_labels, list) else []
    names = frozenset(
        cast(str, label.get("name"))
        for label in (cast(Mapping[str, Any], x) for x in labels if isinstance(x, Mapping))
        if isinstance(label.get("name"), str)
    )
    return Issue(
        ref=ref,
        is_open=data.get("state") == "open",
        merged=bool(pull_fields.get("merged_at")),
        closed_by=_text(closer_fields, "login"),
        title=_text(data, "title"),
        url=_text(data, "html_url"),
        body=_text(data, "body"),
        labels=names,
        author=_text(_object(data, "user"), "login"),
        is_pull=any(key in data for key in ("pull_request", "head", "merged_at")),
    )


def comment_from_json(data: Mapping[str, Any], *, repository: WorkItemRef) -> IssueComment:
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
    return IssueComment(
        id=comment_id,
        work_item=repository.with_number(int(number.group(1))),
        login=login,
        user_type=_text(author, "type"),
        body=_text(data, "body"),
        html_url=_text(data, "html_url"),
        created_at=created,
        updated_at=updated,
    )


def comments_from_json(
    entries: Iterable[Mapping[str, Any]],
    *,
    repository: WorkItemRef,
    warn: Callable[[str], None],
) -> list[IssueComment]:
    """GitHub's comment objects as values, deduplicated by id, in GitHub's order; an
    entry without what the intake needs is skipped with a warning."""
    comments: dict[int, IssueComment] = {}
    for data in entries:
        try:
            comment = comment_from_json(data, repository=repository)
        except ValueError as error:
            warn(f"{repository.owner}/{repository.repo}: skipping a comment: {error}")
            continue
        comments.setdefault(comment.id, comment)
    return list(comments.values())


def parse_timestamp(text: str) -> datetime:
    """An ISO 8601 timestamp (``Z`` or an offset; naive means UTC) as an aware datetime."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else _EMPTY


_EMPTY: Mapping[str, Any] = {}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _timestamp(data: Mapping[str, Any], key: str, comment_id: int) -> datetime:
    try:
        return parse_timestamp(_text(data, key))
    except ValueError:
        raise ValueError(f"comment {comment_id} has no readable {key}") from None
