"""The poll reader's part of a pull request's reviews: what it asks GitHub, and when.

Each pull request a live session takes reviews for carries a mark: the ``updated_at``
its reviews were last read at (``reviewsRead`` in ``local/poll-cursors.json``). One
without a mark is a first sight: its reviews are read once and every one is history,
whatever its age. After that, only a cycle whose read of what changed shows the pull
request with another ``updated_at`` than its mark (submitting a review, or a lone inline
comment, bumps it) reads it again: one conditional ``GET
/repos/{o}/{r}/pulls/comments?since=…`` for the repository's inline comments, then
``GET /repos/{o}/{r}/pulls/{n}/reviews`` of each such pull request, and a thread's first
comment for a reply whose thread began before the window. A pull request met again in
the listing's overlap, unchanged, is not read again; an idle cycle asks nothing. The
window has a cursor of its own (``<owner>/<repo>#reviews`` among the comment cursors);
with none, it starts where the comments' window does, and with neither, every pull
request read is a first sight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from the_loop.errors import TheLoopError
from the_loop.intake.intake import Intake, Round, same_repository
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
    """Feed the round the reviews of the watched pull requests seen for the first time
    or whose ``updated_at`` moved; the reviews cursor to keep (None: nothing to move)."""
    pulls = watched_pulls(round_, items)
    marks = reads.cursors.reviews_read(name)
    first = [pr for pr in pulls if pr.number not in marks]
    moved = [pr for pr in pulls if pr in items.changed and moved_since(pr, marks, items)]
    kept = {pr.number: marks[pr.number] for pr in pulls if pr.number in marks}
    if not first and not moved:
        if kept != marks:
            reads.cursors.set_reviews_read(name, kept)  # unlinked: forgotten
        return None
    cursor = reads.cursors.get(reviews_cursor_key(name))
    start = window_start(cursor) if cursor is not None else comments_from
    if start is None:
        first, moved = first + moved, []  # no window yet: all is history
    comments = _inline_comments(name, round_, reads, intake, start) if moved else []
    reviews = _reviews(name, first, items, reads, intake, kept, fresh=True)
    reviews += _reviews(name, moved, items, reads, intake, kept, fresh=False)
    heads = thread_heads(name, comments, round_.repository, reads, intake.ports.warn)
    # No bound by age: what the marks' first sights baselined is history, and a review
    # read late (GitHub showed it after its pull request's bump) is still new.
    round_.reviews(reviews, comments, thread_heads=heads, first_sight=first)
    if not intake.stopping():
        reads.cursors.set_reviews_read(name, kept)
    if start is None:
        return items.listing.cursor or None  # first sight: from now on
    stamps = [cursor_stamp(c.created_at) for c in comments]
    newest = max((s for s in stamps if s is not None), default=None)
    return max(filter(None, (newest, cursor, items.listing.cursor)), default=None)


def watched_pulls(round_: Round, items: PolledItems) -> list[WorkItemRef]:
    """The pull requests of this repository a live session here takes reviews for: each
    linked one, and each work item known to be a pull request."""
    linked = {pr for session in round_.sessions.values() for pr in session.pull_requests}
    found = [
        ref
        for ref in pull_request_owners(round_)
        if same_repository(ref, round_.repository) and (ref in linked or _is_pull(ref, items))
    ]
    return sorted(found, key=lambda ref: ref.number)


def _is_pull(ref: WorkItemRef, items: PolledItems) -> bool:
    """Known to be a pull request: by this cycle's listing, or the kept one."""
    issue = items.changed.get(ref)
    if issue is not None:
        return issue.is_pull
    kept = items.listing.items.get(ref.number)
    return kept is not None and kept.is_pull_request


def moved_since(pr: WorkItemRef, marks: dict[int, str], items: PolledItems) -> bool:
    """Whether the listing shows ``pr`` with another ``updated_at`` than its reviews were
    read at (one met again in the overlap, unchanged, has not moved)."""
    return pr.number in marks and items.updated_at.get(pr, "") != marks[pr.number]


def _inline_comments(
    name: str, round_: Round, reads: ReaderPorts, intake: Intake, start: datetime | None
) -> list[ReviewComment]:
    """The repository's inline comments of the window (none without one)."""
    if start is None:
        return []
    page = reads.github.review_comments_since(name, iso(start))
    return parsed(
        page.entries,
        lambda data: review_comment_from_json(data, repository=round_.repository),
        what=f"an inline comment of {name}",
        warn=intake.ports.warn,
    )


def _reviews(
    name: str,
    pulls: Sequence[WorkItemRef],
    items: PolledItems,
    reads: ReaderPorts,
    intake: Intake,
    marks: dict[int, str],
    *,
    fresh: bool,
) -> list[Review]:
    """The reviews of ``pulls`` (``fresh``: read in full, not conditionally, as a first
    sight must see them all), each marked in ``marks`` as read at its ``updated_at``
    (``""`` when this cycle's listing did not show it). A pull request GitHub no longer
    has (404, 410) is said and marked, not asked again until it moves."""
    warn, found = intake.ports.warn, list[Review]()
    for pr in pulls:
        try:
            listing = reads.github.reviews(name, pr.number, fresh=fresh)
        except TheLoopError as error:
            if getattr(error, "status", None) not in (404, 410):  # the reads' refusal says
                raise
            warn(f"{name}: the reviews of {pr.ref} are not read: {error}")
            listing = None
        marks[pr.number] = items.updated_at.get(pr, "")
        found += parsed(
            listing.entries if listing is not None else (),
            lambda data, ref=pr: review_from_json(data, pull_request=ref),
            what=f"a review of {pr.ref}",
            warn=warn,
        )
    return found


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
