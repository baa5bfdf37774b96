"""The poll reader's part of a pull request's reviews: what it asks GitHub, and when.

Each pull request a live session takes reviews for carries a mark: the ``updated_at``
its reviews were last read at (``reviewsRead`` in ``local/poll-cursors.json``). One
without a mark is a first sight: its reviews are read once, in full, and each one
submitted at or before the poller's last look at the repository (the newest
``updated_at`` it had read there: its kept listing's cursor, or its reviews cursor) is
history, whatever its age or order; a review submitted after that, while the poller was
not yet watching the pull request (the agent opened it and a review came before the
next cycle; it was linked by hand; the poller was down, or of a release that kept no
marks), goes through the rules. Before any look at all, every review is history.

After that, only a cycle whose read of what changed shows the pull request with
another ``updated_at`` than its mark (submitting a review, or a lone inline comment,
bumps it) reads it again: one conditional ``GET /repos/{o}/{r}/pulls/comments?since=…``
for the repository's inline comments, then ``GET /repos/{o}/{r}/pulls/{n}/reviews`` of
each such pull request, and a thread's first comment for a reply whose thread began
before the window. A read less than :data:`SETTLED_AFTER` after the bump, by GitHub's
clock, owes one more: the next cycle whose listing's overlap shows the pull request
again, unchanged, reads its reviews once more, conditionally (a 304 when nothing came),
since GitHub may show a review a moment after the bump. Otherwise a pull request met
again in the overlap is not read again; an idle cycle asks nothing. The inline comments'
window has a cursor of its own (``<owner>/<repo>#reviews`` among the comment cursors);
with none, it starts where the comments' window does, and with neither, every pull
request read is a first sight and all it has is history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from the_loop.errors import TheLoopError
from the_loop.intake.events import parse_timestamp
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

#: How long after a pull request's ``updated_at`` (by GitHub's clock: the newest
#: ``updated_at`` the cycle's listing returned) a read of its reviews is taken as whole.
#: A read sooner owes one more: GitHub may list the bump a moment before its reviews
#: show the review that made it.
SETTLED_AFTER = timedelta(seconds=10)
#: How a mark that owes that one more read ends (after the ``updated_at`` it was read at).
AGAIN = " again"


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
    """Feed the round the reviews of the watched pull requests seen for the first time,
    whose ``updated_at`` moved, or that owe one more read and are met again unchanged;
    the reviews cursor to keep (None: nothing to move)."""
    pulls = watched_pulls(round_, items)
    marks = reads.cursors.reviews_read(name)
    first = [pr for pr in pulls if pr.number not in marks]
    moved = [pr for pr in pulls if moved_since(pr, marks, items)]
    again = [pr for pr in pulls if owes_again(pr, marks, items)]
    kept = {pr.number: marks[pr.number] for pr in pulls if pr.number in marks}
    if not first and not moved and not again:
        if kept != marks:
            reads.cursors.set_reviews_read(name, kept)  # unlinked: forgotten
        return None
    cursor = reads.cursors.get(reviews_cursor_key(name))
    start = window_start(cursor) if cursor is not None else comments_from
    look = None if start is None else last_look(items, cursor)
    if start is None:
        first, moved, again = first + moved + again, [], []  # no window yet: all is history
    newest = items.listing.cursor  # GitHub's clock, as this cycle's listing shows it
    reviews, _ = _reviews(name, first, items, reads, intake, kept, owe_from=newest, fresh=True)
    found, _ = _reviews(name, moved, items, reads, intake, kept, owe_from=newest, fresh=False)
    reread, anew = _reviews(name, again, items, reads, intake, kept, owe_from=None, fresh=False)
    comments = _inline_comments(name, round_, reads, intake, start) if moved or anew else []
    heads = thread_heads(name, comments, round_.repository, reads, intake.ports.warn)
    # No bound by age once a pull request is marked: what its first sight left as history
    # is settled, and a review read late (GitHub showed it after the bump) is still new.
    bounds = dict.fromkeys(first, look)
    round_.reviews(reviews + found + reread, comments, thread_heads=heads, first_sight=bounds)
    if not intake.stopping():
        reads.cursors.set_reviews_read(name, kept)
    if start is None:
        return items.listing.cursor or None  # first sight: from now on
    stamps = [cursor_stamp(c.created_at) for c in comments]
    latest = max((s for s in stamps if s is not None), default=None)
    return max(filter(None, (latest, cursor, items.listing.cursor)), default=None)


def last_look(items: PolledItems, reviews_cursor: str | None) -> datetime | None:
    """The newest ``updated_at`` the poller had read of the repository before this cycle:
    its kept listing's cursor or its reviews cursor, the later (None: it never looked).
    A review submitted at or before it, on a pull request first seen now, was there when
    the poller last looked and did not watch the pull request: history. Both cursors move
    only with a cycle that ran to its end, and never past what GitHub had stamped."""
    kept = items.stored.cursor if items.stored is not None else ""
    return max(filter(None, map(_moment, (kept, reviews_cursor or ""))), default=None)


def _moment(stamp: str) -> datetime | None:
    try:
        return parse_timestamp(stamp) if stamp else None
    except ValueError:
        return None


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
    listed = items.updated_at.get(pr)
    return pr.number in marks and listed is not None and listed != _read_at(marks[pr.number])


def owes_again(pr: WorkItemRef, marks: dict[int, str], items: PolledItems) -> bool:
    """Whether ``pr``'s reviews were read less than :data:`SETTLED_AFTER` after its bump,
    and the listing's overlap shows it again, unchanged: its one more read is now."""
    mark = marks.get(pr.number, "")
    listed = items.updated_at.get(pr)
    return mark.endswith(AGAIN) and listed is not None and listed == _read_at(mark)


def _read_at(mark: str) -> str:
    """The ``updated_at`` a mark says the reviews were read at."""
    return mark.removesuffix(AGAIN)


def _mark(stamp: str, newest: str | None) -> str:
    """The mark of reviews read when the pull request's ``updated_at`` was ``stamp``: it
    owes one more read when GitHub's newest ``updated_at`` (``newest``) is less than
    :data:`SETTLED_AFTER` after it, or not known (None: this read is the one more)."""
    read_at = _moment(stamp)
    if read_at is None or newest is None:
        return stamp
    now = _moment(newest)
    return stamp + AGAIN if now is None or now - read_at < SETTLED_AFTER else stamp


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
    owe_from: str | None,
    fresh: bool,
) -> tuple[list[Review], bool]:
    """The reviews of ``pulls`` (``fresh``: read in full, not conditionally, as a first
    sight must see them all), and whether any page came back changed (not a 304). Each
    is marked in ``marks`` as read at its ``updated_at`` (``""`` when this cycle's
    listing did not show it), owing one more read when GitHub's newest ``updated_at``
    (``owe_from``; None: none owed) is close behind it. A pull request GitHub no longer
    has (404, 410) is said and marked, not asked again until it moves."""
    warn, found, anew = intake.ports.warn, list[Review](), False
    for pr in pulls:
        try:
            listing = reads.github.reviews(name, pr.number, fresh=fresh)
        except TheLoopError as error:
            if getattr(error, "status", None) not in (404, 410):  # the reads' refusal says
                raise
            warn(f"{name}: the reviews of {pr.ref} are not read: {error}")
            listing = None
        stamp = items.updated_at.get(pr, "")
        marks[pr.number] = _mark(stamp, owe_from) if listing is not None else stamp
        anew = anew or (listing is not None and not listing.not_modified)
        found += parsed(
            listing.entries if listing is not None else (),
            lambda data, ref=pr: review_from_json(data, pull_request=ref),
            what=f"a review of {pr.ref}",
            warn=warn,
        )
    return found, anew


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
