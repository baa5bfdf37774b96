"""Linking a pull request to a work item, the one way ``sessions link-pr`` and the poller
both take: the session record, then the portable record, then the work-item state file
of the record's checkout. Linking twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.adapters.stores import Stores
from the_loop.errors import TheLoopError, describe_error
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

if TYPE_CHECKING:
    from the_loop.repofile.file import WorkItemStateFile

LINKED = "linked"
ALREADY_LINKED = "already linked"


def link_pull_request(
    stores: Stores, owner: WorkItemRef, pr: WorkItemRef, *, warn: Callable[[str], None]
) -> str:
    """Link ``pr`` to ``owner`` everywhere: :data:`LINKED` or :data:`ALREADY_LINKED`.

    An unreadable state file fails before anything is written; a later failure names
    the records already linked and the one that was not (``TheLoopError``).
    """
    before = stores.registry.find_by_work_item(owner, include_closed=True)
    if before is None:
        raise no_record(owner)
    state_file = _state_file_of(before, warn)
    if state_file is not None:
        state_file.load()  # unreadable: fails here, with nothing written
    _link_everywhere(stores, owner, pr, state_file)
    return ALREADY_LINKED if before.owns(pr) else LINKED


def no_record(owner: WorkItemRef) -> TheLoopError:
    return TheLoopError(
        f"{owner.ref} has no session record on this machine; start or register one first"
    )


def _link_everywhere(
    stores: Stores, owner: WorkItemRef, pr: WorkItemRef, state_file: WorkItemStateFile | None
) -> None:
    """Registry, then portable ledger, then state file; a failure names what was applied."""
    from the_loop.portable.poll import PollState

    applied: list[str] = []
    step = "the session record"
    try:
        if stores.registry.link_pull_request(owner, pr) is None:
            raise no_record(owner)
        applied.append(step)
        step = "the portable record"
        PollState(stores.store, registry=stores.registry).own(pr, owner)
        applied.append(step)
        if state_file is not None:
            step = f"the work item state file {state_file.path}"
            state_file.link_pr(pr)
    except (TheLoopError, OSError, ValueError) as error:
        if not applied:
            raise
        raise TheLoopError(
            f"{owner.ref}: linked pull request {pr.ref} in {' and '.join(applied)} only; "
            f"not in {step}: {describe_error(error)}"
        ) from error


def _state_file_of(record: Session, warn: Callable[[str], None]) -> WorkItemStateFile | None:
    """The work-item state file in the record's checkout, when the checkout has one."""
    if not record.cwd:
        return None
    from the_loop.repofile.file import WorkItemStateFile

    state_file = WorkItemStateFile(Path(record.cwd), record.work_item, on_warning=warn)
    return state_file if state_file.exists() else None
