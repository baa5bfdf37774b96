"""An item GitHub no longer has, as plain values: the reader's look-up turns a 404 or 410
into an ``Issue`` that is gone (any other refusal still raises), and the closure decision
ends what is live for it with its checkouts kept, or records it once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from the_loop.github.replies import GitHubHTTPError
from the_loop.intake.events import Issue
from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.ports import Json
from the_loop.intake.watched import (
    GONE,
    ClosureAction,
    ClosureDecision,
    ItemState,
    KnownState,
    Role,
    decide_closure,
)
from the_loop.polling.listing import PolledItems
from the_loop.polling.reads import ListingPage
from the_loop.polling.watch_cache import RepositoryListing
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
ALICE = AuthorizedUsers.of(["alice"])


class RefusingReads:
    """GitHub's reads, whose GET of an item is refused with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage:
        raise AssertionError("not read")

    def changed_items(self, repository: str, since: str) -> ListingPage:
        raise AssertionError("not read")

    def comments_since(self, repository: str, since: str | None) -> ListingPage:
        raise AssertionError("not read")

    def pull_requests(self, repository: str) -> ListingPage:
        raise AssertionError("not read")

    def review_comments_since(self, repository: str, since: str) -> ListingPage:
        raise AssertionError("not read")

    def reviews(self, repository: str, number: int, *, fresh: bool = False) -> ListingPage:
        raise AssertionError("not read")

    def moved_to(self, repository: str) -> str:
        return ""

    def review_comment(self, repository: str, comment_id: int) -> Json:
        raise AssertionError("not read")

    def review(self, repository: str, number: int, review_id: int) -> Json:
        raise AssertionError("not read")

    def review_comments_of(self, repository: str, number: int, review_id: int) -> ListingPage:
        raise AssertionError("not read")

    def item(self, ref: WorkItemRef) -> Json:
        raise self.error

    def rate_low(self) -> bool:
        return False


def looked_up(error: Exception) -> Issue:
    listing = RepositoryListing(labels=())
    return PolledItems(ITEM, RefusingReads(error), listing, listing).look_up(ITEM)


@pytest.mark.parametrize(
    ("status", "said"), [(410, "410 Gone: This issue was deleted"), (404, "404 Not Found")]
)
def test_a_look_up_github_answers_404_or_410_is_an_item_that_is_gone_saying_why(
    status: int, said: str
) -> None:
    error = GitHubHTTPError(f"api.github.com answered {said}", status=status)
    issue = looked_up(error)
    assert (issue.ref, issue.is_open, issue.gone) == (
        ITEM,
        False,
        f"api.github.com answered {said}",
    )


@pytest.mark.parametrize("status", [None, 403, 500, 502])
def test_any_other_refusal_of_a_look_up_still_raises(status: int | None) -> None:
    with pytest.raises(GitHubHTTPError):
        looked_up(GitHubHTTPError("no", status=status))


def test_a_gone_item_with_a_live_session_is_closed_with_its_checkouts_kept() -> None:
    gone = ItemState(False, closed_by="alice", gone="deleted")
    decision = decide_closure(gone, KnownState(Role.WORK_ITEM, live=True), authorized=ALICE)
    assert decision == ClosureDecision(ClosureAction.CLOSE_SESSION, GONE, cleanup=False)


def test_a_gone_linked_pull_request_ends_only_its_endpoint_then_is_recorded_once() -> None:
    gone = ItemState(False, gone="deleted")
    live = KnownState(Role.LINKED_PULL_REQUEST, live=True)
    assert decide_closure(gone, live, authorized=ALICE) == ClosureDecision(
        ClosureAction.END_ENDPOINT, GONE
    )
    unrecorded = KnownState(Role.LINKED_PULL_REQUEST, live=False, recorded_state="closed")
    assert decide_closure(gone, unrecorded, authorized=ALICE).action is ClosureAction.RECORD_STATE
    recorded = KnownState(Role.LINKED_PULL_REQUEST, live=False, recorded_state=GONE)
    assert decide_closure(gone, recorded, authorized=ALICE).action is ClosureAction.NOTHING


def test_an_item_recorded_gone_that_github_shows_open_again_clears_the_state() -> None:
    recorded = KnownState(Role.WORK_ITEM, live=False, recorded_state=GONE)
    decision = decide_closure(ItemState(True), recorded, authorized=ALICE)
    assert decision.action is ClosureAction.CLEAR_CLOSED
