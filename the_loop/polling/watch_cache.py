"""The open-items listing kept between cycles, and how GitHub's changed items update it.

Pure: :func:`rebuilt` makes a listing from a full read of the open labelled items,
:func:`apply_changes` folds in the items GitHub says changed since the cursor (read
with no labels filter, so a close and a removed label are seen too). The poll
command keeps the result machine-local; the cycle decides when to rebuild. A kept
listing is read cheaply: the watched numbers are stored as one list, and each item's
entry is parsed only when asked, so an idle cycle does not grow with the listing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, cast

from the_loop.intake.watched import ListedNumbers, open_item_from_json
from the_loop.ref import WorkItemRef

FORMAT_VERSION = 1
#: A listing older than this is read in full again: a page boundary that moved during
#: an earlier read cannot hide an item for longer.
REFRESH_SECONDS = 24 * 3600.0


def labels_key(labels: Iterable[str]) -> tuple[str, ...]:
    """The label filter a listing was built for, in a form that compares equal across orders."""
    return tuple(sorted({label.casefold() for label in labels}))


class CachedItem(NamedTuple):
    """What the listing knows of one item: its labels, whether a PR, whether open."""

    labels: tuple[str, ...] = ()
    is_pull_request: bool = False
    is_open: bool = True

    def watched_for(self, labels: Iterable[str]) -> bool:
        """Open and carrying every one of ``labels`` (case-insensitive)."""
        names = {name.casefold() for name in self.labels}
        return self.is_open and all(label.casefold() in names for label in labels)

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"labels": list(self.labels)}
        if self.is_pull_request:
            document["pr"] = True
        if not self.is_open:
            document["open"] = False
        return document

    @classmethod
    def from_dict(cls, data: object) -> CachedItem:
        """The entry; ``ValueError`` for anything that is not one."""
        if not isinstance(data, dict):
            raise ValueError("an item entry must be an object")
        entry = cast(dict[str, Any], data)
        labels = entry.get("labels", [])
        if not isinstance(labels, list):
            raise ValueError("an item's labels must be a list of strings")
        names = tuple(cast(list[Any], labels))
        if not all(isinstance(name, str) for name in names):
            raise ValueError("an item's labels must be a list of strings")
        return cls(names, entry.get("pr") is True, entry.get("open") is not False)


class StoredItems(Mapping[int, CachedItem]):
    """The item entries of a kept listing, each parsed when first asked; an entry that
    is not one (a hand edit) is as good as absent: the cycle then asks GitHub."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw
        self._parsed: dict[int, CachedItem | None] = {}

    def __getitem__(self, number: int) -> CachedItem:
        if number not in self._parsed:
            try:
                self._parsed[number] = CachedItem.from_dict(self._raw[str(number)])
            except (KeyError, ValueError):
                self._parsed[number] = None
        found = self._parsed[number]
        if found is None:
            raise KeyError(number)
        return found

    def __iter__(self) -> Iterator[int]:
        for key in self._raw:
            if key.isdigit() and int(key) > 0 and int(key) in self:
                yield int(key)

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, int):
            return False
        try:
            self[number]
        except KeyError:
            return False
        return True

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class RepositoryListing:
    """One repository's items: every open one carrying the labels, and the items of live
    sessions and their PRs whatever their state. ``watched``: the numbers of the open
    labelled ones; ``cursor``: the newest ``updated_at`` GitHub returned (``""``: none
    yet); ``built_at``: the clock of the last full read."""

    labels: tuple[str, ...]
    items: Mapping[int, CachedItem] = field(default_factory=dict[int, CachedItem])
    watched: frozenset[int] = frozenset()
    cursor: str = ""
    built_at: float = 0.0

    def labelled(self, repository: WorkItemRef) -> ListedNumbers:
        """The open items carrying every label, as the watched set asks them."""
        return ListedNumbers(repository, self.watched)

    def needs_rebuild(self, labels: Sequence[str], now: float) -> bool:
        """True for another label filter, no cursor yet, or a full read older than a day."""
        stale = now - self.built_at > REFRESH_SECONDS
        return self.labels != labels_key(labels) or not self.cursor or stale

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "cursor": self.cursor,
            "builtAt": self.built_at,
            "watched": sorted(self.watched),
            "items": {str(n): self.items[n].to_dict() for n in sorted(self.items)},
        }

    @classmethod
    def from_dict(cls, data: object) -> RepositoryListing:
        """The listing; ``ValueError`` for anything that is not one (a hand edit)."""
        if not isinstance(data, dict):
            raise ValueError("a repository's listing must be an object")
        entry = cast(dict[str, Any], data)
        labels, cursor, built = entry.get("labels"), entry.get("cursor"), entry.get("builtAt")
        watched, items = entry.get("watched"), entry.get("items")
        if not isinstance(labels, list) or not isinstance(cursor, str):
            raise ValueError("a listing needs its labels and cursor")
        if not isinstance(built, int | float) or isinstance(built, bool):
            raise ValueError("a listing needs the time it was built")
        if not isinstance(watched, list) or not isinstance(items, dict):
            raise ValueError("a listing needs its watched numbers and its items")
        numbers = frozenset(cast(list[Any], watched))
        if not all(type(n) is int and n > 0 for n in numbers):
            raise ValueError("the watched numbers must be positive integers")
        key = labels_key(str(x) for x in cast(list[Any], labels))
        stored = StoredItems(cast(dict[str, Any], items))
        return cls(key, stored, cast(frozenset[int], numbers), cursor, float(built))


@dataclass(frozen=True)
class Change:
    """One item GitHub listed: its number, what the listing keeps of it, its ``updated_at``."""

    number: int
    item: CachedItem
    updated_at: str


def change_from_json(data: Mapping[str, Any], *, repository: WorkItemRef) -> Change:
    """The listing entry ``data``; ``ValueError`` without a number or an ``updated_at``."""
    parsed = open_item_from_json(data, repository=repository)
    updated = data.get("updated_at")
    if not isinstance(updated, str) or not updated:
        raise ValueError(f"item {parsed.ref.number} has no updated_at")
    item = CachedItem(tuple(sorted(parsed.labels)), parsed.is_pull_request, parsed.is_open)
    return Change(parsed.ref.number, item, updated)


def rebuilt(changes: Iterable[Change], *, labels: Sequence[str], now: float) -> RepositoryListing:
    """The listing of a full read of the open items carrying ``labels``."""
    listing = RepositoryListing(labels_key(labels), {}, frozenset(), "", now)
    return apply_changes(listing, changes, keep=())


def apply_changes(
    listing: RepositoryListing, changes: Iterable[Change], *, keep: Collection[int]
) -> RepositoryListing:
    """``listing`` with each changed item in (open, carrying every label) or out; an item
    in ``keep`` (a live session's, a linked PR's) stays whatever its state. The cursor
    becomes the newest ``updated_at`` seen. ``listing`` itself when nothing changed."""
    items: dict[int, CachedItem] | None = None
    watched, cursor = set(listing.watched), listing.cursor
    for change in changes:
        cursor = max(cursor, change.updated_at)
        inside = change.item.watched_for(listing.labels)
        wanted = change.item if inside or change.number in keep else None
        if listing.items.get(change.number) == wanted and (change.number in watched) is inside:
            continue
        items = items if items is not None else dict(listing.items)
        if wanted is None:
            items.pop(change.number, None)
        else:
            items[change.number] = wanted
        (watched.add if inside else watched.discard)(change.number)
    if items is None and cursor == listing.cursor:
        return listing
    return replace(
        listing,
        items=items if items is not None else listing.items,
        watched=frozenset(watched),
        cursor=cursor,
    )


def with_item(listing: RepositoryListing, change: Change) -> RepositoryListing:
    """``listing`` knowing ``change``'s item as a single GET described it; the cursor
    stays (only the changed-items read moves it, or a change could be skipped)."""
    if listing.items.get(change.number) == change.item:
        return listing
    inside = change.item.watched_for(listing.labels)
    watched = listing.watched | {change.number} if inside else listing.watched - {change.number}
    items = {**listing.items, change.number: change.item}
    return replace(listing, items=items, watched=watched)


def pruned(listing: RepositoryListing, *, keep: Collection[int]) -> RepositoryListing:
    """``listing`` without the items it no longer needs: neither open and labelled nor kept."""
    items = {n: listing.items[n] for n in listing.items if n in keep or n in listing.watched}
    return replace(listing, items=items)
