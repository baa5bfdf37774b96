"""What a round does with a pull request's reviews: one paste each, or settled.

A review is taken when the pull request is a live session's (linked to its work item,
or the work item itself). History is settled, never pasted: of a pull request whose
reviews the reader reads for the first time (its first sight), each review submitted at
or before the bound the reader gives it (the reader's last look, before it watched the
pull request; none: every review), whatever its age or order; and one submitted before
the bound a reader may give every review (``read_from``). Then the comment rules:
the-loop's own words and unlisted bots are settled; an inline comment that carries the
marker is left out of its review's paste, as such an issue comment is settled; a
keyword body commands as a comment's would; a stranger's review is settled unless
``polling.deliverFrom`` is ``anyone`` (then framed as untrusted); a review with nothing
left to say (every inline comment outdated or the-loop's own, no body) is settled. The
rest is queued, once, as one row of the owner's deliveries (held while the session is
paused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from the_loop.intake.comments import SessionState
from the_loop.intake.events import IssueComment
from the_loop.intake.keywords import SPEC_VERBS
from the_loop.intake.pastes import known_pastes, queue_paste, settle_pastes
from the_loop.intake.people import is_bot
from the_loop.intake.ports import Action
from the_loop.intake.reviews import Review, ReviewComment, review_paste
from the_loop.intake.spec_asides import keep_review_words
from the_loop.intake.spec_lane import SPEC, gate_open, take_decision
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import RoundView


def pull_request_owners(round_: RoundView) -> dict[WorkItemRef, WorkItemRef]:
    """Each pull request a live session takes reviews for, and that session's work item."""
    owners: dict[WorkItemRef, WorkItemRef] = {}
    for ref, session in round_.sessions.items():
        owners[ref] = ref
        for pr in session.pull_requests:
            owners.setdefault(pr, ref)
    return owners


def take_reviews(
    round_: RoundView,
    reviews: Sequence[Review],
    comments: Sequence[ReviewComment],
    *,
    read_from: datetime | None,
    thread_heads: Mapping[int, ReviewComment],
    first_sight: Mapping[WorkItemRef, datetime | None] | None = None,
) -> None:
    """Each submitted review of a watched pull request, oldest first: settled, a
    command, or queued as one paste into the owner's session. A review of a pull request
    in ``first_sight`` submitted at or before its bound there (None: every one) is
    history, settled in one write per owner; so is one submitted before ``read_from``
    (None: no such bound)."""
    first_sight = first_sight or {}
    owners = pull_request_owners(round_)
    by_review: dict[int, list[ReviewComment]] = {}
    for comment in sorted(comments, key=lambda c: (c.created_at, c.id)):
        by_review.setdefault(comment.review_id, []).append(comment)
    heads = {**{c.id: c for c in comments if c.in_reply_to is None}, **thread_heads}
    ordered = sorted(
        (r for r in reviews if r.submitted), key=lambda r: (r.submitted_at or datetime.min, r.id)
    )
    found = [(owners.get(r.pull_request), r) for r in ordered]
    taken = [(owner, r) for owner, r in found if owner is not None and owner in round_.sessions]
    history: dict[WorkItemRef, list[Review]] = {}
    for owner, review in taken:
        if _history_at_first_sight(review, first_sight):
            history.setdefault(owner, []).append(review)
    for owner, seen in history.items():
        _baseline(round_, owner, seen)
    for owner, review in taken:
        if round_.intake.stopping():
            return
        if not _history_at_first_sight(review, first_sight):
            _take(round_, review, owner, by_review.get(review.id, []), read_from, heads)


def _history_at_first_sight(
    review: Review, first_sight: Mapping[WorkItemRef, datetime | None]
) -> bool:
    """Whether the first sight of the review's pull request leaves it as history: it was
    there (submitted at or before the bound) before the reader watched the pull request."""
    if review.pull_request not in first_sight:
        return False
    bound = first_sight[review.pull_request]
    submitted = review.submitted_at
    return bound is None or submitted is None or submitted <= bound


def _baseline(round_: RoundView, owner: WorkItemRef, reviews: list[Review]) -> None:
    """First sight of a pull request: each review not yet known is history, recorded in
    one write of the owner's ledger."""
    known = known_pastes(round_.intake.ports, owner)
    fresh = [r for r in reviews if r.key not in known]
    settle_pastes(round_.intake.ports, owner, [r.key for r in fresh])
    for review in fresh:
        _settled(round_, review, owner, "history")


def _take(
    round_: RoundView,
    review: Review,
    owner: WorkItemRef,
    inline: list[ReviewComment],
    read_from: datetime | None,
    heads: Mapping[int, ReviewComment],
) -> None:
    intake = round_.intake
    ports, policy = intake.ports, intake.settings.policy
    if review.key in known_pastes(ports, owner):
        return
    if review.submitted_at is None or (read_from is not None and review.submitted_at < read_from):
        _settle(round_, review, owner, "history")
        return
    own = [c for c in inline if c.carries_marker]
    inline = [c for c in inline if not c.carries_marker]
    permitted = policy.authorized.permits(review.login)
    if review.carries_marker or (is_bot(review.login, review.user_type) and not permitted):
        _settle(round_, review, owner, "own" if review.carries_marker else "bot")
        return
    scan = policy.grammar.scan(review.body)
    if permitted:  # at a gate, its words go into the gate's document
        worded = review if not scan.verbs else replace(review, body="")
        keep_review_words(intake, owner, worded, inline, SPEC)
    decided = permitted and review.state in _DECIDING and _decide_gate(round_, review, owner)
    if decided and scan.verb in SPEC_VERBS:
        _settle(round_, review, owner, "keyword")  # its state decided the gate already
        return
    if scan.is_keyword:
        _keyword(round_, review, owner, scan.verb if not scan.ambiguous else None, permitted)
        return
    if not permitted and policy.deliver_from != "anyone":
        _settle(round_, review, owner, "unauthorized")
        return
    paste = review_paste(review, inline, trusted=permitted, thread_heads=heads)
    if (paste.outdated or own) and not paste.comment_ids and not review.body.strip():
        _settle(round_, review, owner, "outdated" if paste.outdated else "own")
        return
    held = round_.sessions[owner].state is SessionState.PAUSED
    extra = {"comments": list(paste.comment_ids), "pullRequest": review.pull_request.ref}
    if queue_paste(ports, owner, review.key, paste.text, by=review.login, held=held, extra=extra):
        intake.counts.reviews += 1


#: The review states that decide a spec lane's open gate, and what each decides.
_DECIDING = {"APPROVED": "approved", "CHANGES_REQUESTED": "changes"}


def _decide_gate(round_: RoundView, review: Review, owner: WorkItemRef) -> bool:
    """An approving or changes-requested review of a pull request of an item whose spec
    lane has a gate open decides that gate (GitHub's own state, never its words), once by
    the review's key; the review is still pasted as any other. Whether it decided."""
    intake = round_.intake
    if not gate_open(intake, owner):
        return False
    as_comment = _as_comment(review, owner)
    if not round_.may_command(as_comment):
        return False
    decided = _DECIDING[review.state]
    verb = "approve" if decided == "approved" else "changes"
    take_decision(intake, as_comment, verb, key=f"lane-{review.key}", decided=decided, held=False)
    return True


def _as_comment(review: Review, owner: WorkItemRef) -> IssueComment:
    """``review`` as a comment on its owner, for the command rules."""
    return IssueComment(
        id=review.id,
        work_item=owner,
        login=review.login,
        user_type=review.user_type,
        body=review.body,
        html_url=review.html_url,
        created_at=review.submitted_at or datetime.min,
        updated_at=review.submitted_at or datetime.min,
    )


def _keyword(
    round_: RoundView, review: Review, owner: WorkItemRef, verb: str | None, permitted: bool
) -> None:
    """A keyword review body commands the owner as a comment would (at most once)."""
    intake = round_.intake
    if verb is None or not permitted:
        reason = "ambiguous" if permitted else "not-authorized"
        refused = Action("refused", owner.ref, review.login, verb or "", review.key, reason=reason)
        intake.counts.actions.append(refused)
        _settle(round_, review, owner, reason)
        return
    as_comment = _as_comment(review, owner)
    if verb in SPEC_VERBS and round_.may_command(as_comment):
        # A decision: its intent is kept in the same write that settles the review's key.
        round_.command(as_comment, verb, key=review.key)
        return
    settle_pastes(intake.ports, owner, [review.key])
    if verb not in SPEC_VERBS and round_.may_command(as_comment):
        round_.command(as_comment, verb, key=review.key)


def _settle(round_: RoundView, review: Review, owner: WorkItemRef, reason: str) -> None:
    settle_pastes(round_.intake.ports, owner, [review.key])
    _settled(round_, review, owner, reason)


def _settled(round_: RoundView, review: Review, owner: WorkItemRef, reason: str) -> None:
    """Count a review settled and say so (its ledger entry is written by the caller)."""
    ports = round_.intake.ports
    round_.intake.counts.settled += 1
    ports.emit(
        "poll.review_settled",
        work_item=owner.ref,
        pull_request=review.pull_request.ref,
        review_id=review.id,
        login=review.login,
        reason=reason,
    )
