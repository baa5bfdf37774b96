"""A pull request review's words at a spec gate, kept for the gate's decision.

Every authorized comment made while a gate is open goes into the document's review
comments when the gate is decided. The ticket's and the linked pull requests'
conversation comments are read back then; a review's body and its inline comments are
in no conversation thread, so the reader of reviews keeps them as it reads them, told by
the review's submission (an inline comment drafted earlier is made public with it):

- submitted while a gate is open (at or after its opening): kept in the item's ledger
  under ``spec.asides``, each once by its link, for the decision to take;
- submitted within a gate already decided (read late: a cycle reads the ticket's
  comments before the reviews, and webhooks come in any order): owed to that phase's
  document at once, as an append of its own (``aside-review-<id>``);
- otherwise (no gate was open): nothing is kept.

A decision's write drops the asides it took, by their links, and those submitted before
its gate opened (no later gate can take them); no other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from the_loop.errors import TheLoopError
from the_loop.intake.delivery import CUT_AT, visible_text
from the_loop.intake.events import parse_timestamp
from the_loop.intake.reviews import Review, ReviewComment
from the_loop.intake.spec_ledger import field_of, listed, record_of
from the_loop.portable.poll import Ledger
from the_loop.ref import WorkItemRef
from the_loop.repofile.values import WorkItemState
from the_loop.spec import lane
from the_loop.spec.words import ReviewEntry

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The key under the ledger's ``spec`` record.
ASIDES = "asides"


def keep_review_words(
    intake: IntakeView,
    owner: WorkItemRef,
    review: Review,
    inline: Sequence[ReviewComment],
    spec_key: str,
) -> None:
    """Keep ``review``'s body and its inline comments (those with words) for the gate that
    was open when it was submitted, in one write of the owner's ledger (see the module).
    Under the item's hold, as decisions are carried out: a decision never closes the gate
    between this reading of the lane and this write. A lane that cannot be read is a
    warning, never the cycle's failure."""
    port = intake.ports.spec
    if port is None or not isinstance(intake.ports.ledger.value(owner, spec_key), dict):
        return  # the item follows no lane
    entries = _entries_of(review, inline)
    if not entries or review.submitted_at is None:
        return
    submitted = review.submitted_at.replace(microsecond=0)
    key = f"aside-{review.key}"
    with intake.ports.hold(owner):
        try:
            state = port.state(owner)
            if state is None:
                return
            decided = _decided_over(state, submitted)
            if decided is None and not _open_at(state, submitted):
                return
        except (TheLoopError, OSError) as error:
            intake.ports.warn(f"{owner.ref}: the spec lane: {error}")
            return

        def change(ledger: Ledger) -> None:
            spec = record_of(ledger, spec_key)
            if decided is not None:  # read late: owed to the document of the gate it was at
                appends = listed(spec, "appends")
                if not any(field_of(a, "key") == key for a in appends):
                    owed = {"key": key, "phase": decided, "entries": [asdict(e) for e in entries]}
                    ledger[spec_key] = {**spec, "appends": [*appends, owed]}
                return
            asides = listed(spec, ASIDES)
            known = {field_of(a, "link") for a in asides}
            fresh = [asdict(entry) for entry in entries if entry.link not in known]
            if fresh:
                ledger[spec_key] = {**spec, ASIDES: [*asides, *fresh]}

        intake.ports.ledger.change(owner, change)


def asides_between(
    spec: dict[str, Any], opened: datetime | None, until: datetime
) -> list[ReviewEntry]:
    """The asides written after ``opened`` (None: any) and no later than ``until``."""
    found: list[ReviewEntry] = []
    for aside in listed(spec, ASIDES):
        if not isinstance(aside, dict):
            continue
        fields = cast(dict[str, Any], aside)
        try:
            entry = ReviewEntry(**{k: str(fields.get(k) or "") for k in _FIELDS})
            at = parse_timestamp(entry.at)
        except (TypeError, ValueError):
            continue
        if at <= until and (opened is None or at >= opened):
            found.append(entry)
    return found


def without_asides(
    spec: dict[str, Any], taken: Sequence[ReviewEntry], opened: datetime | None
) -> dict[str, Any]:
    """``spec`` without the asides a decision took (``taken``, by their links), nor those
    submitted before its gate opened (``opened``): no later gate can take them."""
    if ASIDES not in spec:
        return spec
    links = {entry.link for entry in taken}
    kept: list[Any] = []
    for aside in listed(spec, ASIDES):
        fields: dict[str, Any] = cast(dict[str, Any], aside) if isinstance(aside, dict) else {}
        at = _moment(fields.get("at"))
        if at is None or field_of(fields, "link") in links or (opened is not None and at < opened):
            continue
        kept.append(fields)
    return {**spec, ASIDES: kept}


def _decided_over(state: WorkItemState, moment: datetime) -> str | None:
    """The gated phase of a decision (approved or sent back) whose gate was open at
    ``moment``: opened at or before it, decided at or after it."""
    for phase in lane.GATED:
        for decision in lane.decisions_of(state, phase):
            if decision.get("outcome") not in (lane.APPROVED, lane.CHANGES):
                continue
            opened = _moment(decision.get("opened"))
            at = _moment(decision.get("at"))
            if opened is not None and at is not None and opened <= moment <= at:
                return phase
    return None


def _open_at(state: WorkItemState, moment: datetime) -> bool:
    """Whether a gate is open now and was open at ``moment``."""
    found = lane.read_lane(state)
    if not found.waiting:
        return False
    opened = _moment(found.node(found.waiting[0]).at)
    return opened is None or opened <= moment


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value).replace(microsecond=0)
    except ValueError:
        return None


_FIELDS = ("login", "at", "link", "body", "decided")


def _entries_of(review: Review, inline: Sequence[ReviewComment]) -> list[ReviewEntry]:
    """The review's words as entries, each at the review's submission."""
    if review.submitted_at is None:
        return []
    submitted = _iso(review.submitted_at)
    entries: list[ReviewEntry] = []
    body = as_read(review.body).strip()
    if body and review.html_url:
        entries.append(ReviewEntry(review.login, submitted, review.html_url, body))
    for comment in inline:
        if not as_read(comment.body).strip() or comment.carries_marker or not comment.html_url:
            continue
        where = f"{comment.path}:{comment.line}" if comment.line else comment.path
        said = f"On {where}:\n{comment.body}" if where else comment.body
        # The path too is the pull request's: read as its reader sees it, and cut with it.
        entries.append(ReviewEntry(comment.login, submitted, comment.html_url, as_read(said)))
    return entries


def as_read(text: str) -> str:
    """A person's words as the agent and the document get them: what a reader of the page
    sees (HTML comments and invisible characters dropped), cut at the delivery's limit
    with a note (the whole is at the comment's link)."""
    seen = visible_text(text)[0]
    if len(seen) <= CUT_AT:
        return seen
    more = len(seen) - CUT_AT
    note = f"[the-loop] Cut at {CUT_AT:,} characters; {more:,} more are at its link."
    return f"{seen[:CUT_AT]}\n{note}"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
