"""Which waiting comments go into a pane together, as one paste.

An agent that does not say what it received takes each paste as it comes, so when
several of an item's comments wait at once (a burst, a backlog after a restart) they
go in as one paste, in thread order: one pending write, one look at the agent, one
tmux command list and one delivered write for the run instead of one each. A run is
comments only (a review's, a check's or a continue's paste always goes alone), the
next ones in the thread, each on its first attempt (a retry goes alone, so a paste that
keeps failing spends one entry's attempts, not a run's) and waiting when this drain began,
at most :data:`MOST_TOGETHER` of them and :data:`MOST_CHARACTERS` characters, and never
more than the hour's allowance of deliveries leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from the_loop.intake.ledger import DeliveryKey, DeliveryLedger, DeliveryState

#: The harnesses whose agent says what it received (its paste waits for its word, one per
#: turn): never given a run, even before its hook log holds a word.
CONFIRMING_HARNESSES = frozenset({"claude"})
#: The most comments one paste carries.
MOST_TOGETHER = 10
#: The most characters of comment text one paste carries beyond its first comment.
MOST_CHARACTERS = 16_000
#: What goes between two comments of one paste.
SEPARATOR = "\n\n"


def run_of(
    ledger: DeliveryLedger,
    *,
    waiting: Collection[DeliveryKey],
    allowance: int,
    text: Callable[[DeliveryKey], str],
) -> tuple[DeliveryKey, ...]:
    """The keys the next attempt pastes, its due entry first: that entry alone unless it
    is a comment, else the comments that follow it in the thread while each may join
    (see the module's note). Empty when nothing is due."""
    due = ledger.due
    if due is None:
        return ()
    if not isinstance(due.comment_id, int) or due.attempts > 0:
        return (due.comment_id,)  # a retry goes alone: a failing paste spends one entry
    states = (DeliveryState.WAITING, DeliveryState.HELD)
    run: list[DeliveryKey] = [due.comment_id]
    size = 0
    for entry in [e for e in ledger.entries if e.state in states][1:]:
        key = entry.comment_id
        if len(run) >= min(MOST_TOGETHER, allowance):
            break
        if not isinstance(key, int) or key not in waiting or entry.attempts > 0:
            break
        size += len(SEPARATOR) + len(text(key))
        if size > MOST_CHARACTERS:
            break
        run.append(key)
    return tuple(run)


__all__ = ["CONFIRMING_HARNESSES", "MOST_CHARACTERS", "MOST_TOGETHER", "SEPARATOR", "run_of"]
