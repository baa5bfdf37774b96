"""What the poll reader is given: its settings, GitHub's reads, and its own memory.

The reader asks GitHub what changed and feeds the intake; GitHub reaches it only
through :class:`GitHubReads`, and what it keeps between cycles (each repository's
comment cursor and its listing) through :class:`Cursors` and :class:`WatchCache`.
An adapter factory builds them. Every collaborator raises
:class:`~the_loop.errors.TheLoopError` with a sentence on failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from the_loop.intake.ports import IntakeSettings, Json
from the_loop.polling.ci_ports import CheckReads, HeadsCache, MemoryHeads
from the_loop.polling.watch_cache import RepositoryListing
from the_loop.ref import WorkItemRef


@dataclass(frozen=True)
class PollSettings:
    """``polling.repositories`` and what the intake decides by, read once per cycle."""

    repositories: tuple[str, ...]
    intake: IntakeSettings = field(default_factory=IntakeSettings)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.intake.labels


#: First sight of a repository (no comment cursor) reads at most this many pages of its
#: newest comments: a window, never its whole history.
FIRST_SIGHT_PAGES = 10


@dataclass(frozen=True)
class ListingPage:
    """The entries of a listing in order, whether every page was 304, whether the
    entries of every page are known (a 304 page whose body was not kept is not), and
    whether the listing went on past the pages read (``truncated``)."""

    entries: Sequence[Json]
    not_modified: bool
    complete: bool = True
    truncated: bool = False


#: The same shape serves every listing: comments, open items, changed items.
CommentsPage = ListingPage


class GitHubReads(Protocol):
    """The reads the poll cycle makes on GitHub, and whether the rate is below its reserve."""

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage: ...

    def changed_items(self, repository: str, since: str) -> ListingPage:
        """Every item updated at or after ``since``, oldest first; past a cap, the oldest."""
        ...

    def comments_since(self, repository: str, since: str | None) -> ListingPage:
        """The comments updated at or after ``since``, oldest first; past a cap, the
        oldest. With no ``since``, the newest :data:`FIRST_SIGHT_PAGES` pages only."""
        ...

    def pull_requests(self, repository: str) -> ListingPage:
        """The open pull requests, the most recently updated first: one page, read
        conditionally (an unchanged listing is a 304 with no entries)."""
        ...

    def review_comments_since(self, repository: str, since: str) -> ListingPage:
        """Every inline review comment of the repository updated at or after ``since``,
        oldest first; past a cap, the oldest."""
        ...

    def reviews(self, repository: str, number: int, *, fresh: bool = False) -> ListingPage:
        """The reviews of pull request ``number``, oldest first, read conditionally;
        ``fresh``: every page in full (a first sight must see them all)."""
        ...

    def review_comment(self, repository: str, comment_id: int) -> Json:
        """One inline review comment (a thread's first, for a reply)."""
        ...

    def review(self, repository: str, number: int, review_id: int) -> Json:
        """One review of pull request ``number``, read in full (a push names it)."""
        ...

    def review_comments_of(self, repository: str, number: int, review_id: int) -> ListingPage:
        """The inline comments one review was submitted with, read in full."""
        ...

    def item(self, ref: WorkItemRef) -> Json: ...

    def moved_to(self, repository: str) -> str:
        """The name GitHub gives ``repository`` now, when its reads were redirected for
        good to a repository of another name (renamed, or moved); ``""`` otherwise."""
        ...

    def rate_low(self) -> bool: ...


def renamed_key(name: str) -> str:
    """The key, among the comment cursors, of the name GitHub gives repository ``name``
    now (``""``: its own): said once, and every request names the repository by it."""
    return f"{name}#renamed"


class Cursors(Protocol):
    """The machine-local comment cursor of each repository, and the ``updated_at`` each
    watched pull request's reviews were last read at (``""``: read, time unknown)."""

    def get(self, repository: str) -> str | None: ...

    def set(self, repository: str, cursor: str) -> None: ...

    def reviews_read(self, repository: str) -> dict[int, str]: ...

    def set_reviews_read(self, repository: str, read: Mapping[int, str]) -> None:
        """Replace the repository's marks with ``read`` (a pull request left out is
        forgotten: seen again, it is a first sight)."""
        ...


class WatchCache(Protocol):
    """The machine-local listing of each repository's items, kept between cycles."""

    def get(self, repository: str) -> RepositoryListing | None: ...

    def put(self, repository: str, listing: RepositoryListing) -> None: ...


class MemoryWatchCache:
    """A listing kept for the life of the process."""

    def __init__(self) -> None:
        self.listings: dict[str, RepositoryListing] = {}

    def get(self, repository: str) -> RepositoryListing | None:
        return self.listings.get(repository)

    def put(self, repository: str, listing: RepositoryListing) -> None:
        self.listings[repository] = listing


@dataclass(frozen=True)
class ReaderPorts:
    """The poll reader's own collaborators (the intake's come with the intake)."""

    github: GitHubReads
    cursors: Cursors
    watch_cache: WatchCache = field(default_factory=MemoryWatchCache)
    #: A pull request's CI (None: this reader reads none) and the heads it watches.
    checks: CheckReads | None = None
    heads: HeadsCache = field(default_factory=MemoryHeads)
