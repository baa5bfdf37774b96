"""The watched set, and what a closed, merged, gone or reopened item does to its session.

Both are pure: :func:`watched_set` over what the listing and the stores said,
:func:`decide_closure` over one item's GitHub state and what the-loop recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from the_loop.intake.people import AuthorizedUsers
from the_loop.ref import WorkItemRef


class WatchReason(StrEnum):
    LABELLED = "labelled"  # open, carrying every label
    LIVE_SESSION = "live-session"
    LINKED_PULL_REQUEST = "linked-pull-request"
    ARMED = "armed"


@dataclass(frozen=True)
class OpenItem:
    """One entry of the open-items listing."""

    ref: WorkItemRef
    labels: frozenset[str]
    is_pull_request: bool = False
    is_open: bool = True


def open_item_from_json(data: Mapping[str, Any], *, repository: WorkItemRef) -> OpenItem:
    """The listing entry ``data``; ``ValueError`` without a positive integer ``number``."""
    number = data.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        raise ValueError(f"an issue needs a positive integer number, not {number!r}")
    raw_labels = data.get("labels")
    labels = cast(list[Any], raw_labels) if isinstance(raw_labels, list) else []
    names = {
        cast(str, label.get("name"))
        for label in (cast(Mapping[str, Any], x) for x in labels if isinstance(x, Mapping))
        if isinstance(label.get("name"), str)
    }
    return OpenItem(
        ref=repository.with_number(number),
        labels=frozenset(names),
        is_pull_request="pull_request" in data,
        is_open=data.get("state") == "open",
    )


@dataclass(frozen=True)
class ListedNumbers:
    """The numbers of one repository's items known open and labelled (a kept listing):
    asked one ref at a time, so a large listing is never turned into refs each cycle."""

    repository: WorkItemRef
    numbers: frozenset[int]

    def holds(self, ref: object) -> bool:
        if not isinstance(ref, WorkItemRef) or ref.number not in self.numbers:
            return False
        mine = self.repository
        return (ref.provider, ref.host, ref.owner, ref.repo) == (
            mine.provider,
            mine.host,
            mine.owner,
            mine.repo,
        )

    def refs(self) -> frozenset[WorkItemRef]:
        return frozenset(self.repository.with_number(n) for n in self.numbers)


@dataclass(frozen=True)
class WatchedSet:
    """Every watched ref, with why it is watched (``reasons`` holds the refs of the
    other sources; the items of ``listed`` are watched as labelled)."""

    reasons: Mapping[WorkItemRef, frozenset[WatchReason]]
    listed: ListedNumbers | None = None

    def __contains__(self, ref: object) -> bool:
        return ref in self.reasons or (self.listed is not None and self.listed.holds(ref))

    @property
    def refs(self) -> frozenset[WorkItemRef]:
        listed = self.listed.refs() if self.listed is not None else frozenset[WorkItemRef]()
        return frozenset(self.reasons) | listed


def carries_labels(item: OpenItem, labels: Sequence[str]) -> bool:
    """True when ``item`` is open and carries every one of ``labels`` (case-insensitive)."""
    names = {name.casefold() for name in item.labels}
    return item.is_open and all(label.casefold() in names for label in labels)


def watched_set(
    open_items: Iterable[OpenItem],
    *,
    labels: Sequence[str],
    live_sessions: Iterable[WorkItemRef] = (),
    linked_pull_requests: Iterable[WorkItemRef] = (),
    armed: Iterable[WorkItemRef] = (),
    listed: ListedNumbers | None = None,
) -> WatchedSet:
    """Open items carrying every label (``[]``: every open item), and those of ``listed``,
    ∪ the other three sets."""
    reasons: dict[WorkItemRef, set[WatchReason]] = {}
    labelled = (item.ref for item in open_items if carries_labels(item, labels))
    sources = (
        (WatchReason.LABELLED, labelled),
        (WatchReason.LIVE_SESSION, live_sessions),
        (WatchReason.LINKED_PULL_REQUEST, linked_pull_requests),
        (WatchReason.ARMED, armed),
    )
    for reason, refs in sources:
        for ref in refs:
            reasons.setdefault(ref, set()).add(reason)
    if listed is not None:
        for ref, why in reasons.items():
            if listed.holds(ref):
                why.add(WatchReason.LABELLED)
    return WatchedSet({ref: frozenset(why) for ref, why in reasons.items()}, listed)


class Role(StrEnum):
    WORK_ITEM = "work-item"  # an issue, or a PR that is its own work item
    LINKED_PULL_REQUEST = "linked-pull-request"  # a PR delivering another work item


class ClosureAction(StrEnum):
    NOTHING = "nothing"
    CLOSE_SESSION = "close-session"  # through the dispatcher's one close path
    END_ENDPOINT = "end-endpoint"  # only the PR's endpoint; its state recorded
    RECORD_STATE = "record-state"  # no live session or endpoint: only the state changes
    CLEAR_CLOSED = "clear-closed"  # reopened


#: The state recorded for an item GitHub no longer has (deleted or transferred).
GONE = "gone"


@dataclass(frozen=True)
class ItemState:
    """What GitHub says of the item now; ``closed_by`` is the login that closed or merged it,
    ``gone`` why GitHub no longer has it (``""`` while it does)."""

    is_open: bool
    merged: bool = False
    closed_by: str = ""
    gone: str = ""


@dataclass(frozen=True)
class KnownState:
    """What the-loop holds for the item: its role, a live session, the recorded state."""

    role: Role
    live: bool
    recorded_state: str = ""  # "" (open), "closed", "merged" or "gone"


@dataclass(frozen=True)
class ClosureDecision:
    """What to do; ``state`` is what to record (``""`` clears it); cleanup needs authority."""

    action: ClosureAction
    state: str = ""
    cleanup: bool = False


def decide_closure(
    item: ItemState, known: KnownState, *, authorized: AuthorizedUsers
) -> ClosureDecision:
    """Close on a closed or gone issue or own PR; end only the endpoint of a closed or gone
    linked PR.

    Checkouts are cleaned up only when the closer is authorized (a gone item has no
    closer: they are kept). A reopened item clears its recorded state; a state already
    recorded with nothing live does nothing.
    """
    if item.is_open and not item.gone:
        if known.recorded_state:
            return ClosureDecision(ClosureAction.CLEAR_CLOSED)
        return ClosureDecision(ClosureAction.NOTHING)
    state = GONE if item.gone else "merged" if item.merged else "closed"
    if known.live:
        action = (
            ClosureAction.CLOSE_SESSION
            if known.role is Role.WORK_ITEM
            else ClosureAction.END_ENDPOINT
        )
        trusted = not item.gone and bool(item.closed_by)
        cleanup = trusted and authorized.permits(item.closed_by)
        return ClosureDecision(action, state, cleanup)
    if known.recorded_state != state:
        return ClosureDecision(ClosureAction.RECORD_STATE, state)
    return ClosureDecision(ClosureAction.NOTHING, state)
