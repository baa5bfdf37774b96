"""The kept listing of a repository's items, and how the changed items update it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from the_loop.intake.watched import watched_set
from the_loop.polling.watch_cache import (
    REFRESH_SECONDS,
    CachedItem,
    Change,
    RepositoryListing,
    apply_changes,
    change_from_json,
    pruned,
    rebuilt,
    with_item,
)
from the_loop.ref import WorkItemRef

REPO = WorkItemRef.parse("github:octo/app#1")
LABELS = ("the-loop",)


def change(number: int, at: str, *labels: str, state: str = "open") -> Change:
    data: dict[str, Any] = {
        "number": number,
        "state": state,
        "labels": [{"name": name} for name in labels],
        "updated_at": at,
    }
    return change_from_json(data, repository=REPO)


def listing_of(*changes: Change) -> RepositoryListing:
    return rebuilt(changes, labels=LABELS, now=1000.0)


def test_a_full_read_keeps_the_open_labelled_items_and_the_newest_update_as_cursor() -> None:
    listing = listing_of(
        change(1, "2026-12-01T09:00:00Z", "the-loop"),
        change(2, "2026-12-01T09:05:00Z", "The-Loop", "bug"),
    )
    assert listing.watched == {1, 2}
    assert listing.cursor == "2026-12-01T09:05:00Z"
    assert listing.items[2] == CachedItem(("The-Loop", "bug"))


def test_a_closed_or_unlabelled_item_leaves_and_a_labelled_or_reopened_one_joins() -> None:
    listing = listing_of(change(1, "T1", "the-loop"), change(2, "T1", "the-loop"))
    after = apply_changes(
        listing,
        [
            change(1, "T2", "the-loop", state="closed"),
            change(2, "T3"),
            change(3, "T4", "the-loop"),
        ],
        keep=(),
    )
    assert after.watched == {3} and set(after.items) == {3}
    assert after.cursor == "T4"
    again = apply_changes(after, [change(1, "T5", "the-loop")], keep=())
    assert again.watched == {1, 3}


def test_a_live_sessions_item_stays_known_whatever_its_state() -> None:
    listing = listing_of(change(1, "T1", "the-loop"))
    after = apply_changes(listing, [change(1, "T2", "the-loop", state="closed")], keep={1})
    assert after.watched == frozenset()
    assert after.items[1].is_open is False
    assert pruned(after, keep=()).items == {}


def test_nothing_changed_is_the_same_listing_so_nothing_is_written() -> None:
    listing = listing_of(change(1, "T1", "the-loop"))
    assert apply_changes(listing, [], keep=()) is listing
    assert apply_changes(listing, [change(1, "T1", "the-loop")], keep=()) is listing


def test_a_single_read_of_an_item_is_kept_without_moving_the_cursor() -> None:
    listing = listing_of(change(1, "T1", "the-loop"))
    after = with_item(listing, change(7, "T9", state="closed"))
    assert after.items[7].is_open is False and after.cursor == "T1"
    assert after.watched == {1}


def test_a_listing_survives_its_file_and_a_broken_entry_counts_as_unknown() -> None:
    listing = listing_of(change(1, "T1", "the-loop"), change(2, "T1", "the-loop"))
    document = json.loads(json.dumps(listing.to_dict()))
    document["items"]["2"] = {"labels": "not a list"}
    read = RepositoryListing.from_dict(document)
    assert read.watched == {1, 2} and read.cursor == "T1" and read.built_at == 1000.0
    assert read.items.get(1) == CachedItem(("the-loop",))
    assert read.items.get(2) is None and 2 not in read.items
    assert list(read.items) == [1]


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"labels": [], "cursor": "T1", "builtAt": 1.0, "items": {}},
        {"labels": [], "cursor": "T1", "builtAt": True, "watched": [], "items": {}},
        {"labels": [], "cursor": "T1", "builtAt": 1.0, "watched": ["1"], "items": {}},
    ],
)
def test_a_hand_edited_listing_is_refused(document: object) -> None:
    with pytest.raises(ValueError):
        RepositoryListing.from_dict(document)


def test_a_listing_is_rebuilt_for_other_labels_without_a_cursor_or_after_a_day() -> None:
    listing = listing_of(change(1, "T1", "the-loop"))
    assert not listing.needs_rebuild(["The-Loop"], 1000.0 + 60)
    assert listing.needs_rebuild(["agent"], 1000.0)
    assert listing.needs_rebuild(LABELS, 1000.0 + REFRESH_SECONDS + 1)
    assert listing_of().needs_rebuild(LABELS, 1000.0), "nothing listed yet: no cursor"


def test_the_watched_set_asks_the_listing_one_ref_at_a_time() -> None:
    listing = listing_of(change(1, "T1", "the-loop"), change(2, "T1", "the-loop"))
    live = REPO.with_number(2)
    watched = watched_set((), labels=LABELS, live_sessions=[live], listed=listing.labelled(REPO))
    assert REPO.with_number(1) in watched and live in watched
    assert REPO.with_number(3) not in watched
    assert WorkItemRef.parse("github:octo/other#1") not in watched
    assert watched.refs == {REPO.with_number(1), live}
    assert len(watched.reasons[live]) == 2, "labelled and live"
