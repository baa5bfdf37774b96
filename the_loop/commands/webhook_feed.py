"""The receiver's processing side: what waits in the inbox, fed to the intake.

One thread of the ``webhook`` process. Each time a delivery is stored (and every few
seconds, and once at start, so what a crash or a restart left is taken), it reads the
pending deliveries in arrival order, translates them
(:mod:`~the_loop.webhook.translate`), opens the stores, a dispatcher and GitHub's reads
as one poll cycle does, and feeds them (:mod:`~the_loop.webhook.feed`); then it marks
what was handled processed and compacts the inbox. A repository whose round failed
keeps its deliveries for the next batch, after a pause that doubles to a minute; one
that failed :data:`MAX_ATTEMPTS` times is given up (an event: the poller reconciles it).
When the receiver stops, :meth:`Feeding.finish` lets it empty the inbox within a deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from the_loop.adapters.poll_factory import poll_settings, poll_wiring
from the_loop.commands.common import Context, warn
from the_loop.commands.poll_report import action_line
from the_loop.commands.render import progress
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.errors import TheLoopError
from the_loop.eventlog.log import EventLog
from the_loop.intake.intake import Intake
from the_loop.webhook.feed import FeedReport, feed
from the_loop.webhook.inbox import Inbox, InboxEntry
from the_loop.webhook.translate import Push, translate

#: The most deliveries one batch takes (the rest wait for the next, at once).
BATCH = 200
#: A batch's round failed this many times: its deliveries are given up.
MAX_ATTEMPTS = 5
#: The longest pause after a failed batch, and the look at the inbox when nothing came.
MAX_PAUSE_SECONDS = 60.0
IDLE_LOOK_SECONDS = 5.0


@dataclass
class InboxFeeder:
    """Feeds the inbox of ``context``'s state root to its intake until ``stopping`` is set."""

    context: Context
    inbox: Inbox
    token: str
    events: EventLog
    stopping: threading.Event
    checkpoint: Callable[[str], None] = lambda _step: None
    #: A bug's one line (its traceback appended to the crash log).
    on_bug: Callable[[BaseException], str] | None = None
    #: Set once nothing more can arrive: the loop ends when the inbox is empty or a batch fails.
    draining: threading.Event = field(default_factory=threading.Event)
    #: Whether the last batch's round failed (its deliveries kept).
    failed: bool = False
    _failures: dict[str, int] = field(default_factory=dict[str, int])

    def run(self) -> None:
        """The thread's loop: a batch at start, then one each time deliveries arrive; once
        :attr:`draining`, batch after batch until the inbox is empty or one fails."""
        pause = 0.0
        while not self.stopping.is_set():
            more, self.failed = self._batch()
            if more:
                continue
            if self.draining.is_set():
                if self.failed or not self.inbox.pending():
                    return
                continue
            pause = min(max(pause * 2, 1.0), MAX_PAUSE_SECONDS) if self.failed else 0.0
            self.inbox.arrived.wait(pause or IDLE_LOOK_SECONDS)

    def _batch(self) -> tuple[bool, bool]:
        """:meth:`process`, a failure said in one line (and a bug's traceback logged)."""
        try:
            return self.process()
        except (TheLoopError, OSError) as error:  # the next batch tries again
            warn(f"webhook: the inbox was not processed: {error}")
        except Exception as error:  # a bug: one line, the traceback in the crash log
            said = self.on_bug(error) if self.on_bug is not None else repr(error)
            warn(f"webhook: the inbox was not processed: {said}; trying again after a pause")
        return False, True

    def process(self) -> tuple[bool, bool]:
        """One batch: whether more wait beyond it, and whether a round failed."""
        self.inbox.arrived.clear()
        entries = self.inbox.pending()
        if not entries:
            return False, False
        batch = entries[:BATCH]
        pushes = [push for push in map(self._push, batch) if push is not None]
        report = self._feed(pushes)
        for push, reason in report.ignored:
            self.events.emit(
                "webhook.not_acted",
                delivery=push.delivery_id,
                github_event=push.event,
                action=push.action,
                reason=reason,
            )
        done = set(report.processed) | self._given_up(pushes, report)
        self.inbox.mark_processed(done)
        self.inbox.compact()
        return len(entries) > len(batch) and not self.stopping.is_set(), bool(report.failed)

    def _push(self, entry: InboxEntry) -> Push | None:
        try:
            delivery = self.inbox.read(entry)
        except FileNotFoundError:
            return None  # compacted since it was listed: processed
        except ValueError as error:  # its line is not that delivery any more: said, then dropped
            return Push(
                entry.delivery_id, entry.event, "", "ignored", reason=f"unreadable: {error}"
            )
        return translate(delivery.delivery_id, delivery.event, delivery.payload)

    def _feed(self, pushes: list[Push]) -> FeedReport:
        context = self.context
        settings = poll_settings(context.config)
        stores = open_stores(context, source="webhook")
        dispatcher = open_dispatcher(context, stores)
        wiring = poll_wiring(
            context.config,
            stores,
            dispatcher,
            token=self.token,
            warn=warn,
            checkpoint=self.checkpoint,
            should_stop=self.stopping.is_set,
        )
        with wiring as ports:
            intake = Intake(settings.intake, ports.intake)
            report = feed(pushes, settings.repositories, ports.reader, intake)
            if not report.failed:
                ports.etags.flush()
        counts = intake.counts
        for action in counts.actions:  # what a push did, as the poll daemon says it
            progress(f"webhook: {action_line(action.to_dict())}")
        for name, error in report.failed.items():
            warn(f"webhook: {name}: {error}")
        for failure in counts.failed:  # an item's own failure; the poller reconciles it
            warn(f"webhook: {failure}")
        self.events.emit(
            "webhook.processed",
            deliveries=len(report.processed),
            ignored=len(report.ignored),
            delivered=counts.delivered,
            commands=counts.commands,
            reviews=counts.reviews,
            ci_failures=counts.ci_failures,
            closed=counts.closed,
            failed=sorted(report.failed),
            errors=len(counts.failed),
            requests=ports.client.stats.requests,
        )
        return report

    def _given_up(self, pushes: list[Push], report: FeedReport) -> set[str]:
        """The deliveries of a failed repository that failed too often: given up."""
        given: set[str] = set()
        failed = {name.casefold(): error for name, error in report.failed.items()}
        for push in pushes:
            error = failed.get(push.repository.casefold())
            if error is None:
                self._failures.pop(push.delivery_id, None)
                continue
            attempts = self._failures[push.delivery_id] = (
                self._failures.get(push.delivery_id, 0) + 1
            )
            if attempts >= MAX_ATTEMPTS:
                given.add(push.delivery_id)
                self._failures.pop(push.delivery_id, None)
                self.events.emit(
                    "webhook.given_up",
                    "warning",
                    delivery=push.delivery_id,
                    github_event=push.event,
                    attempts=attempts,
                    error=error,
                )
        return given


@dataclass(frozen=True)
class Feeding:
    """The processing side's thread, running ``feeder``."""

    feeder: InboxFeeder
    thread: threading.Thread

    def finish(self, seconds: float) -> str:
        """Let the feeder take what the inbox holds until it is empty, a batch fails or
        ``seconds`` pass, then :meth:`stop` it. Why deliveries may be left: ``""`` (none
        should be), ``failed`` or ``deadline``."""
        self.feeder.draining.set()
        self.feeder.inbox.arrived.set()
        self.thread.join(seconds)
        late = self.thread.is_alive()
        self.stop()
        if late:
            return "deadline"
        return "failed" if self.feeder.failed else ""

    def stop(self) -> None:
        """Stop the feeder after the item it is on; what it has not fed waits in the inbox."""
        self.feeder.stopping.set()
        self.feeder.inbox.arrived.set()
        self.thread.join()
