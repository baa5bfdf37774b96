"""``the-loop poll [--once] | poll status | poll stop``: watch GitHub and close the loop.

One cycle (``--once``) or the daemon (a cycle every ``polling.intervalSeconds`` from
cycle start, or ``polling.reconcileSeconds`` beside a webhook receiver that counts, the
config re-read each cycle) under an exclusive ``flock`` on
``<root>/locks/daemons/poll.lock`` (:class:`DaemonLock`), which a removed ``poll.pid``
does not open. The cycle itself is :func:`the_loop.polling.cycle.run_cycle`.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from the_loop.commands.common import Context, format_parent, load_context, state_dir_parent, warn
from the_loop.commands.poll_backoff import last_cycle, saved_backoff, status_waits, waiting_result
from the_loop.commands.poll_report import (
    daemon_line,
    did_something,
    new_failures,
    report_result,
    status_lines,
)
from the_loop.commands.render import Result, progress
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.dispatch.daemons import DaemonLock, daemon_pid, poller_files, stop_holder
from the_loop.errors import TheLoopError, UsageError
from the_loop.fsio import write_json
from the_loop.github.backoff import Backoffs

STOP_TIMEOUT_SECONDS = 30.0
#: Test-only: the delivery step at which the poller kills itself (the crash proof).
CRASH_AT_VARIABLE = "THE_LOOP_POLL_CRASH_AT"
#: Test-only: ``<step>:<file>``, the step at which the poller pauses for a stop request.
PAUSE_AT_VARIABLE = "THE_LOOP_POLL_PAUSE_AT"
PAUSE_TIMEOUT_SECONDS = 60.0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``poll`` and its ``status`` and ``stop`` actions."""
    parents = [state_dir_parent(), format_parent()]
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "poll",
        parents=parents,
        help="watch GitHub: run keyword commands, deliver comments, close finished sessions",
        description="Poll the configured repositories: run the control keywords of authorized "
        "people, paste every other new comment into the live agent's pane exactly once, and "
        "close sessions whose ticket closed. Without --once, a cycle every "
        "polling.intervalSeconds until SIGTERM or SIGINT.",
    )
    parser.add_argument("--once", action="store_true", help="run one cycle and exit")
    parser.set_defaults(func=run_poll, action=None)
    actions = parser.add_subparsers(dest="action", metavar="<action>")
    status = actions.add_parser(
        "status", parents=parents, help="say whether a poller runs, and its last cycle"
    )
    status.set_defaults(func=run_status)
    stop = actions.add_parser("stop", parents=parents, help="stop the running poller")
    stop.set_defaults(func=run_stop)
    return parser


def run_poll(args: argparse.Namespace) -> Result:
    """One cycle with ``--once``; else the daemon until a signal. SIGTERM or SIGINT let
    the current item finish, then the poller exits 0."""
    context = load_context(args)
    _check_config(context)
    with _holding(context) as lock, _stopping_on_signals() as stop:
        if args.once:
            backoffs = saved_backoff(context)
            if backoffs.token.seconds_left(time.time()) > 0:
                return waiting_result(backoffs.token)
            report, _ = _one_cycle(context, stop, backoffs)
            if stop():
                stop.emit_stopped(context, cycles=1, cut_short=bool(report["stopped"]))
            return report_result(report)
        return _daemon(args, stop, lock)


def _check_config(context: Context) -> None:
    """Exit 2 with nothing to watch or no token; warn when nobody may command."""
    from the_loop.adapters.poll_factory import poll_settings
    from the_loop.commands.poll_cycle import github_token
    from the_loop.github.poster import TOKEN_ACCESS, token_sources

    settings = poll_settings(context.config)
    if not settings.repositories:
        raise UsageError("polling.repositories is empty: there is nothing to poll")
    if not github_token(context):
        sources = token_sources(context.config.get_str("integrations.github.tokenEnv", ""))
        raise UsageError(
            f"no GitHub token: the-loop read {sources} and found none set, so it sent no "
            f"request; export one there ({TOKEN_ACCESS})"
        )
    if settings.intake.policy.authorized.nobody:
        warn("routing.authorizedUsers is empty: no comment can command a session")


@contextmanager
def _holding(context: Context) -> Generator[DaemonLock]:
    lock = DaemonLock(poller_files(context.layout))
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


class StopRequest:
    """Set by SIGTERM or SIGINT: the cycle finishes its current item, then returns.

    Calling it says whether a stop was asked for (the cycle's ``should_stop`` port).
    """

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.signal_name = ""

    def __call__(self) -> bool:
        return self.asked.is_set()

    def ask(self, signal_name: str) -> None:
        self.signal_name = self.signal_name or signal_name
        self.asked.set()

    def emit_stopped(self, context: Context, *, cycles: int, cut_short: bool) -> None:
        """``poll.stopped``: the signal, and whether it ended a cycle early."""
        _stores(context).events.emit(
            "poll.stopped", cycles=cycles, signal=self.signal_name, cut_short=cut_short
        )


@contextmanager
def _stopping_on_signals() -> Generator[StopRequest]:
    """SIGTERM and SIGINT ask the poller to stop; a second one has its usual effect."""
    stop = StopRequest()
    previous: dict[int, Any] = {}

    def on_signal(signum: int, _frame: Any) -> None:
        stop.ask(signal.Signals(signum).name)
        signal.signal(signum, previous.get(signum, signal.SIG_DFL))

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, on_signal)
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _one_cycle(
    context: Context, stop: StopRequest, backoffs: Backoffs | None = None
) -> tuple[dict[str, Any], Backoffs]:
    from the_loop.commands.poll_cycle import one_cycle

    hook = _test_hook(stop)
    report, after = one_cycle(context, checkpoint=hook, should_stop=stop, backoffs=backoffs)
    write_json(context.layout.local_dir / "poll-status.json", report)
    return report, after


def _test_hook(stop: StopRequest) -> Any:
    """The checkpoint of :data:`CRASH_AT_VARIABLE` (SIGKILL at a step) and of
    :data:`PAUSE_AT_VARIABLE` (``<step>:<file>``: at the step's first visit, create the
    file and wait for a stop request). Both exist for the tests only."""
    crash_at = os.environ.get(CRASH_AT_VARIABLE, "")
    pause_at, _, pause_file = os.environ.get(PAUSE_AT_VARIABLE, "").partition(":")
    paused: list[str] = []

    def checkpoint(at: str) -> None:
        if crash_at and at == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if pause_at and at == pause_at and pause_file and not paused:
            paused.append(at)
            Path(pause_file).touch()
            stop.asked.wait(PAUSE_TIMEOUT_SECONDS)

    return checkpoint


def _daemon(args: argparse.Namespace, stop: StopRequest, lock: DaemonLock) -> Result:
    """A cycle every interval from cycle start, until a stop request (exit 0); beside a
    webhook receiver that counts, every ``polling.reconcileSeconds`` (:mod:`poll_reconcile`)."""
    from the_loop.adapters.poll_factory import interval_seconds
    from the_loop.commands.poll_reconcile import Reconciler
    from the_loop.commands.poll_tend import keep_budgets, tend_agents, tending

    cycles, cut_short, reconciler = 0, False, Reconciler()
    context = load_context(args)
    backoffs = saved_backoff(context)
    _stores(context).events.emit("poll.started", interval_seconds=interval_seconds(context.config))
    stop.asked.wait(backoffs.token.seconds_left(time.time()))  # the last rate limit holds
    while not stop():
        started = time.monotonic()
        context = load_context(args)  # the config is re-read every cycle
        wait = interval_seconds(context.config)
        try:
            report, backoffs = _one_cycle(context, stop, backoffs)
            wait, cut_short = float(report["next_cycle_in"]), bool(report["stopped"])
            _say_cycle(report)
        except TheLoopError as error:
            warn(f"poll: the cycle failed: {error}")
        cycles += 1
        held = partial(_wait_holding, lock, stop, context=context)
        tend, quick = partial(tend_agents, context, stop), partial(keep_budgets, context, stop)
        sleep = tending(held, tend, stop, quick=quick)
        reconciler.wait(context, started=started, normal=wait, sleep=sleep, stop=stop)
    stop.emit_stopped(context, cycles=cycles, cut_short=cut_short)
    return Result(
        items=({"cycles": cycles},), text=lambda: (f"poll: stopped after {cycles} cycles",)
    )


def _say_cycle(report: dict[str, Any]) -> None:
    """The daemon's stderr: a line for a cycle that did something, one per failure."""
    if did_something(report):
        progress(daemon_line(report))
    for failure in new_failures(report):
        warn(f"poll: {failure}")


#: How often a waiting daemon checks that its pidfile and pid are still there.
LOCK_CHECK_SECONDS = 2.0


def _wait_holding(lock: DaemonLock, stop: StopRequest, seconds: float, *, context: Context) -> None:
    """Wait ``seconds`` or until a stop, checking every few seconds: a pid or a pidfile
    removed or replaced by a file nobody locks is written again (a pidfile said on stderr
    and in the log); a pidfile an older poller locks now ends this one (exit 1)."""
    deadline = time.monotonic() + seconds
    while True:
        if lock.check():
            pidfile = lock.files.pidfile
            warn(f"poll: {pidfile} was removed or replaced; this poller holds it again")
            _stores(context).events.emit("poll.pidfile_restored", "warning", pidfile=str(pidfile))
        left = deadline - time.monotonic()
        if left <= 0 or stop.asked.wait(min(left, LOCK_CHECK_SECONDS)):
            return


def _stores(context: Context) -> Stores:
    return open_stores(context, source="poll")


def run_status(args: argparse.Namespace) -> Result:
    """Running or not (by the lock), its pid, the last cycle's report, the webhook
    receiver it reconciles behind, and who backs off: the token's rate limit (every
    repository) or a repository for its own failures."""
    from the_loop.commands.poll_reconcile import status_reconciling

    context = load_context(args)
    pid = daemon_pid(poller_files(context.layout))
    last = last_cycle(context)
    waits, wait_lines = status_waits(last)
    behind, behind_lines = status_reconciling(context, running=pid is not None)
    item = {"running": pid is not None, "pid": pid, "lastCycle": last, **behind, **waits}
    line = f"poll: running (pid {pid})" if pid is not None else "poll: not running"
    return Result(
        items=(item,), text=lambda: (line, *status_lines(last), *behind_lines, *wait_lines)
    )


def run_stop(args: argparse.Namespace) -> Result:
    """Signal the lock's holder and wait for the lock; exit 1 after the timeout."""
    context = load_context(args)
    pid = stop_holder(poller_files(context.layout), timeout=STOP_TIMEOUT_SECONDS)
    if pid is None:
        return Result(items=({"stopped": False, "pid": None},), text=lambda: ("poll: not running",))
    return Result(
        items=({"stopped": True, "pid": pid},), text=lambda: (f"poll: stopped pid {pid}",)
    )


__all__ = ["add_parser", "open_dispatcher"]
