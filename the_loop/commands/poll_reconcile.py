"""The poller beside a webhook receiver: while one counts, the poller only reconciles.

A receiver counts when it holds the state root's pidfile lock and its status file
(``local/webhook-status.json``, written by that same process) says it runs with a secret
and has accepted a signed delivery since it started. Then the daemon's cycle stretches
to ``polling.reconcileSeconds``: pushes bring the news, and the poller finds what a
dropped one missed. It looks every ``polling.intervalSeconds`` whether the receiver
still counts, and once it does not, the next cycle runs at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from the_loop.adapters.poll_factory import interval_seconds, reconcile_seconds
from the_loop.commands.common import Context
from the_loop.commands.render import progress
from the_loop.commands.stores import open_stores
from the_loop.dispatch.daemons import daemon_pid, receiver_files
from the_loop.layout import StateLayout
from the_loop.webhook.status import read_status, status_path

#: The shortest time between two looks at the receiver during a stretched wait.
SHORTEST_LOOK_SECONDS = 0.1


def counting_receiver(holder: int | None, status: Mapping[str, Any] | None) -> int | None:
    """The pid of the receiver the poller reconciles behind, or None: ``holder`` holds
    the pidfile lock, ``status`` is the status file that very process wrote, it is not
    insecure (unsigned deliveries prove nothing) and it accepted at least one delivery."""
    if holder is None or holder <= 0 or status is None or status.get("pid") != holder:
        return None
    if status.get("insecure") or _count(status.get("accepted")) < 1:
        return None
    return holder


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def cycle_wait(normal: float, reconcile: float, *, receiver: int | None) -> float:
    """Seconds from a cycle's start to the next: ``normal`` (the interval, or longer for
    a rate limit or a back-off), stretched to ``reconcile`` while a receiver counts."""
    return max(normal, reconcile) if receiver is not None else normal


def changes(previous: int | None, current: int | None) -> tuple[tuple[str, int], ...]:
    """What to say when the receiver looked at changes: ``("ended", old pid)`` when the
    one reconciled behind is gone, ``("started", new pid)`` when one begins to count."""
    if previous == current:
        return ()
    ended = (("ended", previous),) if previous is not None else ()
    started = (("started", current),) if current is not None else ()
    return ended + started


def receiver_of(layout: StateLayout) -> int | None:
    """The receiver counting on ``layout``'s state root now (see :func:`counting_receiver`)."""
    return counting_receiver(
        daemon_pid(receiver_files(layout)), read_status(status_path(layout.local_dir))
    )


class Reconciler:
    """The daemon's view of the receiver, kept between cycles; says each change once,
    on stderr and in the event log (``poll.reconciling``, ``poll.reconcile_ended``)."""

    def __init__(
        self,
        look: Callable[[StateLayout], int | None] = receiver_of,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.receiver: int | None = None
        self._look = look
        self._clock = clock

    def look(self, context: Context) -> int | None:
        """The receiver counting now; a change from the last look is said."""
        current = self._look(context.layout)
        for change, pid in changes(self.receiver, current):
            self._say(context, change, pid)
        self.receiver = current
        return current

    def wait(
        self,
        context: Context,
        *,
        started: float,
        normal: float,
        sleep: Callable[[float], None],
        stop: Callable[[], bool],
    ) -> None:
        """Sleep until the next cycle (``started`` is its start, by ``time.monotonic``):
        ``normal`` seconds after it, or while a receiver counts up to
        ``polling.reconcileSeconds``, looking again every ``polling.intervalSeconds``
        and ending the wait as soon as the receiver no longer counts or a stop is asked.
        ``sleep`` waits (it returns early on a stop)."""
        if stop():
            return
        receiver = self.look(context)
        sleep(self._left(started + normal))
        stretched = cycle_wait(normal, reconcile_seconds(context.config), receiver=receiver)
        deadline = started + stretched
        step = max(interval_seconds(context.config), SHORTEST_LOOK_SECONDS)
        while receiver is not None and not stop() and self._left(deadline) > 0:
            receiver = self.look(context)
            if receiver is not None:
                sleep(min(step, self._left(deadline)))

    def _left(self, deadline: float) -> float:
        return max(deadline - self._clock(), 0.0)

    def _say(self, context: Context, change: str, pid: int) -> None:
        emit = open_stores(context, source="poll").events.emit
        if change == "started":
            seconds = reconcile_seconds(context.config)
            emit("poll.reconciling", receiver_pid=pid, seconds=seconds)
        else:
            seconds = interval_seconds(context.config)
            emit("poll.reconcile_ended", receiver_pid=pid)
        progress(change_line(change, pid, seconds))


def change_line(change: str, pid: int, seconds: float) -> str:
    """The daemon's stderr line for a change: the receiver began to count, or stopped."""
    receiver = f"poll: the webhook receiver (pid {pid})"
    if change == "started":
        return f"{receiver} runs: polling every {seconds:g} s to reconcile"
    return f"{receiver} stopped: polling every {seconds:g} s again"


def status_reconciling(context: Context, *, running: bool) -> tuple[dict[str, Any], list[str]]:
    """What ``poll status`` adds: ``reconcilingBehind``, the pid of the receiver a running
    poller reconciles behind (or None), and a line saying so."""
    receiver = receiver_of(context.layout) if running else None
    if receiver is None:
        return {"reconcilingBehind": None}, []
    line = change_line("started", receiver, reconcile_seconds(context.config))
    return {"reconcilingBehind": receiver}, [line]
