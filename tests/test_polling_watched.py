"""The watched set, and what closing, merging or reopening an item does."""

from __future__ import annotations

import pytest

from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.watched import (
    ClosureAction,
    ClosureDecision,
    ItemState,
    KnownState,
    OpenItem,
    Role,
    WatchReason,
    decide_closure,
    open_item_from_json,
    watched_set,
)
from the_loop.ref import WorkItemRef

REPO = WorkItemRef.parse("github:octo/app#1")
AUTHORIZED = AuthorizedUsers.of(["alice"])


def ref(number: int) -> WorkItemRef:
    return REPO.with_number(number)


def item(number: int, *labels: str, is_open: bool = True) -> OpenItem:
    return OpenItem(ref(number), frozenset(labels), is_open=is_open)


def test_an_open_item_is_watched_only_when_it_carries_every_label() -> None:
    items = [item(1, "the-loop", "bug"), item(2, "the-loop"), item(3, "bug")]
    assert watched_set(items, labels=["the-loop", "bug"]).refs == {ref(1)}
    assert watched_set(items, labels=["the-loop"]).refs == {ref(1), ref(2)}


def test_labels_compare_case_insensitively() -> None:
    assert ref(1) in watched_set([item(1, "The-Loop")], labels=["the-loop"])


def test_no_labels_watch_every_open_item_but_never_a_closed_one() -> None:
    watched = watched_set([item(1), item(2, "x"), item(3, is_open=False)], labels=[])
    assert watched.refs == {ref(1), ref(2)}


def test_live_sessions_linked_pull_requests_and_armed_refs_are_watched_too() -> None:
    watched = watched_set(
        [item(1, "the-loop")],
        labels=["the-loop"],
        live_sessions=[ref(2), ref(1)],
        linked_pull_requests=[ref(3)],
        armed=[ref(4)],
    )
    assert watched.refs == {ref(1), ref(2), ref(3), ref(4)}
    assert watched.reasons[ref(1)] == {WatchReason.LABELLED, WatchReason.LIVE_SESSION}
    assert watched.reasons[ref(3)] == {WatchReason.LINKED_PULL_REQUEST}
    assert watched.reasons[ref(4)] == {WatchReason.ARMED}
    assert ref(5) not in watched


def test_a_listing_entry_becomes_an_open_item_with_its_label_names() -> None:
    data = {
        "number": 7,
        "state": "open",
        "labels": [{"name": "the-loop"}, {"name": 3}, "junk"],
        "pull_request": {"url": "x"},
    }
    assert open_item_from_json(data, repository=REPO) == OpenItem(
        ref(7), frozenset({"the-loop"}), is_pull_request=True, is_open=True
    )
    plain = open_item_from_json({"number": 8, "state": "closed"}, repository=REPO)
    assert (plain.is_pull_request, plain.is_open, plain.labels) == (False, False, frozenset())


@pytest.mark.parametrize("number", [None, 0, "7", True])
def test_a_listing_entry_without_a_positive_number_is_refused(number: object) -> None:
    with pytest.raises(ValueError, match="positive integer number"):
        open_item_from_json({"number": number}, repository=REPO)


OWN_LIVE = KnownState(Role.WORK_ITEM, live=True)
LINKED_LIVE = KnownState(Role.LINKED_PULL_REQUEST, live=True)


def test_a_closed_issue_closes_its_session_with_cleanup_when_an_authorized_login_closed_it() -> (
    None
):
    closed = ItemState(is_open=False, closed_by="Alice")
    assert decide_closure(closed, OWN_LIVE, authorized=AUTHORIZED) == ClosureDecision(
        ClosureAction.CLOSE_SESSION, "closed", cleanup=True
    )


def test_a_stranger_or_an_unknown_closer_closes_the_session_but_cleans_up_nothing() -> None:
    for closer in ("mallory", ""):
        decision = decide_closure(
            ItemState(is_open=False, closed_by=closer), OWN_LIVE, authorized=AUTHORIZED
        )
        assert (decision.action, decision.cleanup) == (ClosureAction.CLOSE_SESSION, False)


def test_a_merged_pull_request_that_is_its_own_work_item_closes_its_session() -> None:
    merged = ItemState(is_open=False, merged=True, closed_by="alice")
    assert decide_closure(merged, OWN_LIVE, authorized=AUTHORIZED) == ClosureDecision(
        ClosureAction.CLOSE_SESSION, "merged", cleanup=True
    )


def test_a_merged_or_closed_linked_pull_request_ends_only_its_endpoint_and_records_why() -> None:
    merged = decide_closure(ItemState(False, merged=True), LINKED_LIVE, authorized=AUTHORIZED)
    closed = decide_closure(ItemState(False), LINKED_LIVE, authorized=AUTHORIZED)
    assert merged == ClosureDecision(ClosureAction.END_ENDPOINT, "merged")
    assert closed == ClosureDecision(ClosureAction.END_ENDPOINT, "closed")


def test_a_closure_with_nothing_live_records_the_state_once_then_does_nothing() -> None:
    first = decide_closure(
        ItemState(False, merged=True),
        KnownState(Role.LINKED_PULL_REQUEST, live=False),
        authorized=AUTHORIZED,
    )
    assert first == ClosureDecision(ClosureAction.RECORD_STATE, "merged")
    again = decide_closure(
        ItemState(False, merged=True),
        KnownState(Role.LINKED_PULL_REQUEST, live=False, recorded_state="merged"),
        authorized=AUTHORIZED,
    )
    assert again.action is ClosureAction.NOTHING


def test_a_reopened_item_clears_its_closed_state_and_an_open_one_changes_nothing() -> None:
    known = KnownState(Role.WORK_ITEM, live=False, recorded_state="closed")
    assert decide_closure(ItemState(True), known, authorized=AUTHORIZED) == ClosureDecision(
        ClosureAction.CLEAR_CLOSED
    )
    assert decide_closure(ItemState(True), OWN_LIVE, authorized=AUTHORIZED).action is (
        ClosureAction.NOTHING
    )
