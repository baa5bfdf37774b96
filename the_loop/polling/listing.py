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
from datetime import datetime, timedelta

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
        """One GET of the item; what it says is kept in the listing (so it is asked once)."""
        data = self.github.item(ref)
        if same_repository(ref, self.repository):
            try:
                change = change_from_json(data, repository=self.repository)
            except ValueError:
                return issue_from_json(data, ref)
            self.listing = with_item(self.listing, change)
        return issue_from_json(data, ref)

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
    """The listing as this cycle leaves it, and the items GitHub returned."""
    if stored is None or stored.needs_rebuild(labels, now):
        listing, facts = _rebuild(name, repository, stored, labels, now, github, warn)
    else:
        since = iso(parse_timestamp(stored.cursor) - CURSOR_OVERLAP)
        entries = github.changed_items(name, since).entries
        changes, facts = _changes(entries, repository, warn)
        listing = apply_changes(stored, changes, keep=keep)
    return PolledItems(repository, github, listing, stored, facts)


def _rebuild(
    name: str,
    repository: WorkItemRef,
    stored: RepositoryListing | None,
    labels: Sequence[str],
    now: float,
    github: GitHubReads,
    warn: Callable[[str], None],
) -> tuple[RepositoryListing, Facts]:
    """Every open item carrying the labels; a 304 keeps the listing built from the same read."""
    page = github.open_items(name, labels)
    if page.not_modified and stored is not None and stored.labels == labels_key(labels):
        return (replace(stored, built_at=now) if stored.cursor else stored), {}
    if not page.complete:  # a 304 whose entries nobody kept: read it again in full
        page = github.open_items(name, labels, fresh=True)
    changes, facts = _changes(page.entries, repository, warn)
    return rebuilt(changes, labels=labels, now=now), facts


def _changes(
    entries: Sequence[Json], repository: WorkItemRef, warn: Callable[[str], None]
) -> tuple[list[Change], Facts]:
    """The listing's items as changes (in GitHub's order), and each one as an ``Issue``."""
    changes: list[Change] = []
    facts: Facts = {}
    for data in entries:
        try:
            change = change_from_json(data, repository=repository)
        except ValueError as error:
            warn(f"{repository.owner}/{repository.repo}: skipping an item GitHub listed: {error}")
            continue
        changes.append(change)
        ref = repository.with_number(change.number)
        facts[ref] = issue_from_json(data, ref)
    return changes, facts


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
