"""One poll cycle: the reader that asks GitHub what changed and feeds the intake.

Per repository: a round of the intake over its live sessions; the kept listing
brought up to date (what changed since its cursor; a repository GitHub renamed is asked
by its new name once a redirect taught it, and said once); the comments since the comment
cursor (with none, a window of the newest only: first sight reads no history), each
fed to the round in order; the watched pull requests' CI (:mod:`checks`: read after the
listing, handed to the round after the comments); then the round delivers what waits
and applies closures, and the cursor moves. A repository that fails is reported and the
others still run. An idle cycle (every read a 304) writes nothing but the heads' turn
in ``local/poll-heads.json``.
"""

from __future__ import annotations

from collections.abc import Sequence

from the_loop.errors import TheLoopError
from the_loop.intake.events import comments_from_json
from the_loop.intake.intake import Intake, Round
from the_loop.intake.ports import CycleCounts, Json
from the_loop.intake.pulls import pulls_from_json
from the_loop.polling.checks import feed_checks, note_heads, read_checks
from the_loop.polling.listing import PolledItems, cursor_stamp, iso, read_listing, window_start
from the_loop.polling.reads import PollSettings, ReaderPorts, renamed_key
from the_loop.polling.review_reads import read_reviews, reviews_cursor_key
from the_loop.ref import WorkItemRef


def run_cycle(settings: PollSettings, reads: ReaderPorts, intake: Intake) -> CycleCounts:
    """Run one cycle; a repository that fails is named in ``failed``, the others still run."""
    counts = intake.counts
    for name in settings.repositories:
        if intake.stopping():
            break
        try:
            _poll_repository(name, settings, reads, intake)
        except TheLoopError as error:
            counts.failed.append(f"{name}: {error}")
    return counts


def _poll_repository(name: str, settings: PollSettings, reads: ReaderPorts, intake: Intake) -> None:
    repository = WorkItemRef.parse(f"github:{name}#1")
    round_ = intake.round(repository)
    ports = intake.ports
    items = read_listing(
        name,
        repository,
        reads.watch_cache.get(name),
        keep=round_.keep,
        labels=settings.labels,
        github=reads.github,
        now=ports.clock(),
        warn=ports.warn,
    )
    _say_renamed(name, reads, intake)
    _link_pulls(name, round_, items, reads, intake)
    checks = read_checks(name, round_, items, reads, intake)
    cursor = reads.cursors.get(name)
    read_from = None if cursor is None else window_start(cursor)  # no time: no cursor
    round_.watch(listed=items.listing.labelled(repository), knowledge=items, read_from=read_from)
    page = reads.github.comments_since(name, None if read_from is None else iso(read_from))
    if page.truncated and read_from is not None:
        ports.warn(f"{name}: more new comments than one cycle reads: read the oldest first")
    if reads.github.rate_low():
        ports.emit("poll.rate_limited", "warning", repository=name, step="comments")
        intake.counts.deferred.append(name)
        return  # below the reserve: only the reads; the cursor stays for the next cycle
    newest = cursor
    if not page.not_modified:
        newest = _feed_comments(page.entries, cursor, round_, intake)
        if newest is None and not intake.counts.stopped and items.listing.cursor:
            # No comment at all yet: start from the listing's GitHub time, so the first
            # comment is read as new, not as history at first sight.
            newest = items.listing.cursor
    reviewed = None
    if not intake.stopping():
        reviewed = read_reviews(name, round_, items, reads, intake, comments_from=read_from)
    round_.claims()  # what a crash, or a claim not shown yet, left pending
    feed_checks(round_, reads, checks)  # after the comments: a stop they ran records only
    _deliver_and_close(name, round_, items, reads, intake)
    if newest is not None and newest != cursor:
        reads.cursors.set(name, newest)
    if reviewed is not None and not intake.counts.stopped:
        reads.cursors.set(reviews_cursor_key(name), reviewed)


def _say_renamed(name: str, reads: ReaderPorts, intake: Intake) -> None:
    """Once for each new name (kept among the cursors, so every later client asks by it
    from the start): GitHub redirects ``name``'s reads to a repository of another name,
    polled by that name under the config's. A kept name GitHub no longer gives is
    forgotten."""
    renamed, kept = reads.github.moved_to(name), reads.cursors.get(renamed_key(name))
    if not renamed and kept:
        reads.cursors.set(renamed_key(name), "")  # GitHub gives it the config's name again
    if not renamed or kept == renamed:
        return
    intake.ports.warn(
        f"{name} is {renamed} on GitHub now (renamed or moved): polled as {renamed} from "
        f"now on, its sessions and records kept under {name}; polling.repositories still "
        f"names {name}"
    )
    intake.ports.emit("poll.repository_renamed", "warning", repository=name, renamed_to=renamed)
    reads.cursors.set(renamed_key(name), renamed)


def _link_pulls(
    name: str, round_: Round, items: PolledItems, reads: ReaderPorts, intake: Intake
) -> None:
    """The open pull requests, read only in a cycle that saw one change (opened, pushed
    to, edited) while a session here could own it: an idle cycle asks nothing."""
    if not round_.sessions or intake.ports.link is None:
        return
    if not any(issue.is_pull and issue.is_open for issue in items.changed.values()):
        return
    page = reads.github.pull_requests(name)
    if not page.not_modified:
        found = pulls_from_json(page.entries, repository=round_.repository, warn=intake.ports.warn)
        linked = {pr.number for pr in round_.pulls(found)}
        note_heads(reads, round_, found)
        for data in page.entries:
            if data.get("number") in linked:
                items.remember(data)  # kept from now on: its state is known, not asked


def _feed_comments(
    entries: Sequence[Json], cursor: str | None, round_: Round, intake: Intake
) -> str | None:
    """Each new comment in order, until a stop; the newest ``updated_at`` fed."""
    newest = cursor
    found = comments_from_json(entries, repository=round_.repository, warn=intake.ports.warn)
    round_.read_ahead(found)
    for comment in found:
        if intake.stopping():
            break  # the cursor stays short of every comment not handled
        round_.comment(comment)
        intake.ports.checkpoint(f"after-comment-{comment.id}")
        stamp = cursor_stamp(comment.updated_at)
        if stamp is not None and (newest is None or stamp > newest):
            newest = stamp
    return newest


def _deliver_and_close(
    name: str, round_: Round, items: PolledItems, reads: ReaderPorts, intake: Intake
) -> None:
    """Deliver what waits, then the closures; the kept listing is saved only once every
    closure ran (else its changes are read again)."""
    round_.deliver()
    if not intake.stopping():
        round_.closures()
    if not intake.counts.stopped:
        items.save(reads.watch_cache, name, round_.keep)
