"""What one poll cycle is given: its settings, its collaborators, and what it reports.

The cycle is domain code: GitHub, tmux and the dispatcher reach it only through the
callables of :class:`CyclePorts`, which the ``poll`` command builds. Every
collaborator raises :class:`~the_loop.errors.TheLoopError` with a sentence on failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from the_loop.polling.comments import CommentPolicy, SessionState
from the_loop.polling.delivery import Delivery
from the_loop.polling.people import AuthorizedUsers
from the_loop.polling.watch_cache import RepositoryListing
from the_loop.ref import WorkItemRef

Json = Mapping[str, Any]


@dataclass(frozen=True)
class PollSettings:
    """``polling.*`` and the routing keys the cycle needs, read once per cycle."""

    repositories: tuple[str, ...]
    labels: tuple[str, ...] = ()
    max_retries: int = 3
    max_deliveries_per_hour: int = 30
    policy: CommentPolicy = field(default_factory=lambda: CommentPolicy(AuthorizedUsers.of(())))
    prompt_template: str = ""


@dataclass(frozen=True)
class CommentsPage:
    """The entries of a listing in order, whether every page was 304, and whether the
    entries of every page are known (a 304 page whose body was not kept is not)."""

    entries: Sequence[Json]
    not_modified: bool
    complete: bool = True


#: The same shape serves every listing: comments, open items, changed items.
ListingPage = CommentsPage


class GitHubReads(Protocol):
    """The reads and the one write the cycle makes on GitHub."""

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage: ...

    def changed_items(self, repository: str, since: str) -> ListingPage: ...

    def comments_since(self, repository: str, since: str | None) -> CommentsPage: ...

    def thread(self, ref: WorkItemRef) -> Sequence[Json]: ...

    def item(self, ref: WorkItemRef) -> Json: ...

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None: ...

    def rate_low(self) -> bool: ...


@dataclass(frozen=True)
class LiveSession:
    """A live session as the cycle sees it: its state and the tmux target of its pane."""

    ref: WorkItemRef
    state: SessionState
    tmux_target: str = ""
    pull_requests: tuple[WorkItemRef, ...] = ()


class Cursors(Protocol):
    """The machine-local comment cursor of each repository, and the ids the-loop posted."""

    def get(self, repository: str) -> str | None: ...

    def set(self, repository: str, cursor: str) -> None: ...

    def posted(self) -> frozenset[int]: ...

    def remember_posted(self, comment_id: int) -> None: ...


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
class ItemFacts:
    """What a control action needs of the ticket: its title, URL and body."""

    ref: WorkItemRef
    title: str = ""
    url: str = ""
    body: str = ""


@dataclass(frozen=True)
class CyclePorts:
    """Every collaborator of one cycle.

    ``control(facts, verb, actor)`` runs a verb through the sessions' own code and
    returns its outcome word; ``close(ref, cleanup)`` takes the dispatcher's one close
    path; ``deliver(target, delivery)`` pastes and marks in one tmux command list;
    ``pane_mark(target)`` reads the mark back; ``checkpoint(step)`` is a no-op hook
    the crash test uses to stop the process at each step of a delivery;
    ``should_stop()`` is asked between items (comments, deliveries, closures,
    repositories);
    ``watch_cache`` keeps each repository's listing between cycles.
    """

    github: GitHubReads
    cursors: Cursors
    sessions: Callable[[], Sequence[LiveSession]]
    armed: Callable[[], Sequence[WorkItemRef]]
    control: Callable[[ItemFacts, str, str], str]
    close: Callable[[WorkItemRef, bool], None]
    end_endpoint: Callable[[WorkItemRef, WorkItemRef, str], None]
    deliver: Callable[[str, Delivery], None]
    pane_mark: Callable[[str], str | None]
    emit: Callable[..., object]
    clock: Callable[[], float]
    warn: Callable[[str], None] = lambda _message: None
    checkpoint: Callable[[str], None] = lambda _step: None
    should_stop: Callable[[], bool] = lambda: False
    watch_cache: WatchCache = field(default_factory=MemoryWatchCache)


@dataclass
class CycleCounts:
    """The counters of one cycle (the report the command adds requests and rate to)."""

    delivered: int = 0
    commands: int = 0
    settled: int = 0
    held: int = 0
    seen: int = 0
    baselined: int = 0
    closed: int = 0
    failed: list[str] = field(default_factory=list[str])
    #: Repositories whose comments were read but not handled (below the rate reserve):
    #: the caller must not keep this cycle's ETags, or the next read would be a 304.
    deferred: list[str] = field(default_factory=list[str])
    #: A stop was asked for and the cycle ended early, between two items.
    stopped: bool = False

    def stop_requested(self, should_stop: Callable[[], bool]) -> bool:
        """Whether to end the cycle before the next item (and remember that it did)."""
        self.stopped = self.stopped or should_stop()
        return self.stopped

    def to_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "commands": self.commands,
            "settled": self.settled,
            "held": self.held,
            "seen": self.seen,
            "baselined": self.baselined,
            "closed": self.closed,
            "failed": list(self.failed),
            "deferred": list(self.deferred),
            "stopped": self.stopped,
        }
