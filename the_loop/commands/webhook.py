"""``the-loop webhook [--insecure] | --print-setup | status | stop``: receive GitHub's pushes.

The receiver (:class:`the_loop.webhook.server.Receiver`, imported here alone) runs in the
foreground under an exclusive ``flock`` on ``<root>/locks/daemons/webhook.lock``, keeping every
accepted delivery in ``local/webhook-inbox/`` (decision 019).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import Context, format_parent, load_context, state_dir_parent, warn
from the_loop.commands.render import Result, progress
from the_loop.errors import UsageError

if TYPE_CHECKING:
    from the_loop.commands.webhook_feed import Feeding
    from the_loop.dispatch.daemons import DaemonLock
    from the_loop.eventlog.log import EventLog
    from the_loop.webhook.inbox import Inbox
    from the_loop.webhook.settings import ReceiverSettings

STOP_TIMEOUT_SECONDS = 30.0
DAEMON = "webhook receiver"
#: Why accepted deliveries were left in the inbox at a stop, as a phrase.
LEFT_BECAUSE = {
    "deadline": "not finished within webhook.finishSeconds ({seconds:g} s)",
    "failed": "a batch failed (said above)",
    "no-token": "no GitHub token to act on them",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``webhook`` and its ``status`` and ``stop`` actions."""
    parents = [state_dir_parent(), format_parent()]
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "webhook",
        parents=parents,
        help="receive GitHub's webhook deliveries and keep them in a durable inbox",
        description="Run the webhook receiver in the foreground until SIGTERM or SIGINT: each "
        "signed delivery GitHub POSTs to webhook.host:webhook.port/webhook.path is written to "
        "the inbox under local/ before it is answered 202, then fed to the same intake as the "
        "poller's (with a GitHub token: $GITHUB_TOKEN, or integrations.github.tokenEnv's).",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--insecure",
        action="store_true",
        help="run without a secret (no signature is checked); refused off a loopback address",
    )
    mode.add_argument(
        "--print-setup",
        action="store_true",
        help="print what to enter on GitHub and how to reach this machine; start nothing",
    )
    parser.set_defaults(func=run_webhook, action=None)
    actions = parser.add_subparsers(dest="action", metavar="<action>")
    status = actions.add_parser(
        "status", parents=parents, help="say whether a receiver runs, and what it received"
    )
    status.set_defaults(func=run_status)
    stop = actions.add_parser("stop", parents=parents, help="stop the running receiver")
    stop.set_defaults(func=run_stop)
    return parser


def _inbox(context: Context) -> Inbox:
    from the_loop.webhook.inbox import Inbox

    local = context.layout
    return Inbox(
        local.local_dir / "webhook-inbox", lock_path=local.local_locks_dir / "webhook-inbox.lock"
    )


def _status_path(context: Context) -> Path:
    from the_loop.webhook.status import status_path

    return status_path(context.layout.local_dir)


def receiver_settings(context: Context, *, insecure: bool) -> ReceiverSettings:
    """The receiver's settings from the config and the secret's variable. ``UsageError``
    (exit 2): no secret without ``--insecure``, or ``--insecure`` off a loopback address."""
    from the_loop.webhook.settings import ReceiverSettings, is_loopback

    config = context.config
    host, port = config.get_str("webhook.host"), int(config.get_float("webhook.port"))
    variable = config.get_str("webhook.secretEnv")
    secret = os.environ.get(variable, "")
    if insecure and not is_loopback(host):
        raise UsageError(
            f"--insecure is refused on {host}: unsigned deliveries are taken only on a "
            "loopback address (set webhook.host to 127.0.0.1, or set the secret)"
        )
    if not secret and not insecure:
        raise UsageError(
            f"no webhook secret: ${variable} (webhook.secretEnv) is unset or empty, so the "
            "receiver did not start; set it to the secret entered on GitHub "
            "(`the-loop webhook --print-setup`), or try it on a loopback address with --insecure"
        )
    if not secret:
        warn(
            f"webhook: --insecure: ${variable} is not set, so no signature is checked: "
            f"anyone who can reach {host}:{port} can put deliveries in the inbox"
        )
    # surrogateescape gives back the variable's own bytes, whatever the locale made of them
    key = secret.encode("utf-8", "surrogateescape") if secret else None
    return ReceiverSettings(host, port, config.get_str("webhook.path"), key)


def run_webhook(args: argparse.Namespace) -> Result:
    """The receiver until SIGTERM or SIGINT (exit 0), or ``--print-setup``."""
    context = load_context(args)
    if args.print_setup:
        from the_loop.commands.webhook_setup import setup_result

        return setup_result(context)
    settings = receiver_settings(context, insecure=args.insecure)
    from the_loop.dispatch.daemons import DaemonLock, receiver_files
    from the_loop.eventlog.log import EventLog

    events = EventLog(context.layout.event_log, source="webhook")
    lock = DaemonLock(receiver_files(context.layout))
    lock.acquire()
    try:
        return _serve(context, settings, lock, events, args)
    finally:
        lock.release()


def _serve(
    context: Context,
    settings: ReceiverSettings,
    lock: DaemonLock,
    events: EventLog,
    args: argparse.Namespace,
) -> Result:
    from the_loop.webhook.server import Receiver

    def check_lock() -> None:
        if lock.check():
            pidfile = lock.files.pidfile
            warn(f"webhook: {pidfile} was removed or replaced; this receiver holds it again")
            events.emit("webhook.pidfile_restored", "warning", pidfile=str(pidfile))

    inbox = _inbox(context)
    receiver = Receiver(
        settings,
        inbox=inbox,
        events=events,
        status_file=_status_path(context),
        tick=check_lock,
    )
    host, port = receiver.bind()
    url = receiver.tally.snapshot()["url"]
    events.emit(
        "webhook.started",
        "warning" if settings.insecure else "info",
        host=host,
        port=port,
        path=settings.path,
        insecure=settings.insecure,
    )
    progress(f"webhook: listening on {url} (pid {os.getpid()}); the inbox is {inbox.directory}")
    feeding = _start_feeder(context, inbox, events, args)
    seconds = max(context.config.get_float("webhook.finishSeconds"), 0.0)
    try:
        receiver.serve(handle_signals=True)
        why = feeding.finish(seconds) if feeding is not None else "no-token"
    finally:
        if feeding is not None:  # what it is feeding ends at the next item; the rest waits
            feeding.stop()
    left = _say_left(inbox, events, why, seconds)
    counts = receiver.tally.counts
    events.emit(
        "webhook.stopped",
        signal=receiver.signal_name,
        accepted=counts["accepted"],
        duplicate=counts["duplicate"],
        rejected=counts["rejected"],
        left=left,
    )
    said = ", ".join(f"{value} {key}" for key, value in receiver.tally.counts.items())
    item = {"stopped": True, "signal": receiver.signal_name, "url": url, **receiver.tally.counts}
    return Result(items=(item,), text=lambda: (f"webhook: stopped ({said})",))


def _say_left(inbox: Inbox, events: EventLog, why: str, seconds: float) -> int:
    """How many accepted deliveries the inbox still holds at a stop; when any, one line
    and a ``webhook.left_in_inbox`` event say so (they wait for the next start)."""
    left = len(inbox.pending())
    if left:
        because = LEFT_BECAUSE.get(why, "not processed yet").format(seconds=seconds)
        warn(
            f"webhook: {left} accepted deliveries left in the inbox ({because}): the next "
            "start of the receiver acts on them"
        )
        events.emit("webhook.left_in_inbox", "warning", left=left, reason=why, seconds=seconds)
    return left


def _start_feeder(
    context: Context, inbox: Inbox, events: EventLog, args: argparse.Namespace
) -> Feeding | None:
    """The processing side in a thread of its own, or None (a line says why) without a
    GitHub token: the deliveries then wait in the inbox."""
    import threading

    from the_loop.commands.poll_cycle import github_token
    from the_loop.commands.webhook_feed import Feeding, InboxFeeder

    token = github_token(context)
    if not token:
        warn(
            "webhook: no GitHub token ($GITHUB_TOKEN, $GH_TOKEN, or integrations.github.tokenEnv's "
            "variable): deliveries are kept in the inbox and acted on once a receiver with a "
            "token runs"
        )
        return None
    from the_loop.commands.crash import report_bug

    feeder = InboxFeeder(
        context,
        inbox,
        token,
        events,
        threading.Event(),
        on_bug=lambda error: report_bug(error, args, sys.argv[1:]),
    )
    thread = threading.Thread(target=feeder.run, name="webhook-feed")
    thread.start()
    return Feeding(feeder, thread)


def run_status(args: argparse.Namespace) -> Result:
    """Running or not (by the lock), its pid and address, what it received since it
    started, the last delivery's time, and how many deliveries wait in the inbox."""
    from the_loop.dispatch.daemons import daemon_pid, receiver_files
    from the_loop.webhook.status import read_status

    context = load_context(args)
    pid = daemon_pid(receiver_files(context.layout))
    status = read_status(_status_path(context))
    pending = len(_inbox(context).pending())
    if status is not None and pid is not None and status.get("pid") != pid:
        status = None  # an earlier run's: the one running has not written its own yet
    item = {"running": pid is not None, "pid": pid, "status": status, "pending": pending}
    return Result(items=(item,), text=lambda: status_lines(pid, status, pending))


def status_lines(pid: int | None, status: Mapping[str, Any] | None, pending: int) -> list[str]:
    """``webhook status``'s lines."""
    if pid is None:
        lines = ["webhook: not running"]
        if status is not None:
            lines.append(
                f"webhook: the last receiver (pid {status.get('pid')}) ran on {status.get('url')} "
                f"from {status.get('startedAt')} to {status.get('stoppedAt') or 'its end'}: "
                f"{_counts(status)}"
            )
    elif status is None:
        lines = [f"webhook: running (pid {pid}); it has written no status yet"]
    else:
        lines = [
            f"webhook: running (pid {pid}) on {status.get('url')} since {status.get('startedAt')}"
            + (" without a secret (--insecure)" if status.get("insecure") else ""),
            f"webhook: since it started: {_counts(status)}",
        ]
    lines.append(f"webhook: {pending} deliveries in the inbox not processed yet")
    return lines


def _counts(status: Mapping[str, Any]) -> str:
    keys = ("accepted", "duplicate", "rejected", "ignored", "ping")
    said = ", ".join(f"{status.get(key, 0)} {key}" for key in keys)
    last = status.get("lastDeliveryAt")
    return said + (f"; last delivery at {last}" if last else "; no delivery yet")


def run_stop(args: argparse.Namespace) -> Result:
    """Signal the lock's holder and wait for the lock; exit 1 after the timeout (30 s more
    than ``webhook.finishSeconds``, the receiver's time to finish what it accepted)."""
    from the_loop.dispatch.daemons import receiver_files, stop_holder

    context = load_context(args)
    files = receiver_files(context.layout)
    finishing = max(context.config.get_float("webhook.finishSeconds"), 0.0)
    pid = stop_holder(files, timeout=STOP_TIMEOUT_SECONDS + finishing)
    if pid is None:
        text = ("webhook: not running",)
        return Result(items=({"stopped": False, "pid": None},), text=lambda: text)
    text = (f"webhook: stopped pid {pid}",)
    return Result(items=({"stopped": True, "pid": pid},), text=lambda: text)
