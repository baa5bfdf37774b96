"""``sessions cleanup``: release every local resource of a work item.

Every tmux session of the item is ended (the transcripts kept under new names too), its
checkout(s) removed and its session record forgotten, whatever the retention settings;
``--dry-run`` only says what would go.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from the_loop.adapters.release import clean_up, planned_cleanup
from the_loop.commands.common import format_parent, load_context, work_item_parent
from the_loop.commands.render import Result
from the_loop.commands.sessions.checkout_lines import checkout_line
from the_loop.commands.sessions.known import require_known
from the_loop.commands.sessions.lifecycle import add_force
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.dispatch.tmux import is_kept_transcript as is_kept
from the_loop.errors import EXIT_FAILED, EXIT_OK
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.cleanup import CleanupOutcome


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``cleanup``."""
    cleanup = actions.add_parser(
        "cleanup",
        parents=[*parents, work_item_parent(), format_parent()],
        help="release every local resource of a work item",
        description="End every tmux session of the work item (kept transcripts included), "
        "remove its checkout(s) and "
        "forget its session record, whatever the retention settings; record `cleanup`. "
        "A checkout holding uncommitted changes or unpushed commits is kept unless --force.",
    )
    cleanup.add_argument(
        "--dry-run", action="store_true", help="say what would be released; change nothing"
    )
    add_force(cleanup)
    cleanup.set_defaults(func=run_cleanup)


def run_cleanup(args: argparse.Namespace) -> Result:
    """Release every local resource (or, with ``--dry-run``, say what would go); exit 1 when
    a step failed."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    dispatcher = open_dispatcher(context, stores)
    require_known(stores, ref, lambda: dispatcher)
    if args.dry_run:
        outcome = planned_cleanup(dispatcher, ref, force=args.force)
    else:
        with stores.registry.spawn_lock(ref):  # after a spawn under way, not during it
            outcome = clean_up(dispatcher, ref, actor=context.actor, source="cli", force=args.force)
    return Result(
        items=(outcome.to_dict(),),
        text=lambda: cleanup_lines(outcome),
        summary={"dryRun": outcome.dry_run},
        errors=tuple(f"{outcome.ref}: {problem}" for problem in outcome.errors),
        exit_code=EXIT_FAILED if outcome.errors else EXIT_OK,
    )


def cleanup_lines(outcome: CleanupOutcome) -> list[str]:
    """The text report of a cleanup (its errors are the result's, printed after)."""
    ref, dry = outcome.ref, outcome.dry_run
    end, remove = ("would end", "would remove") if dry else ("ended", "removed")
    lines = [
        f"{ref}: {end} tmux session {name}" + (" (a kept transcript)" if is_kept(name) else "")
        for name in outcome.tmux_killed
    ]
    lines += [checkout_line(ref, done, dry_run=dry) for done in outcome.checkouts]
    if outcome.record_removed:
        lines.append(f"{ref}: {remove} the session record")
    return [*lines, f"{ref}: {_cleanup_verdict(outcome, released=bool(lines))}"]


def _cleanup_verdict(outcome: CleanupOutcome, *, released: bool) -> str:
    """The last line: never "nothing to release" or "cleaned up" when a step failed."""
    failed = len(outcome.errors)
    steps = f"{failed} step failed" if failed == 1 else f"{failed} steps failed"
    if failed and outcome.dry_run:
        return f"dry run incomplete: {steps} (nothing was changed)"
    if failed:
        return f"partly cleaned up: {steps}" if released else f"not cleaned up: {steps}"
    if not released:
        return "nothing local to release"
    return "would clean up (dry run — nothing was changed)" if outcome.dry_run else "cleaned up"
