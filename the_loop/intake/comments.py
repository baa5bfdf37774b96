"""What happens to one comment: settled (with why), a command, delivered, held, or seen.

:func:`classify_comment` is pure. The filters run in this order: the item is
watched; the comment is new (a comment already in the ledger, edited or not, is
never handled twice); it is not the-loop's own; a bot is listed; then a keyword
line makes it a command (authorized, one verb) or settles it, and any other
comment goes to the session: delivered, held while paused, or seen without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from the_loop.intake.events import Comment
from the_loop.intake.keywords import KeywordGrammar
from the_loop.intake.people import AuthorizedUsers, is_bot

DeliverFrom = Literal["authorized", "anyone"]
DELIVER_FROM: tuple[DeliverFrom, ...] = ("authorized", "anyone")


class Outcome(StrEnum):
    SETTLED = "settled"  # recorded, never pasted, never run
    COMMAND = "command"  # run the verb's control action
    DELIVER = "deliver"  # paste into the live, active session
    HOLD = "hold"  # the session is paused: deliver at resume, in order
    SEEN = "seen"  # no live session: recorded as seen


class Reason(StrEnum):
    NOT_WATCHED = "not-watched"
    ALREADY_SEEN = "already-seen"
    EDITED = "edited"
    OWN_MARKER = "own-marker"
    OWN_POSTED = "own-posted"
    BOT = "bot"
    UNAUTHORIZED = "unauthorized"
    UNAUTHORIZED_KEYWORD = "unauthorized-keyword"
    AMBIGUOUS = "ambiguous"
    KEYWORD = "keyword"
    AUTHORIZED = "authorized"
    UNTRUSTED = "untrusted"
    PAUSED = "paused"
    NO_SESSION = "no-session"


class SessionState(StrEnum):
    """The item's session as the poller sees it."""

    NONE = "none"  # no record, or a closed one
    ACTIVE = "active"
    PAUSED = "paused"


#: The event a decision calls for, when it calls for one at classification time.
_EVENTS = {
    Reason.UNAUTHORIZED_KEYWORD: "poll.unauthorized",
    Reason.AMBIGUOUS: "poll.ambiguous",
}


@dataclass(frozen=True)
class CommentPolicy:
    """The settings classification depends on (``routing.*`` and ``polling.deliverFrom``)."""

    authorized: AuthorizedUsers
    grammar: KeywordGrammar = field(default_factory=KeywordGrammar)
    deliver_from: DeliverFrom = "authorized"


@dataclass(frozen=True)
class ItemView:
    """What the poller knows of the comment's item: watched, its session, its ledger's ids."""

    watched: bool
    session: SessionState = SessionState.NONE
    seen_ids: frozenset[int] = frozenset()
    #: Where this read's window starts: a comment written before it that the ledger
    #: does not hold was passed over then (its item not watched), so it is here only
    #: because it was edited since — and edits are never handled.
    read_from: datetime | None = None


@dataclass(frozen=True)
class CommentDecision:
    """One comment's fate; ``trusted`` is False for text framed as untrusted input."""

    comment_id: int
    outcome: Outcome
    reason: Reason
    verb: str | None = None
    trusted: bool = True
    ambiguous_verbs: tuple[str, ...] = ()

    @property
    def event(self) -> str | None:
        """``poll.unauthorized`` or ``poll.ambiguous`` when the decision must be logged."""
        return _EVENTS.get(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "commentId": self.comment_id,
            "outcome": str(self.outcome),
            "reason": str(self.reason),
            "verb": self.verb,
            "trusted": self.trusted,
            "ambiguousVerbs": list(self.ambiguous_verbs),
        }


def classify_comment(
    comment: Comment,
    item: ItemView,
    policy: CommentPolicy,
    *,
    posted_ids: frozenset[int] = frozenset(),
) -> CommentDecision:
    """Decide ``comment``'s fate; ``posted_ids`` are the ids of comments the-loop posted."""
    refused = _settled_before_reading(comment, item, policy, posted_ids)
    if refused is not None:
        return _settle(comment, refused)
    permitted = policy.authorized.permits(comment.login)
    scan = policy.grammar.scan(comment.body)
    if scan.is_keyword:
        if not permitted:
            return _settle(comment, Reason.UNAUTHORIZED_KEYWORD)
        if scan.ambiguous:
            return CommentDecision(
                comment.id, Outcome.SETTLED, Reason.AMBIGUOUS, ambiguous_verbs=scan.verbs
            )
        return CommentDecision(comment.id, Outcome.COMMAND, Reason.KEYWORD, verb=scan.verb)
    if not permitted and policy.deliver_from != "anyone":
        return _settle(comment, Reason.UNAUTHORIZED)
    return _to_session(comment, item.session, trusted=permitted)


def _settled_before_reading(
    comment: Comment, item: ItemView, policy: CommentPolicy, posted_ids: frozenset[int]
) -> Reason | None:
    """Why the comment is settled before its body is read, if it is."""
    if not item.watched:
        return Reason.NOT_WATCHED
    if comment.id in item.seen_ids:
        return Reason.EDITED if comment.edited else Reason.ALREADY_SEEN
    if item.read_from is not None and comment.created_at < item.read_from:
        return Reason.EDITED
    if comment.carries_marker:
        return Reason.OWN_MARKER
    if comment.id in posted_ids:
        return Reason.OWN_POSTED
    if is_bot(comment.login, comment.user_type) and not policy.authorized.permits(comment.login):
        return Reason.BOT
    return None


def _to_session(comment: Comment, session: SessionState, *, trusted: bool) -> CommentDecision:
    if session is SessionState.ACTIVE:
        reason = Reason.AUTHORIZED if trusted else Reason.UNTRUSTED
        return CommentDecision(comment.id, Outcome.DELIVER, reason, trusted=trusted)
    if session is SessionState.PAUSED:
        return CommentDecision(comment.id, Outcome.HOLD, Reason.PAUSED, trusted=trusted)
    return CommentDecision(comment.id, Outcome.SEEN, Reason.NO_SESSION, trusted=trusted)


def _settle(comment: Comment, reason: Reason) -> CommentDecision:
    return CommentDecision(comment.id, Outcome.SETTLED, reason)
