"""The poll reader's part of a pull request's reviews: what it asks GitHub, and when.

Only in a cycle whose read of what changed shows a pull request a live session takes
reviews for (submitting a review, or a lone inline comment, bumps the pull request's
``updated_at``): one conditional ``GET /repos/{o}/{r}/pulls/comments?since=…`` for the
repository's inline comments, then ``GET /repos/{o}/{r}/pulls/{n}/reviews`` of each
such pull request, and a thread's first comment for a reply whose thread began
before the window. An idle cycle asks nothing (a change met again in the listing's
overlap is read again, and the ledger keeps a review pasted once). The window has a
cursor of its own (``<owner>/<repo>#reviews`` among the comment cursors); with none, it
starts where the comments' window does, and with neither, nothing is read: all is
history.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from the_loop.errors import TheLoopError
from the_loop.intake.intake import Intake, Round
from the_loop.intake.review_round import pull_request_owners
from the_loop.intake.reviews import (
    Review,
    ReviewComment,
    parsed,
    review_comment_from_json,
    review_from_json,
)
from the_loop.polling.listing import PolledItems, cursor_stamp, iso, window_start
from the_loop.polling.reads import ReaderPorts
from the_loop.ref import WorkItemRef


def reviews_cursor_key(name: str) -> str:
    """The key of a repository's reviews cursor among the comment cursors."""
    return f"{name}#reviews"


def read_reviews(
    name: str,
    round_: Round,
    items: PolledItems,
    reads: ReaderPorts,
    intake: Intake,
    *,
    comments_from: datetime | None,
) -> str | None:
    """Feed the round the reviews of the watched pull requests that changed; the newest
    ``updated_at`` read, the reviews cursor to keep (None: nothing to move)."""
    owners = pull_request_owners(round_)
    changed = [ref for ref, issue in items.changed.items() if issue.is_pull and ref in owners]
    if not changed:
        return None
    cursor = reads.cursors.get(reviews_cursor_key(name))
    start = window_start(cursor) if cursor is not None else comments_from
    if start is None:
        return items.listing.cursor or None  # first sight: from now on
    warn = intake.ports.warn
    page = reads.github.review_comments_since(name, iso(start))
    comments: list[ReviewComment] = parsed(
        page.entries,
        lambda data: review_comment_from_json(data, repository=round_.repository),
        what=f"an inline comment of {name}",
        warn=warn,
    )
    reviews: list[Review] = []
    for ref in changed:
        listing = reads.github.reviews(name, ref.number)
        reviews += parsed(
            listing.entries,
            lambda data, pr=ref: review_from_json(data, pull_request=pr),
            what=f"a review of {ref.ref}",
            warn=warn,
        )
    heads = thread_heads(name, comments, round_.repository, reads, warn)
    round_.reviews(reviews, comments, read_from=start, thread_heads=heads)
    stamps = [cursor_stamp(c.created_at) for c in comments]
    newest = max((s for s in stamps if s is not None), default=None)
    return max(filter(None, (newest, cursor, items.listing.cursor)), default=None)


def thread_heads(
    name: str,
    comments: list[ReviewComment],
    repository: WorkItemRef,
    reads: ReaderPorts,
    warn: Callable[[str], None],
) -> dict[int, ReviewComment]:
    """The first comment of each thread a reply answers that this page does not hold."""
    held = {c.id for c in comments}
    wanted = sorted(
        {c.in_reply_to for c in comments if c.in_reply_to and c.in_reply_to not in held}
    )
    heads: dict[int, ReviewComment] = {}
    for comment_id in wanted:
        try:
            data = reads.github.review_comment(name, comment_id)
            heads[comment_id] = review_comment_from_json(data, repository=repository)
        except (TheLoopError, ValueError) as error:
            warn(f"{name}: the first comment of thread {comment_id} is not read: {error}")
    return heads
