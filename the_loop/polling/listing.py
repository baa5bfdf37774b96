"""What the poll reader knows of one repository's items: the kept listing, as read and
as this cycle updates it, and the items GitHub returned this cycle.

:func:`read_listing` brings the kept listing up to date with one conditional read of
what changed since its cursor (no labels filter), or reads every open labelled item
when there is no usable listing yet (first cycle, other labels, no cursor, a day old).
:class:`PolledItems` is the intake's :class:`~the_loop.intake.ports.ItemKnowledge`
over it: a look-up is one GET, kept in the listing, so it is asked once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from the_loop.errors import TheLoopError
from the_loop.intake.events import Issue, issue_from_json, parse_timestamp
from the_loop.intake.intake import same_repository
from the_loop.intake.ports import Json
from the_loop.polling.reads import GitHubReads, WatchCache
from the_loop.polling.watch_cache import (
    Change,
    RepositoryListing,
    apply_changes,
    change_from_json,
    labels_key,
    pruned,
    rebuilt,
    with_item,
)
from the_loop.ref import WorkItemRef

#: How far before a cursor each read starts: what GitHub stamps late still arrives.
CURSOR_OVERLAP = timedelta(seconds=120)

Facts = dict[WorkItemRef, Issue]


@dataclass
class PolledItems:
    """One repository's items as this cycle knows them (the intake's ``ItemKnowledge``)."""

    repository: WorkItemRef
    github: GitHubReads
    listing: RepositoryListing
    stored: RepositoryListing | None
    changed: Facts = field(default_factory=dict[WorkItemRef, Issue])
    #: The ``updated_at`` GitHub gave each item of ``changed``.
    updated_at: dict[WorkItemRef, str] = field(default_factory=dict[WorkItemRef, str])

    def known_open(self, ref: WorkItemRef) -> bool | None:
        """Open by what GitHub listed this cycle or the listing kept; None: unknown."""
        issue = self.changed.get(ref)
        if issue is not None:
            return issue.is_open
        if not same_repository(ref, self.repository):
            return None  # a repository this cycle does not list: only a GET knows
        item = self.listing.items.get(ref.number)
        return None if item is None else item.is_open

    def look_up(self, ref: WorkItemRef) -> Issue:
        """One GET of the item; what it says is kept in the listing (so it is asked once).

        An item GitHub no longer has (its GET refused 404 or 410: deleted, or transferred
        out of reach; 301: redirected to the issue it was transferred to) is an ``Issue``
        that is ``gone``, saying why; any other refusal raises.
        """
        try:
            data = self.github.item(ref)
        except TheLoopError as error:
            # The reads' refusal carries GitHub's HTTP status; only these say "gone".
            if getattr(error, "status", None) not in (301, 404, 410):
                raise
            return Issue(ref, is_open=False, gone=str(error))
        if same_repository(ref, self.repository):
            try:
                change = change_from_json(data, repository=self.repository)
            except ValueError:
                return issue_from_json(data, ref)
            self.listing = with_item(self.listing, change)
        return issue_from_json(data, ref)

    def remember(self, data: Json) -> None:
        """Keep the item ``data`` describes in the listing (one a round just began to
        keep, such as a pull request it linked); an entry it cannot read is left out."""
        try:
            self.listing = with_item(
                self.listing, change_from_json(data, repository=self.repository)
            )
        except ValueError:
            return

    def save(self, cache: WatchCache, name: str, keep: frozenset[int]) -> None:
        """Write the listing (and so its cursor) only when this cycle changed it."""
        if self.listing is not self.stored:
            cache.put(name, pruned(self.listing, keep=keep))


def read_listing(
    name: str,
    repository: WorkItemRef,
    stored: RepositoryListing | None,
    *,
    keep: frozenset[int],
    labels: Sequence[str],
    github: GitHubReads,
    now: float,
    warn: Callable[[str], None],
) -> PolledItems:
    """The listing as this cycle leaves it, and the items GitHub returned (a cursor that
    is no time is no cursor: the listing is read again in full)."""
    start = None if stored is None else window_start(stored.cursor)
    if stored is None or start is None or stored.needs_rebuild(labels, now):
        listing, changes, facts = _rebuild(name, repository, stored, labels, now, github, warn)
    else:
        page = github.changed_items(name, iso(start))
        if page.truncated:
            warn(f"{name}: more items changed than one cycle reads: read the oldest first")
        changes, facts = _changes(page.entries, repository, warn)
        listing = apply_changes(stored, changes, keep=keep)
    stamps = {repository.with_number(c.number): c.updated_at for c in changes}
    return PolledItems(repository, github, listing, stored, facts, stamps)


def _rebuild(
    name: str,
    repository: WorkItemRef,
    stored: RepositoryListing | None,
    labels: Sequence[str],
    now: float,
    github: GitHubReads,
    warn: Callable[[str], None],
) -> tuple[RepositoryListing, list[Change], Facts]:
    """Every open item carrying the labels; a 304 keeps the listing built from the same read."""
    page = github.open_items(name, labels)
    if page.not_modified and stored is not None and stored.labels == labels_key(labels):
        return (replace(stored, built_at=now) if stored.cursor else stored), [], {}
    if not page.complete:  # a 304 whose entries nobody kept: read it again in full
        page = github.open_items(name, labels, fresh=True)
    changes, facts = _changes(page.entries, repository, warn)
    return rebuilt(changes, labels=labels, now=now), changes, facts


def _changes(
    entries: Sequence[Json], repository: WorkItemRef, warn: Callable[[str], None]
) -> tuple[list[Change], Facts]:
    """The listing's items as changes (in GitHub's order), and each one as an ``Issue``."""
    changes: list[Change] = []
    facts: Facts = {}
    for data in entries:
        try:
            change = change_from_json(data, repository=repository)
            if window_start(change.updated_at) is None:
                raise ValueError(f"item {change.number} has no readable updated_at")
        except ValueError as error:
            warn(f"{repository.owner}/{repository.repo}: skipping an item GitHub listed: {error}")
            continue
        changes.append(change)
        ref = repository.with_number(change.number)
        facts[ref] = issue_from_json(data, ref)
    return changes, facts


def window_start(stamp: str) -> datetime | None:
    """Where a read after ``stamp`` (GitHub's ``updated_at``) starts: the overlap before
    it. None for a stamp that is no time GitHub writes (not a time, before 1970)."""
    try:
        start = (parse_timestamp(stamp) - CURSOR_OVERLAP).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return start if start.year >= _FIRST_YEAR else None


def cursor_stamp(moment: datetime) -> str | None:
    """``moment`` as a cursor (GitHub's shape, in UTC); None when no read could start
    from it (see :func:`window_start`)."""
    try:
        stamp = iso(moment)
    except (ValueError, OverflowError):
        return None
    return stamp if window_start(stamp) is not None else None


_FIRST_YEAR = 1970


def iso(moment: datetime) -> str:
    """GitHub's timestamp shape, in UTC: ``2026-12-01T09:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
