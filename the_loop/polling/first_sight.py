"""First sight of an item (no poll ledger): baseline its thread, run only its live command.

Every existing comment is recorded as seen, except the one command still owed: the
latest authorized, unambiguous keyword comment written after the item's control
record (any, when it has none). Older commands are history the latest one
supersedes; replaying them would spawn and close agents for nothing. The caller
writes the baseline, the command's ledger entry and its control record in one write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from the_loop.polling.comments import CommentPolicy
from the_loop.polling.github_comment import Comment


@dataclass(frozen=True)
class OwedCommand:
    comment: Comment
    verb: str


@dataclass(frozen=True)
class FirstSight:
    """The ids to record as seen (thread order) and the one command to run, if any."""

    baseline_ids: tuple[int, ...]
    command: OwedCommand | None


def first_sight(
    thread: Sequence[Comment],
    policy: CommentPolicy,
    *,
    control_requested_at: datetime | None,
    posted_ids: frozenset[int] = frozenset(),
) -> FirstSight:
    """Split ``thread`` (the item's comments, oldest first) into baseline and owed command."""
    owed: OwedCommand | None = None
    for comment in thread:
        verb = _command_of(comment, policy, posted_ids)
        newer = control_requested_at is None or comment.created_at > control_requested_at
        if verb is not None and newer:
            owed = OwedCommand(comment, verb)
    owed_id = owed.comment.id if owed is not None else None
    baseline = tuple(comment.id for comment in thread if comment.id != owed_id)
    return FirstSight(baseline, owed)


def _command_of(comment: Comment, policy: CommentPolicy, posted_ids: frozenset[int]) -> str | None:
    """The verb an authorized, unambiguous keyword comment asks for (not the-loop's own)."""
    if comment.carries_marker or comment.id in posted_ids:
        return None
    if not policy.authorized.permits(comment.login):
        return None  # a bot commands only when listed, like anyone else
    return policy.grammar.scan(comment.body).verb
