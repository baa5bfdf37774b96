"""The poll reader's and the intake's GitHub over the REST client.

:class:`ClientReads` is both :class:`~the_loop.polling.reads.GitHubReads` (the
listings a cycle reads) and :class:`~the_loop.intake.ports.GitHubPort` (a thread, an
item, a notice), and remembers what the daemon's pacing needs: the last rate limit,
``x-poll-interval``, and every refusal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from the_loop.github.backoff import RatePolicy
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError, Listing, RateLimit
from the_loop.intake.events import Issue, IssueComment, comments_from_json, issue_from_json
from the_loop.intake.ports import Json
from the_loop.polling.reads import CommentsPage, ListingPage
from the_loop.ref import WorkItemRef


@dataclass
class ClientReads:
    """The reads and the one write over the REST client.

    Remembers the last rate limit and ``x-poll-interval`` it saw, and every refusal
    (the daemon's back-off is computed from them).
    """

    client: GitHubClient
    policy: RatePolicy = field(default_factory=RatePolicy)
    remaining: int | None = None
    rate: RateLimit | None = None
    poll_interval: int | None = None
    refusals: list[GitHubHTTPError] = field(default_factory=list[GitHubHTTPError])

    def _listing(
        self, path: str, params: dict[str, str | int], *, keep: bool, conditional: bool = True
    ) -> Listing:
        try:
            listing = self.client.get_all_pages(
                path, params, keep_bodies=keep, conditional=conditional
            )
        except GitHubHTTPError as error:
            self.refusals.append(error)
            raise
        self._rate(listing.rate)
        if listing.poll_interval is not None:
            self.poll_interval = max(self.poll_interval or 0, listing.poll_interval)
        return listing

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage:
        """Every open item carrying ``labels``; ``fresh`` reads every page in full."""
        params: dict[str, str | int] = {"state": "open", "per_page": 100}
        if labels:
            params["labels"] = ",".join(labels)
        path = f"/repos/{repository}/issues"
        listing = self._listing(path, params, keep=False, conditional=not fresh)
        return _page(listing)

    def changed_items(self, repository: str, since: str) -> ListingPage:
        """Every issue and PR, open or closed, updated at or after ``since``, oldest first."""
        params: dict[str, str | int] = {
            "state": "all",
            "since": since,
            "sort": "updated",
            "direction": "asc",
            "per_page": 100,
        }
        return _page(self._listing(f"/repos/{repository}/issues", params, keep=False))

    def comments_since(self, repository: str, since: str | None) -> CommentsPage:
        params: dict[str, str | int] = {"sort": "updated", "direction": "asc", "per_page": 100}
        if since is not None:
            params["since"] = since
        listing = self._listing(f"/repos/{repository}/issues/comments", params, keep=False)
        return CommentsPage(cast(list[Json], listing.items), listing.not_modified)

    def thread(self, ref: WorkItemRef) -> Sequence[Json]:
        path = f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}/comments"
        listing = self._listing(path, {"per_page": 100}, keep=True)
        return cast(list[Json], listing.items)

    def item(self, ref: WorkItemRef) -> Json:
        try:
            answer = self.client.get(
                f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}", keep_body=True
            )
        except GitHubHTTPError as error:
            self.refusals.append(error)
            raise
        self._rate(answer.rate)
        data = answer.json()
        return cast(Json, data) if isinstance(data, dict) else {}

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        path = f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}/comments"
        data = self.client.post_json(path, {"body": body}).json()
        posted = cast(dict[str, Any], data).get("id") if isinstance(data, dict) else None
        return posted if isinstance(posted, int) else None

    def rate_low(self) -> bool:
        return not self.policy.may_run("item", self.rate, time.time())

    def _rate(self, rate: RateLimit | None) -> None:
        if rate is not None:
            self.rate, self.remaining = rate, rate.remaining


def _page(listing: Listing) -> ListingPage:
    return CommentsPage(cast(list[Json], listing.items), listing.not_modified, listing.complete)


@dataclass(frozen=True)
class IntakeGitHub:
    """The intake's :class:`~the_loop.intake.ports.GitHubPort` over the same reads: a
    thread and an item as values (an entry without what the intake needs is skipped
    with a warning), and the notice it posts."""

    reads: ClientReads
    warn: Callable[[str], None]

    def thread(self, ref: WorkItemRef) -> list[IssueComment]:
        return comments_from_json(self.reads.thread(ref), repository=ref, warn=self.warn)

    def item(self, ref: WorkItemRef) -> Issue:
        return issue_from_json(self.reads.item(ref), ref)

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        return self.reads.post_comment(ref, body)
