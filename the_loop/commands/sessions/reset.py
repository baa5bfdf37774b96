"""``the-loop sessions reset``: forget everything this machine remembers about work items.

Validation first (argparse parses every ref before anything is touched), two
warnings, then ``reset_work_item`` per item with a close callable that builds
the dispatcher only when a live session is actually found, never on a dry run.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import format_parent, warn, work_item_type
from the_loop.commands.render import Result
from the_loop.errors import EXIT_FAILED, EXIT_OK, TheLoopError, describe_error

if TYPE_CHECKING:
    from the_loop.commands.common import Context
    from the_loop.commands.stores import Stores
    from the_loop.dispatch.daemons import RunningDaemon
    from the_loop.dispatch.disposal import CheckoutDisposal
    from the_loop.dispatch.factory import Adapters
    from the_loop.ref import WorkItemRef
    from the_loop.reset import ResetOutcome

NOTHING_AT_ALL = "nothing to reset: this machine holds no work-item state"


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``reset``."""
    parser: argparse.ArgumentParser = actions.add_parser(
        "reset",
        parents=[*parents, format_parent()],
        help="forget everything this machine remembers about work items",
        description="End a live session (the configured close path), delete the session "
        "record, and clear the control, poll, pullRequests and channels sections of the "
        "portable record. Posts nothing to the ticket; appends one session.reset event per item.",
    )
    selector = parser.add_mutually_exclusive_group(required=True)
    selector.add_argument(
        "--work-item",
        dest="work_items",
        action="append",
        type=work_item_type,
        metavar="REF",
        help="a work item to reset (repeatable), e.g. github:octo/repo#15",
    )
    selector.add_argument(
        "--all", action="store_true", help="every work item this machine holds state for"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="report what would be removed; change nothing"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="remove a live item's checkout even when it holds uncommitted or unpushed work",
    )
    parser.set_defaults(func=run)


def _unique(refs: list[WorkItemRef]) -> list[WorkItemRef]:
    seen: set[str] = set()
    result: list[WorkItemRef] = []
    for ref in refs:
        if ref.ref not in seen:
            seen.add(ref.ref)
            result.append(ref)
    return result


def warnings_for(context: Context) -> list[str]:
    """The two warnings of the design: a running daemon; arming not required."""
    from the_loop.dispatch.daemons import pidfile_problems, running_daemons

    found = [
        f"the {daemon.name} looks like it is running ({_how_found(daemon)}); "
        + _WHY_STOP.get(daemon.name, _WRITES_BACK)
        for daemon in running_daemons(context.layout)
    ]
    found.extend(
        f"cannot tell whether a daemon is running: {problem}"
        for problem in pidfile_problems(context.layout)
    )
    config = context.config
    arming_off = not config.get_bool("routing.control.enabled") or not config.get_bool(
        "routing.control.requireStartCommand"
    )
    if arming_off and config.get_str("routing.spawnOnUnmatched") != "never":
        found.append(
            "requireStartCommand is off and spawnOnUnmatched is "
            f"{config.get_str('routing.spawnOnUnmatched')!r}: a reset item is first-sight "
            "again and may re-spawn on the next poll cycle instead of waiting for a start"
        )
    return found


#: Why a running daemon matters to a reset: the poller's and the receiver's words.
_WRITES_BACK = (
    "it can write in-flight poll state back after this reset — stop it first for a clean slate"
)
#: The API server writes no record, but shows whoever reads it what it read.
_WHY_STOP = {
    "API server": "it writes no record, but a board open on it shows the items this reset "
    "removes until its next read — stop it first if nobody should see them",
}


def _how_found(daemon: RunningDaemon) -> str:
    """Which evidence says the daemon runs: the lock it holds, or a live pid."""
    if daemon.evidence == "lock":
        return f"pid {daemon.pid} holds the lock on {daemon.path}"
    who = "a poller of an older release" if daemon.name == "poller" else "another program"
    return (
        f"{daemon.path} names the live pid {daemon.pid}, which holds no lock on it: "
        f"{who}, or a pid since reused"
    )


def run(args: argparse.Namespace) -> Result:
    """Handle ``sessions reset``."""
    from the_loop.commands.common import load_context
    from the_loop.commands.stores import open_stores

    context = load_context(args)
    stores = open_stores(context)
    from the_loop.commands.sessions.records import reading_every_record

    # Selecting and previewing read each record once; the first write ends the snapshot.
    with reading_every_record(stores):
        return _run(args, context, stores)


def _run(args: argparse.Namespace, context: Context, stores: Stores) -> Result:
    from the_loop.commands.sessions.reset_left import left_in_tmux, tmux_targets
    from the_loop.commands.sessions.reset_report import reported
    from the_loop.dispatch.factory import Adapters

    for warning in warnings_for(context):
        warn(warning)
    _refuse_an_unwritable_log(context, dry_run=args.dry_run)
    items = _selected(args, stores)
    if not items:
        summary = {"dryRun": args.dry_run}
        return Result(summary=summary, errors=(NOTHING_AT_ALL,), exit_code=EXIT_FAILED)
    # One tmux runner and workspace, built on first use.
    adapters = Adapters(context.config, owner=str(context.layout.root))
    targets = tmux_targets(stores.registry, items)  # before the records go
    outcomes, problems, checkouts = _reset_all(args, context, stores, adapters, items)
    if args.dry_run:
        checkouts = _planned_checkouts(args, context, stores, adapters, outcomes)
    keep_live = context.config.get_bool("routing.tmux.keepSessionOnClose")
    left = left_in_tmux(adapters, targets, dry_run=args.dry_run, keep_live=keep_live)
    failed = problems or not all(outcome.ok for outcome in outcomes)
    exit_code = EXIT_FAILED if failed else EXIT_OK
    return reported(
        outcomes, checkouts, problems, left=left, dry_run=args.dry_run, exit_code=exit_code
    )


def _refuse_an_unwritable_log(context: Context, *, dry_run: bool) -> None:
    """Say once, before anything is reset, that the log cannot take a ``session.reset`` event.

    A FIFO, a link or a directory at the log's place: a real run refuses (nothing is
    reset, rather than every item reset without its event); a dry run warns.
    """
    from the_loop.fsio import stranger_at

    stranger = stranger_at(context.layout.event_log)
    if stranger is None:
        return
    problem = f"{stranger.strerror}: no session.reset event can be appended to it"
    if not dry_run:
        raise TheLoopError(f"{problem}, so nothing was reset")
    warn(problem)


def _selected(args: argparse.Namespace, stores: Stores) -> list[WorkItemRef]:
    if args.all:
        from the_loop.reset import work_items_with_state

        return work_items_with_state(stores.registry, stores.store)
    return _unique(list(args.work_items))


def _reset_all(
    args: argparse.Namespace,
    context: Context,
    stores: Stores,
    adapters: Adapters,
    items: list[WorkItemRef],
) -> tuple[list[ResetOutcome], list[str], dict[str, tuple[CheckoutDisposal, ...]]]:
    """Reset every item in one store batch; then make every removal durable.

    Returns the outcomes, the problems of the batch's end (the deferred directory
    syncs), which concern no single item, and per ref what the close did with its
    checkouts. An item that raises gets that as its error; the others are still reset.
    """
    from the_loop.adapters.reset_close import LazyClose, RunningHarnesses
    from the_loop.commands.stores import open_dispatcher
    from the_loop.errors import describe_unexpected
    from the_loop.fsio import DirectorySyncs
    from the_loop.reset import ResetOutcome, reset_work_item

    def unavailable(problem: str) -> None:
        warn(f"cannot end live sessions ({problem}); resetting the records only")

    build = partial(open_dispatcher, context, stores, adapters)
    close = None if args.dry_run else LazyClose(build, unavailable, force=args.force)
    running = RunningHarnesses(adapters)
    actor = context.actor  # looked up once: it reads the password database
    syncs = DirectorySyncs()
    outcomes: list[ResetOutcome] = []
    problems: list[str] = []
    try:
        with stores.store.batch():
            for item in items:
                try:
                    outcome = reset_work_item(
                        item,
                        registry=stores.registry,
                        store=stores.store,
                        close=close,
                        dry_run=args.dry_run,
                        actor=actor,
                        events=stores.events,
                        syncs=syncs,
                        still_running=running,
                    )
                except Exception as error:  # a bug: this item's error; the others go on
                    problem = f"not reset: {describe_unexpected(error)}"
                    outcome = ResetOutcome(item.ref, errors=(problem,), dry_run=args.dry_run)
                outcomes.append(outcome)
    except OSError as error:
        problems.append(f"could not make the portable changes durable: {describe_error(error)}")
    try:
        syncs.flush()
    except OSError as error:
        problems.append(f"could not make the removals durable: {describe_error(error)}")
    return outcomes, problems, close.checkouts if close is not None else {}


def _planned_checkouts(
    args: argparse.Namespace,
    context: Context,
    stores: Stores,
    adapters: Adapters,
    outcomes: list[ResetOutcome],
) -> dict[str, tuple[CheckoutDisposal, ...]]:
    """For each live item on a dry run: what its close would do with each checkout, by
    the rule a real run applies (the same counts)."""
    from the_loop.dispatch.disposal import forced_by
    from the_loop.dispatch.settings import DispatchSettings
    from the_loop.dispatch.teardown import planned_disposals

    settings = DispatchSettings.from_config(context.config)
    live = [outcome for outcome in outcomes if outcome.was_live]
    if not live or settings.keep_checkout_on_close:
        return {}
    force = forced_by(args.force, settings.remove_dirty_checkouts)
    planned: dict[str, tuple[CheckoutDisposal, ...]] = {}
    for outcome in live:
        session = stores.registry.find_by_work_item(outcome.ref, include_closed=True)
        if session is not None:
            ref = session.work_item
            planned[outcome.ref] = planned_disposals(adapters.workspace, ref, session, force)
    return planned
