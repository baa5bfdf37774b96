"""Deliver the items' waiting comments into their panes, exactly once, crash or not.

Each attempt: write ``pending`` durably → paste and mark the pane in one tmux command
list → write ``delivered``, under the item's hold, one attempt per hold and the panes in
turn. A ``pending`` found at a turn (a crash) is resolved against the pane's mark first;
then the entries go in thread order, a retry before the later ones. The ledger rows
live in the item's ``poll`` section under ``deliveries``, in thread order: ``id``,
``state``, ``attempts``, ``begun`` (the number of its latest attempt among the pane's),
``tried`` (when it began), the text while undelivered, ``at``; once delivered,
``acked`` when GitHub has its 👀 (:mod:`~the_loop.intake.acknowledgement`). An agent
that says what it received has its paste ``pasted`` until its ``UserPromptSubmit``
holds the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from the_loop.agent.screens import box_holds
from the_loop.agent.state import EXITED, IDLE
from the_loop.errors import TheLoopError
from the_loop.intake.acknowledgement import acknowledge_delivered
from the_loop.intake.budget_ledger import BUDGET_KEY
from the_loop.intake.delivery import BUFFER_PREFIX, DELIVERED_MARK, Delivery
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.ledger import (
    DeliveryEntry,
    DeliveryKey,
    DeliveryLedger,
    DeliveryState,
    Resolution,
    Verdict,
    breaker,
)
from the_loop.intake.ports import Action, LiveSession
from the_loop.intake.runs import CONFIRMING_HARNESSES, SEPARATOR, run_of
from the_loop.portable.poll import DELIVERIES, Ledger, PollState
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

Row = dict[str, Any]
#: The key of a paste that is not one comment: a kind, a dash, then safe characters.
_OTHER_KEY = re.compile(r"(?:review|ci|limit|spec)-[A-Za-z0-9._-]{1,120}")
_DONE = (DeliveryState.DELIVERED, DeliveryState.GIVEN_UP)
#: How long an agent sits idle after a paste without taking it before the paste counts
#: as dropped (and is pasted again): Claude Code submits a queued paste at once.
DROPPED_AFTER_SECONDS = 10.0
#: How often Enter is pressed on a paste left in the agent's input box.
MOST_SUBMITS = 3


def ledger_of(rows: list[Row]) -> DeliveryLedger:
    """The state machine's view of the stored rows (a malformed row is skipped)."""
    entries: list[DeliveryEntry] = []
    for row in rows:
        try:
            state = DeliveryState(str(row.get("state")))
            key, attempts = delivery_key(str(row.get("id"))), int(row.get("attempts", 0))
            entries.append(DeliveryEntry(key, state, attempts, int(row.get("begun", 0))))
        except (TypeError, ValueError):
            continue
    return DeliveryLedger(tuple(entries))


def delivery_key(text: str) -> DeliveryKey:
    """A row's id as the ledger keys it: a comment's number, or another paste's key
    (``review-<id>``, ``ci-…``, ``limit-…``, ``spec-…``); ``ValueError`` for anything else."""
    if text.isdigit():
        return int(text)
    if _OTHER_KEY.fullmatch(text) is None:
        raise ValueError(f"not a delivery key: {text!r}")
    return text


def store_ledger(polls: PollState, ref: WorkItemRef, ledger: DeliveryLedger, now: float) -> None:
    """Write ``ledger``'s states into the stored rows (attempts, when each began; text
    dropped once done). A row added since ``ledger`` was read (a review's or a check's
    paste, queued without the item's hold) is kept as it is, in its place."""

    def change(stored: Ledger) -> None:
        entries = {str(entry.comment_id): entry for entry in ledger.entries}
        written: list[Row] = []
        for row in _rows(stored):
            entry = entries.pop(str(row.get("id")), None)
            written.append(row if entry is None else _written(row, entry, now))
        written += [_written({"id": key}, entry, now) for key, entry in entries.items()]
        stored[DELIVERIES] = written

    polls.change(ref, change)


def _written(row: Row, entry: DeliveryEntry, now: float) -> Row:
    """``row`` with ``entry``'s state, attempts and turn (and when it began or ended)."""
    row = dict(row)
    if row.get("state") != entry.state and entry.state is DeliveryState.DELIVERED:
        row["at"] = now
    if row.get("state") != entry.state and entry.state is DeliveryState.PENDING:
        row["tried"] = now  # the attempt's paste comes after this, its turn too
    row["state"], row["attempts"] = str(entry.state), entry.attempts
    row["begun"] = entry.begun
    if entry.state in _DONE:
        row.pop("text", None)
    return row


def _rows(stored: Ledger) -> list[Row]:
    rows = stored.get(DELIVERIES)
    if not isinstance(rows, list):
        return []
    return [dict(r) for r in rows if isinstance(r, dict)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


def drain(sessions: Sequence[LiveSession], intake: IntakeView) -> None:
    """For each of ``sessions``: resolve a crash's ``pending``, then deliver what waited
    when its turn first came, in order, while the agent takes a paste; one paste per pane
    in turn, each under its item's hold. Then acknowledge on GitHub what was delivered and
    not yet acknowledged."""
    panes = [_Pane(session, intake) for session in sessions]
    while panes:
        # The other reader's comments and pastes go in between ours, and no pane's backlog
        # holds the others' back (a run of one item's comments waiting on every other's).
        panes = [pane for pane in panes if pane.take_turn()]
    # Outside the hold: a 👀 waits its turn among GitHub's writes (a second apart), and a
    # repeat of one is GitHub's no-op, so the other reader's pastes never wait on it.
    for session in sessions:
        acknowledge_delivered(session.ref, intake)


def _over_budget(budget: object) -> bool:
    """Whether the item's ``budget`` ledger value holds an exceeded episode (another
    reader may have begun it since this one looked, before its hold)."""
    return isinstance(budget, dict) and isinstance(
        cast(dict[str, Any], budget).get("exceeded"), dict
    )


class _Pane:
    """One session's pane and its ledger, drained with the intake's collaborators."""

    def __init__(self, session: LiveSession, intake: IntakeView) -> None:
        self.session, self.intake = session, intake
        self.ref, self.target = session.ref, session.tmux_target
        self.ports, self.settings = intake.ports, intake.settings
        self.polls = intake.ports.ledger
        #: The entries attempted in this drain: a refused paste stops the pane until the
        #: next one, so nothing later overtakes its retry.
        self.attempted: set[DeliveryKey] = set()
        #: The entries not done at this drain's first turn: the ones it delivers. What the
        #: other reader queues meanwhile is its own to deliver (or the next cycle's), so a
        #: cycle ends and reads GitHub again however fast the pushes come.
        self.waiting: set[DeliveryKey] | None = None

    def take_turn(self) -> bool:
        """Under the item's hold: settle a crash's ``pending`` and a paste that awaits the
        agent's word, then attempt the entry due in thread order. True when it was
        attempted (the next may follow); False when nothing more goes in now."""
        with self.intake.ports.hold(self.ref):
            return self._turn()

    def _turn(self) -> bool:
        rows = self.polls.deliveries(self.ref)
        ledger = ledger_of(rows)
        if self.waiting is None:
            self.waiting = {e.comment_id for e in ledger.entries if e.state not in _DONE}
        if not self.target or not self.waiting:
            return False
        if ledger.pending or ledger.pasted:
            if not self._settle_left(ledger):
                return False  # the agent has not said yet: nothing later overtakes it
            rows = self.polls.deliveries(self.ref)  # settling wrote the ledger
        due = ledger_of(rows).due
        if due is None or due.comment_id in self.attempted:
            return False  # all done, or a refused paste: it goes first again next time
        if due.comment_id not in self.waiting:
            return False  # queued since this drain began: the reader that queued it goes on
        if not self._may_paste(rows):
            return False  # they wait, in order, in the ledger
        keys = self._run(ledger_of(rows), rows)
        self.attempted.update(keys)
        ledger = self._attempt(ledger_of(rows), keys, rows)
        for key in keys:
            done = ledger.entry(key)
            if done is not None and done.state is DeliveryState.DELIVERED:
                self._count_delivered(rows, key)
        return True

    def _run(self, ledger: DeliveryLedger, rows: list[Row]) -> tuple[DeliveryKey, ...]:
        """The due entry and the comments pasted with it (:mod:`~the_loop.intake.runs`):
        the due entry alone for an agent that says what it received, which takes one
        paste per turn and is given each on its word."""
        if self._confirming() or self.session.harness in CONFIRMING_HARNESSES:
            due = ledger.due  # also while its hook log is still empty: never a run
            return (due.comment_id,) if due is not None else ()
        limit = self.settings.max_deliveries_per_hour
        times = [float(r["at"]) for r in rows if isinstance(r.get("at"), int | float)]
        recent = breaker(times, now=self.ports.clock(), max_per_hour=limit).recent
        return run_of(
            ledger,
            waiting=(self.waiting or set()) - self.attempted,
            allowance=max(1, limit - recent),
            text=lambda key: _text(rows, key),
        )

    def _may_paste(self, rows: list[Row]) -> bool:
        """Whether a paste may go in now: no stop asked, the breaker closed, the item not
        over its budget (another reader may have found it so since this one looked), and
        the agent taking a paste (no dialog, no start, no exit)."""
        if self.intake.stopping() or self._breaker_open(rows):
            return False
        if _over_budget(self.polls.value(self.ref, BUDGET_KEY)):
            return False
        return self._agent_takes_a_paste()

    def _settle_left(self, ledger: DeliveryLedger) -> bool:
        """Settle what an attempt left: a crash's ``pending`` against the pane's mark, then
        a paste that awaits the agent's word. False while that word is still awaited."""
        if ledger.pending:
            mark = self.ports.pane_mark(self.target)
            ledger = self._settle(ledger, ledger.resolve(mark, max_retries=self._retries))
        return not ledger.pasted or self._confirm(ledger, self.polls.deliveries(self.ref))

    def _count_delivered(self, rows: list[Row], key: DeliveryKey) -> None:
        self.intake.counts.delivered += 1
        author = _author(rows, key)
        check = _author(rows, key, "check")  # a CI paste's check name
        self.intake.counts.actions.append(Action("delivered", self.ref.ref, author, check, key))

    def _confirming(self) -> bool:
        """Whether this agent says what it received (its paste waits for its word)."""
        receipt = self.ports.receipt
        return receipt is not None and receipt(self.session, "", 0.0) is not None

    def _confirm(self, ledger: DeliveryLedger, rows: list[Row]) -> bool:
        """Settle the paste that awaits the agent's word: ``delivered`` once its
        ``UserPromptSubmit`` holds the text; back to ``waiting`` (or given up) once the
        agent sat idle for :data:`DROPPED_AFTER_SECONDS` after it without taking it.
        True when nothing awaits the agent's word any more."""
        receipt, ports = self.ports.receipt, self.ports
        [entry] = ledger.pasted[:1]
        key = entry.comment_id
        row: Row = next((r for r in rows if str(r.get("id")) == str(key)), Row())
        since = float(row.get("tried", 0) or 0)
        took = receipt(self.session, _text(rows, key), since) if receipt is not None else None
        if took is None or took:
            store_ledger(self.polls, self.ref, ledger.received(key), ports.clock())
            self._emit_delivered(key, entry.attempts)
            self._count_delivered(rows, key)
            return True
        state = ports.agent(self.session) if ports.agent is not None else None
        quiet_since = max(since, state.since if state is not None else 0.0)
        exited = state is not None and state.state == EXITED  # it ended without taking it
        if state is None or (state.state != IDLE and not exited):
            return False
        if not exited and ports.clock() - quiet_since < DROPPED_AFTER_SECONDS:
            return False
        if state.typed and not exited:
            if not box_holds(state.typed, _text(rows, key)):
                return False  # a person's words stand in its box: the paste waits for them
            return self._submit(ledger, key, row)  # its Enter was lost: never paste again
        resolution = ledger.dropped(key, max_retries=self._retries)
        ports.emit("poll.paste_dropped", "warning", work_item=self.ref.ref, key=str(key))
        self._settle(ledger, (resolution,))
        return True

    def _agent_takes_a_paste(self) -> bool:
        """Whether the agent takes a paste now (:attr:`AgentState.takes_a_paste`; a
        reader that cannot ask pastes, as before agents were read). An agent whose state
        cannot be told gets nothing: a comment is never the keystroke that answers a
        dialog."""
        agent = self.ports.agent
        if agent is None:
            return True
        state = agent(self.session)
        return state is not None and state.takes_a_paste

    def _submit(self, ledger: DeliveryLedger, key: DeliveryKey, row: Row) -> bool:
        """Press Enter on the paste that waits in the agent's input box (its Enter was
        lost), at most :data:`MOST_SUBMITS` times; then it is given up, said on the ticket.
        False: its word is awaited again. Nothing is pasted twice into a box that holds
        it."""
        ports, submits = self.ports, int(row.get("submits", 0) or 0)
        if ports.submit is None:
            return False
        if submits >= MOST_SUBMITS:
            self._settle(ledger, (ledger.stuck(key),))
            return True
        try:
            ports.submit(self.target)
        except TheLoopError as error:
            ports.warn(f"{self.ref.ref}: could not submit what waits in the agent's box: {error}")
            return False

        def change(stored: Ledger) -> None:
            rows = _rows(stored)
            for each in rows:
                if str(each.get("id")) == str(key):
                    each["submits"] = submits + 1
                    each["tried"] = ports.clock()  # its turn comes after this Enter
            stored[DELIVERIES] = rows

        self.polls.change(self.ref, change)
        ports.emit("poll.paste_submitted", work_item=self.ref.ref, key=str(key))
        return False

    @property
    def _retries(self) -> int:
        return self.settings.max_retries

    def _attempt(
        self, ledger: DeliveryLedger, keys: tuple[DeliveryKey, ...], rows: list[Row]
    ) -> DeliveryLedger:
        """One attempt at ``keys`` (one entry, or a run pasted together): pending →
        paste+mark → delivered (or back to waiting, or given up), each entry alike."""
        ports, ref, last = self.ports, self.ref, keys[-1]
        ports.checkpoint("before-pending")
        if len(keys) == 1:
            begun = ledger.begin(last, max_retries=self._retries)
        else:
            begun = ledger.begin_run(keys, max_retries=self._retries)
        store_ledger(self.polls, ref, begun, ports.clock())
        ports.checkpoint("after-pending")
        attempt = _attempts(begun, last)
        text = SEPARATOR.join(_text(rows, key) for key in keys)
        entry = begun.entry(last)
        number = entry.begun if entry is not None else 0
        buffer = f"{BUFFER_PREFIX}{ref.slug}-{last}-{attempt}"
        delivery = Delivery(last, text, buffer, number)
        try:
            ports.deliver(self.session, delivery)
        except TheLoopError as error:
            named = f"comment {last}" if len(keys) == 1 else f"comments {', '.join(map(str, keys))}"
            ports.warn(f"{ref.ref}: could not paste {named}: {error}")
            failed = (begun.paste_failed(key, max_retries=self._retries) for key in keys)
            return self._settle(begun, tuple(failed))
        # The paste and the mark are one tmux command list, run by the server as one unit:
        # no instant lies between them, so "after the paste" is "after the mark".
        ports.checkpoint("after-paste")
        ports.checkpoint("after-mark")
        confirming, done = self._confirming(), begun
        for key in keys:  # delivered once the agent says it took it, when it says
            done = done.pasted_in(key) if confirming else done.delivered(key)
        store_ledger(self.polls, ref, done, ports.clock())
        if not confirming:
            for key in keys:
                self._emit_delivered(key, _attempts(done, key))
        ports.checkpoint("after-delivered")
        return done

    def _emit_delivered(self, key: DeliveryKey, attempt: int, **found: str) -> None:
        """The event of a paste that reached the pane: a comment's, a review's, a check's,
        a continue's (``resolved="marked"``: a crashed attempt's, found by its mark)."""
        emit, ref = self.ports.emit, self.ref.ref
        if isinstance(key, int):
            emit("poll.comment_delivered", work_item=ref, comment_id=key, attempt=attempt, **found)
        elif key.startswith("review-"):
            emit("poll.review_delivered", work_item=ref, key=key, attempt=attempt, **found)
        elif key.startswith("limit-"):
            emit("session.limit_continued", work_item=ref, key=key, attempt=attempt, **found)
        elif key.startswith("spec-"):
            emit("spec.pasted", work_item=ref, key=key, attempt=attempt, **found)
        else:
            emit("poll.ci_failure_delivered", work_item=ref, key=key, attempt=attempt, **found)

    def _settle(
        self, ledger: DeliveryLedger, resolutions: tuple[Resolution, ...]
    ) -> DeliveryLedger:
        """Write ``resolutions``; each give-up posts one marked comment and emits its event."""
        settled = ledger.apply(resolutions, confirming=self._confirming())
        store_ledger(self.polls, self.ref, settled, self.ports.clock())
        for resolution in resolutions:
            if resolution.verdict is Verdict.GIVE_UP:
                self._give_up_notice(resolution)
            elif resolution.verdict is Verdict.DELIVERED and not self._confirming():
                # a crash's paste, found in the pane
                entry = settled.entry(resolution.comment_id)
                self._emit_delivered(
                    resolution.comment_id, entry.attempts if entry else 0, resolved="marked"
                )
        return settled

    def _give_up_notice(self, resolution: Resolution) -> None:
        body = (
            f"{AGENT_COMMENT_MARKER}\nthe-loop gave up delivering comment "
            f"{resolution.comment_id} to the agent: {resolution.why}."
        )
        self._post(body)
        self.ports.emit(
            "poll.comment_given_up",
            "warning",
            work_item=self.ref.ref,
            comment_id=resolution.comment_id,
            why=str(resolution.why),
        )

    def _breaker_open(self, rows: list[Row]) -> bool:
        """True when the session had its hour's deliveries; the first time, a notice and an
        event."""
        ref, polls, limit = self.ref, self.polls, self.settings.max_deliveries_per_hour
        times = [float(r["at"]) for r in rows if isinstance(r.get("at"), int | float)]
        state = breaker(times, now=self.ports.clock(), max_per_hour=limit)
        noticed = any(r.get("breaker") for r in rows)
        if not state.open:
            if noticed:
                polls.change(ref, _mark_breaker(False))
            return False
        if not noticed:
            polls.change(ref, _mark_breaker(True))
            body = (
                f"{AGENT_COMMENT_MARKER}\nthe-loop is holding further comments for this "
                f"session: {state.recent} were delivered within the hour "
                f"(polling.maxDeliveriesPerHour is {limit})."
            )
            self._post(body)
            self.ports.emit("poll.breaker_open", "warning", work_item=ref.ref, recent=state.recent)
        return True

    def _post(self, body: str) -> None:
        try:
            posted = self.ports.github.post_comment(self.ref, body)
        except TheLoopError as error:
            self.ports.warn(f"{self.ref.ref}: could not post a notice: {error}")
            return
        if posted is not None:
            self.ports.posted.remember_posted(posted)


def _text(rows: list[Row], comment_id: DeliveryKey) -> str:
    """The text its row keeps while undelivered (``""`` when there is none)."""
    texts = (str(r.get("text", "")) for r in rows if str(r.get("id")) == str(comment_id))
    return next(texts, "")


def _author(rows: list[Row], comment_id: DeliveryKey, key: str = "by") -> str:
    """Who wrote the comment (or the row's ``key``), as its row keeps it (``""`` for a row
    of an older release)."""
    authors = (str(r.get(key, "")) for r in rows if str(r.get("id")) == str(comment_id))
    return next(authors, "")


def _attempts(ledger: DeliveryLedger, comment_id: DeliveryKey) -> int:
    entry = ledger.entry(comment_id)
    return entry.attempts if entry is not None else 0


def _mark_breaker(open_now: bool) -> Callable[[Ledger], None]:
    def change(stored: Ledger) -> None:
        rows = _rows(stored)
        for row in rows:
            row.pop("breaker", None)
        if open_now and rows:
            rows[-1]["breaker"] = True
        stored[DELIVERIES] = rows

    return change


__all__ = ["DELIVERED_MARK", "drain", "ledger_of", "store_ledger"]
