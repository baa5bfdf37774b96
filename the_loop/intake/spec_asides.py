"""A pull request review's words while a spec gate is open, kept for the gate's decision.

Every authorized comment made while a gate is open goes into the document's review
comments when the gate is decided. The ticket's and the linked pull requests'
conversation comments are read back then; a review's body and its inline comments are
not in those threads, so the reader of reviews keeps them as they come, in the item's
ledger under ``spec.asides`` (each once, by its link). A decision takes those written
between the gate's opening and itself, and its write drops every aside written up to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from the_loop.intake.delivery import CUT_AT, visible_text
from the_loop.intake.events import parse_timestamp
from the_loop.intake.reviews import Review, ReviewComment
from the_loop.portable.poll import Ledger
from the_loop.ref import WorkItemRef
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
    """Keep ``review``'s body and its inline comments (those with words) as asides of the
    owner's open gate, in one write; one already kept (by its link) is not kept again."""
    entries = _entries_of(review, inline)
    if not entries:
        return

    def change(ledger: Ledger) -> None:
        spec = _record(ledger, spec_key)
        asides = _listed(spec)
        known = {str(cast(dict[str, Any], a).get("link")) for a in asides if isinstance(a, dict)}
        fresh = [asdict(entry) for entry in entries if entry.link not in known]
        if fresh:
            ledger[spec_key] = {**spec, ASIDES: [*asides, *fresh]}

    intake.ports.ledger.change(owner, change)


def asides_between(
    spec: dict[str, Any], opened: datetime | None, until: datetime
) -> list[ReviewEntry]:
    """The asides written after ``opened`` (None: any) and no later than ``until``."""
    found: list[ReviewEntry] = []
    for aside in _listed(spec):
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


def without_asides_until(spec: dict[str, Any], until: datetime) -> dict[str, Any]:
    """``spec`` without the asides written up to ``until`` (a decision took them, or they
    came before its gate opened)."""
    if ASIDES not in spec:
        return spec
    kept: list[Any] = []
    for aside in _listed(spec):
        try:
            at = parse_timestamp(str(cast(dict[str, Any], aside).get("at")))
        except (AttributeError, TypeError, ValueError):
            continue  # not an aside: dropped
        if at > until:
            kept.append(aside)
    return {**spec, ASIDES: kept}


_FIELDS = ("login", "at", "link", "body", "decided")


def _entries_of(review: Review, inline: Sequence[ReviewComment]) -> list[ReviewEntry]:
    entries: list[ReviewEntry] = []
    body = as_read(review.body).strip()
    if body and review.submitted_at is not None and review.html_url:
        entries.append(ReviewEntry(review.login, _iso(review.submitted_at), review.html_url, body))
    for comment in inline:
        words = as_read(comment.body).strip()
        if not words or comment.carries_marker or not comment.html_url:
            continue
        where = f"{comment.path}:{comment.line}" if comment.line else comment.path
        said = f"On {where}:\n{words}" if where else words
        entries.append(ReviewEntry(comment.login, _iso(comment.created_at), comment.html_url, said))
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


def _record(ledger: Ledger, key: str) -> dict[str, Any]:
    value = ledger.get(key)
    return dict(cast(dict[str, Any], value)) if isinstance(value, dict) else {}


def _listed(spec: dict[str, Any]) -> list[Any]:
    value = spec.get(ASIDES)
    return list(cast(list[Any], value)) if isinstance(value, list) else []


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
