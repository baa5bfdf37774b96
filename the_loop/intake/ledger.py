"""One pane's delivery ledger as a pure state machine, its crash recovery, and the breaker.

A comment's entry goes ``held``/``waiting`` → ``pending`` (written before the paste)
→ ``delivered`` (written after the paste and the pane mark), back to ``waiting``
after a failed paste, or ``given-up`` once ``maxRetries`` attempts are spent. For an
agent that says what it received (Claude Code's ``UserPromptSubmit`` hook), the paste
leads to ``pasted`` first: ``delivered`` once the agent took the text as a turn, back
to ``waiting`` (or ``given-up``) when it went idle without it (a paste it dropped).
Entries keep the thread's order, and only the first one not done may begin, so a
retried comment still goes before the later ones. Each entry also carries when its
latest attempt began (``begun``): the order its paste could have reached the pane,
which decides a crash's ``pending``; the pane mark names only the last paste.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

HOUR_SECONDS = 3600.0

#: What an entry delivers: a comment, by its GitHub id, or another paste by a key of its
#: own (``review-<id>``: a pull request's review; ``ci-…``: a check that failed;
#: ``limit-…``: the continue after a usage limit).
DeliveryKey = int | str


#: Between the id and the attempt's number in a pane's delivered mark (never in a key).
MARK_SEPARATOR = "~"


def pane_mark_of(comment_id: DeliveryKey, number: int) -> str:
    """The delivered mark of the attempt numbered ``number`` whose last entry is
    ``comment_id``: ``<id>~<number>`` (the id alone for an unnumbered attempt)."""
    return f"{comment_id}{MARK_SEPARATOR}{number}" if number > 0 else str(comment_id)


class LedgerTransitionError(ValueError):
    """A transition the state machine forbids (a caller's bug)."""


class DeliveryState(StrEnum):
    HELD = "held"  # the session is paused: waits for resume
    WAITING = "waiting"  # to be (re)tried
    PENDING = "pending"  # an attempt began: the paste may or may not have happened
    PASTED = "pasted"  # in the pane; the agent has not yet said it took it as a turn
    DELIVERED = "delivered"
    GIVEN_UP = "given-up"


class Verdict(StrEnum):
    DELIVERED = "delivered"
    RETRY = "retry"
    GIVE_UP = "give-up"


class Why(StrEnum):
    MARKED = "the pane carries its id"
    DROPPED = "the agent went idle without taking the paste as a turn"
    NOT_PASTED = "neither the mark nor a later paste says it reached the pane"
    OVERWRITTEN = "a later paste replaced the mark: it may or may not have been pasted"
    RETRIES_SPENT = "every attempt is spent"
    STUCK = "it stayed in the agent's input box, and Enter did not submit it"


@dataclass(frozen=True)
class DeliveryEntry:
    """One paste's entry (``comment_id``: a comment's id, or a :data:`DeliveryKey` of
    another paste); ``begun`` numbers its latest attempt among the pane's (0: never begun,
    or written before attempts were numbered: then its place in the ledger says)."""

    comment_id: DeliveryKey
    state: DeliveryState
    attempts: int = 0
    begun: int = 0


@dataclass(frozen=True)
class Resolution:
    """What becomes of one ``pending`` entry after a restart or a failed paste."""

    comment_id: DeliveryKey
    verdict: Verdict
    why: Why


@dataclass(frozen=True)
class DeliveryLedger:
    """One pane's entries in thread order (the order they were added)."""

    entries: tuple[DeliveryEntry, ...] = ()

    def entry(self, comment_id: DeliveryKey) -> DeliveryEntry | None:
        return next((e for e in self.entries if e.comment_id == comment_id), None)

    @property
    def pending(self) -> tuple[DeliveryEntry, ...]:
        return tuple(e for e in self.entries if e.state is DeliveryState.PENDING)

    @property
    def pasted(self) -> tuple[DeliveryEntry, ...]:
        return tuple(e for e in self.entries if e.state is DeliveryState.PASTED)

    @property
    def due(self) -> DeliveryEntry | None:
        """The entry to attempt next: the first in thread order still ``waiting`` or
        ``held``; None when there is none, or while one is pending or awaits the agent's
        word (a retry of a dropped paste must still go before the later ones)."""
        if self.pending or self.pasted:
            return None
        waiting = (DeliveryState.WAITING, DeliveryState.HELD)
        return next((e for e in self.entries if e.state in waiting), None)

    @property
    def held(self) -> tuple[DeliveryKey, ...]:
        """The held comment ids, in the order they were held (the order to deliver them)."""
        return tuple(e.comment_id for e in self.entries if e.state is DeliveryState.HELD)

    def add(
        self, comment_id: DeliveryKey, state: DeliveryState = DeliveryState.WAITING
    ) -> DeliveryLedger:
        """A new entry, ``waiting`` or ``held``; refused for a comment already here."""
        if state not in (DeliveryState.WAITING, DeliveryState.HELD):
            raise LedgerTransitionError(f"a new entry is waiting or held, not {state}")
        if self.entry(comment_id) is not None:
            raise LedgerTransitionError(f"comment {comment_id} is already in the ledger")
        return DeliveryLedger((*self.entries, DeliveryEntry(comment_id, state)))

    def begin(self, comment_id: DeliveryKey, *, max_retries: int) -> DeliveryLedger:
        """Start an attempt: the entry becomes ``pending``, numbered the pane's latest.

        Refused while another entry is pending (resolve it first: the mark names only
        the last paste), for an entry that is done or not :attr:`due` (the thread's
        order), and when no attempt is left. The entry keeps its place.
        """
        entry = self._expect(comment_id, DeliveryState.WAITING, DeliveryState.HELD)
        if self.pending:
            raise LedgerTransitionError(f"comment {self.pending[0].comment_id} is still pending")
        due = self.due
        if due is not None and due.comment_id != comment_id:
            raise LedgerTransitionError(f"comment {due.comment_id} comes first in the thread")
        if entry.attempts >= max_retries:
            raise LedgerTransitionError(f"comment {comment_id} has no attempt left")
        latest = max((e.begun for e in self.entries), default=0)
        begun = DeliveryEntry(comment_id, DeliveryState.PENDING, entry.attempts + 1, latest + 1)
        return DeliveryLedger(tuple(begun if e == entry else e for e in self.entries))

    def begin_run(self, comment_ids: Sequence[DeliveryKey], *, max_retries: int) -> DeliveryLedger:
        """Start one attempt that pastes ``comment_ids`` together, as one paste: each
        becomes ``pending`` under the same number (the pane's latest + 1), so the mark of
        that attempt vouches for every one of them (:meth:`resolve`).

        The ids must be the first entries still ``waiting`` or ``held``, in thread order
        (nothing is overtaken), each with an attempt left; refused too while an entry is
        pending or awaits the agent's word.
        """
        if self.pending or self.pasted:
            raise LedgerTransitionError("an earlier paste is not settled yet")
        waiting = [
            e for e in self.entries if e.state in (DeliveryState.WAITING, DeliveryState.HELD)
        ]
        run = waiting[: len(comment_ids)]
        if not comment_ids or [e.comment_id for e in run] != list(comment_ids):
            raise LedgerTransitionError(f"{list(comment_ids)} are not the next in the thread")
        spent = next((e for e in run if e.attempts >= max_retries), None)
        if spent is not None:
            raise LedgerTransitionError(f"comment {spent.comment_id} has no attempt left")
        number = max((e.begun for e in self.entries), default=0) + 1
        begun = {
            e.comment_id: DeliveryEntry(e.comment_id, DeliveryState.PENDING, e.attempts + 1, number)
            for e in run
        }
        return DeliveryLedger(tuple(begun.get(e.comment_id, e) for e in self.entries))

    def delivered(self, comment_id: DeliveryKey) -> DeliveryLedger:
        """The paste and the mark are done: ``pending`` → ``delivered``."""
        return self._set(self._expect(comment_id, DeliveryState.PENDING), DeliveryState.DELIVERED)

    def pasted_in(self, comment_id: DeliveryKey) -> DeliveryLedger:
        """The paste and the mark are done, the agent's word still to come: ``pending`` →
        ``pasted``."""
        return self._set(self._expect(comment_id, DeliveryState.PENDING), DeliveryState.PASTED)

    def received(self, comment_id: DeliveryKey) -> DeliveryLedger:
        """The agent took the paste as a turn: ``pasted`` → ``delivered``."""
        return self._set(self._expect(comment_id, DeliveryState.PASTED), DeliveryState.DELIVERED)

    def dropped(self, comment_id: DeliveryKey, *, max_retries: int) -> Resolution:
        """What follows a paste the agent dropped: retried while attempts are left."""
        entry = self._expect(comment_id, DeliveryState.PASTED)
        if entry.attempts < max_retries:
            return Resolution(entry.comment_id, Verdict.RETRY, Why.DROPPED)
        return Resolution(entry.comment_id, Verdict.GIVE_UP, Why.RETRIES_SPENT)

    def stuck(self, comment_id: DeliveryKey) -> Resolution:
        """A ``pasted`` entry left in the agent's input box however often Enter was
        pressed: given up (and said), never pasted again into a box that holds it."""
        entry = self._expect(comment_id, DeliveryState.PASTED)
        return Resolution(entry.comment_id, Verdict.GIVE_UP, Why.STUCK)

    def release_held(self) -> DeliveryLedger:
        """Resume: every ``held`` entry becomes ``waiting``, keeping its place."""
        return DeliveryLedger(
            tuple(
                replace(e, state=DeliveryState.WAITING) if e.state is DeliveryState.HELD else e
                for e in self.entries
            )
        )

    def paste_failed(self, comment_id: DeliveryKey, *, max_retries: int) -> Resolution:
        """What follows a paste tmux refused (nothing reached the pane)."""
        entry = self._expect(comment_id, DeliveryState.PENDING)
        return _retry_or_give_up(entry, max_retries)

    def resolve(self, pane_mark: str | None, *, max_retries: int) -> tuple[Resolution, ...]:
        """On restart: each ``pending`` entry, in the order its attempt began, given the
        pane's delivered mark.

        The mark is ``<id>~<number>``: the last entry an attempt pasted and that attempt's
        number (:func:`pane_mark_of`); a mark of an older release is the id alone, and
        names that entry's latest attempt. Every entry whose latest attempt is the marked
        one was pasted (a run: :meth:`begin_run`): delivered. One whose attempt began
        before a later paste (the marked one, or a delivered entry's) may have been: given
        up, never pasted twice. Any other was not pasted: retried while attempts are
        left, else given up.
        """
        order = self._attempt_order()
        rank = {entry.comment_id: position for position, entry in enumerate(order)}
        key, _, number = (pane_mark or "").partition(MARK_SEPARATOR)
        named = [e for e in order if str(e.comment_id) == key]
        run = int(number) if number.isdigit() else (named[0].begun if named else 0)
        if number.isdigit() or run > 0:
            marked_set = [e for e in order if e.begun == run and run > 0]
        else:
            marked_set = named  # an older release's unnumbered entry, named by its id
        marked_ids = {e.comment_id for e in marked_set}
        marked = max((rank[e.comment_id] for e in marked_set), default=-1)
        done = (DeliveryState.DELIVERED, DeliveryState.PASTED)
        delivered = [rank[e.comment_id] for e in order if e.state in done]
        last_paste = max([marked, *delivered])
        resolutions: list[Resolution] = []
        for entry in order:
            if entry.state is not DeliveryState.PENDING:
                continue
            if entry.comment_id in marked_ids:
                resolutions.append(Resolution(entry.comment_id, Verdict.DELIVERED, Why.MARKED))
            elif rank[entry.comment_id] < last_paste:
                resolutions.append(Resolution(entry.comment_id, Verdict.GIVE_UP, Why.OVERWRITTEN))
            else:
                resolutions.append(_retry_or_give_up(entry, max_retries))
        return tuple(resolutions)

    def apply(
        self, resolutions: Iterable[Resolution], *, confirming: bool = False
    ) -> DeliveryLedger:
        """The ledger once ``resolutions`` are written (retry → waiting); with
        ``confirming`` (the agent says what it received), a paste found in the pane is
        ``pasted``, to be confirmed, not yet ``delivered``."""
        ledger = self
        for resolution in resolutions:
            entry = ledger._expect(
                resolution.comment_id, DeliveryState.PENDING, DeliveryState.PASTED
            )
            state = _STATE_AFTER[resolution.verdict]
            if confirming and resolution.verdict is Verdict.DELIVERED:
                state = DeliveryState.PASTED
            ledger = ledger._set(entry, state)
        return ledger

    def _attempt_order(self) -> list[DeliveryEntry]:
        """The entries by when their latest attempt began (unnumbered ones by their place,
        before every numbered one: a ledger from before the numbering kept that order)."""
        placed = sorted(enumerate(self.entries), key=lambda pair: (pair[1].begun, pair[0]))
        return [entry for _, entry in placed]

    def _expect(self, comment_id: DeliveryKey, *states: DeliveryState) -> DeliveryEntry:
        entry = self.entry(comment_id)
        if entry is None or entry.state not in states:
            found = "absent" if entry is None else str(entry.state)
            wanted = " or ".join(map(str, states))
            raise LedgerTransitionError(f"comment {comment_id} is {found}, not {wanted}")
        return entry

    def _set(self, entry: DeliveryEntry, state: DeliveryState) -> DeliveryLedger:
        changed = replace(entry, state=state)
        return DeliveryLedger(tuple(changed if e == entry else e for e in self.entries))


_STATE_AFTER = {
    Verdict.DELIVERED: DeliveryState.DELIVERED,
    Verdict.RETRY: DeliveryState.WAITING,
    Verdict.GIVE_UP: DeliveryState.GIVEN_UP,
}


def _retry_or_give_up(entry: DeliveryEntry, max_retries: int) -> Resolution:
    if entry.attempts < max_retries:
        return Resolution(entry.comment_id, Verdict.RETRY, Why.NOT_PASTED)
    return Resolution(entry.comment_id, Verdict.GIVE_UP, Why.RETRIES_SPENT)


@dataclass(frozen=True)
class Breaker:
    """The circuit breaker of one session at one moment."""

    open: bool
    recent: int  # deliveries in the last hour
    closes_at: float | None  # when open: when it closes (None: never, for a limit of 0)


def breaker(delivered_at: Iterable[float], *, now: float, max_per_hour: int) -> Breaker:
    """Open when ``max_per_hour`` deliveries already went in within the hour before ``now``.

    ``delivered_at`` holds epoch seconds; a time after ``now`` (a clock step) counts as
    recent. Raises ``ValueError`` for a negative limit.
    """
    if max_per_hour < 0:
        raise ValueError(f"maxDeliveriesPerHour must be 0 or more, not {max_per_hour}")
    recent = sorted(t for t in delivered_at if t > now - HOUR_SECONDS)
    if len(recent) < max_per_hour:
        return Breaker(False, len(recent), None)
    # The oldest deliveries must leave the window until one fewer than the limit remain.
    leaving = recent[len(recent) - max_per_hour] if max_per_hour else None
    closes_at = None if leaving is None else max(leaving + HOUR_SECONDS, now)
    return Breaker(True, len(recent), closes_at)
