"""First sight of an item (no poll ledger): baseline its thread, run what is still owed.

Every existing comment is recorded as seen, except the commands still owed, in thread
order: of the authorized, unambiguous keyword comments written after the item's
control record (any, when it has none), the last that starts, stops or cleans up,
then the last pause or resume after it. That is the state the thread asks for
(``start`` then ``pause``: a paused session) without replaying its history, which
would spawn and close agents for nothing. A command whose login ``may_command`` refuses
(it can no longer write to the repository) is history like any other comment, so the
command before it may be the one owed. The caller writes each command's ledger entry
and its control record in one write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from the_loop.intake.comments import CommentPolicy
from the_loop.intake.events import Comment
from the_loop.intake.keywords import LEDGER_VERBS
from the_loop.portable.control import PAUSE, RESUME

#: The verbs that only hold or release a session; every other verb decides its life.
_HOLDING = frozenset({PAUSE, RESUME})


@dataclass(frozen=True)
class OwedCommand:
    comment: Comment
    verb: str


@dataclass(frozen=True)
class FirstSight:
    """The ids to record as seen (thread order) and the commands to run, in thread order;
    ``refused``, the keyword commands of logins not authorized that were written after
    the control record (the caller says which of them are new enough to report)."""

    baseline_ids: tuple[int, ...]
    commands: tuple[OwedCommand, ...] = ()
    refused: tuple[OwedCommand, ...] = ()


def first_sight(
    thread: Sequence[Comment],
    policy: CommentPolicy,
    *,
    control_requested_at: datetime | None,
    posted_ids: frozenset[int] = frozenset(),
    may_command: Callable[[Comment], bool] = lambda _comment: True,
) -> FirstSight:
    """Split ``thread`` (the item's comments, oldest first) into baseline and owed commands;
    ``may_command`` is asked of each command that could be owed, in thread order."""
    life: OwedCommand | None = None
    hold: OwedCommand | None = None
    refused: list[OwedCommand] = []
    for comment in thread:
        newer = control_requested_at is None or comment.created_at > control_requested_at
        stranger = _stranger_command(comment, policy, posted_ids)
        if stranger is not None and newer:
            refused.append(OwedCommand(comment, stranger))
        verb = _command_of(comment, policy, posted_ids)
        if verb is None or not newer or not may_command(comment):
            continue
        if verb in _HOLDING:
            hold = OwedCommand(comment, verb)
        else:
            life, hold = OwedCommand(comment, verb), None  # what came before it is history
    owed = tuple(command for command in (life, hold) if command is not None)
    owed_ids = {command.comment.id for command in owed}
    baseline = tuple(comment.id for comment in thread if comment.id not in owed_ids)
    return FirstSight(baseline, owed, tuple(refused))


def _command_of(comment: Comment, policy: CommentPolicy, posted_ids: frozenset[int]) -> str | None:
    """The verb an authorized, unambiguous keyword comment asks for (not the-loop's own)."""
    if comment.carries_marker or comment.id in posted_ids:
        return None
    if not policy.authorized.permits(comment.login):
        return None  # a bot commands only when listed, like anyone else
    verb = policy.grammar.scan(comment.body).verb
    # An answer is to a prompt long gone, a raise to a ledger that travels: history.
    return None if verb in LEDGER_VERBS else verb


def _stranger_command(
    comment: Comment, policy: CommentPolicy, posted_ids: frozenset[int]
) -> str | None:
    """The verb a keyword comment of a login not authorized asks for (refused)."""
    if comment.carries_marker or comment.id in posted_ids:
        return None
    if policy.authorized.permits(comment.login):
        return None
    scan = policy.grammar.scan(comment.body)
    return scan.verb if scan.is_keyword and not scan.ambiguous else None
