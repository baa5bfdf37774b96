"""The cleanup verb wired to one dispatcher: the command layer's call of the cleanup domain.

The dispatcher lends its teardown (end a tmux session, find and remove checkouts) and
its tmux naming; :func:`the_loop.cleanup.cleanup_work_item` decides what to release.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.cleanup import CleanupOutcome
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.ref import WorkItemRef


def clean_up(
    dispatcher: Dispatcher,
    ref: WorkItemRef,
    *,
    actor: str = "",
    source: str = "cli",
    force: bool = False,
) -> CleanupOutcome:
    """Release every local resource of ``ref`` whatever the retention settings say, but a
    checkout holding work only when ``force`` (or ``removeDirtyCheckouts``); works with no
    record at all (the tmux name is found from the ref alone); the transcripts kept under
    new names go too."""
    from the_loop.cleanup import cleanup_work_item  # only a cleanup needs the domain

    teardown = dispatcher.teardown
    return cleanup_work_item(
        ref,
        registry=dispatcher.registry,
        end_session=teardown.end_tmux_session,
        remove_checkout=partial(teardown.remove_checkouts_of, force=force),
        actor=actor,
        source=source,
        events=dispatcher.events,
        control=dispatcher.control_store,
        tmux_name=dispatcher.tmux_target_for,
        kept_transcripts=dispatcher.tmux.kept_transcripts,
    )


def planned_cleanup(
    dispatcher: Dispatcher, ref: WorkItemRef, *, force: bool = False
) -> CleanupOutcome:
    """What a cleanup would release: running tmux sessions, existing checkouts (each kept
    or removed as the real run would), the record."""
    from the_loop.cleanup import cleanup_work_item

    plan = cleanup_work_item(
        ref,
        registry=dispatcher.registry,
        dry_run=True,
        control=dispatcher.control_store,
        find_checkouts=partial(dispatcher.teardown.existing_checkouts_of, force=force),
        tmux_name=dispatcher.tmux_target_for,
        kept_transcripts=dispatcher.tmux.kept_transcripts,
    )
    running = tuple(name for name in plan.tmux_killed if dispatcher.tmux.liveness(name) != "absent")
    return replace(plan, tmux_killed=running)
