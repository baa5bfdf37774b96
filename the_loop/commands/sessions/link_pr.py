"""``sessions link-pr``: record a pull request as delivering a work item.

The link goes to the session record, the portable record and the work-item state
file of the record's checkout, in that order; linking twice changes nothing.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    format_parent,
    load_context,
    warn,
    work_item_parent,
    work_item_type,
)
from the_loop.commands.render import Result
from the_loop.commands.stores import Stores, open_stores
from the_loop.errors import TheLoopError, UsageError, describe_error
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

if TYPE_CHECKING:
    from the_loop.repofile.file import WorkItemStateFile

_NUMBER = re.compile(r"#?([0-9]+)\Z")


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``link-pr``."""
    parser = actions.add_parser(
        "link-pr",
        parents=[*parents, work_item_parent(), format_parent()],
        help="record a pull request as delivering a work item",
        description="Link a pull request to the work item's session record, its work-item "
        "state file and its portable record. Linking twice changes nothing.",
    )
    parser.add_argument(
        "--pull-request",
        metavar="REF|N",
        type=pull_request_type,
        required=True,
        help="the pull request: a ref, or N / #N for a number in the work item's repository",
    )
    parser.set_defaults(func=run_link_pr)


def pull_request_type(text: str) -> WorkItemRef | int:
    """argparse ``type=`` for ``--pull-request``: a ref, or a number (``N`` or ``#N``)."""
    match = _NUMBER.match(text)
    if match is None:
        return work_item_type(text)
    number = int(match.group(1))
    if number <= 0:
        raise argparse.ArgumentTypeError(f"invalid pull request number {text!r}: must be positive")
    return number


def run_link_pr(args: argparse.Namespace) -> Result:
    """Link a pull request to the work item: registry, portable record, state file.

    An unreadable state file fails before anything is written; a later failure
    names the records already linked and the one that was not.
    """
    owner: WorkItemRef = args.work_item
    given: WorkItemRef | int = args.pull_request
    pr = owner.with_number(given) if isinstance(given, int) else given
    if pr == owner:
        raise UsageError(f"{pr.ref} cannot be linked to itself")
    stores = open_stores(load_context(args))
    before = stores.registry.find_by_work_item(owner, include_closed=True)
    if before is None:
        raise _no_record(owner)
    state_file = _state_file_of(before)
    if state_file is not None:
        state_file.load()  # unreadable: fails here, with nothing written
    _link_everywhere(stores, owner, pr, state_file)
    outcome = "already linked" if before.owns(pr) else "linked"
    line = f"{owner.ref}: {outcome} pull request {pr.ref}"
    item = {"ref": owner.ref, "outcome": outcome, "pullRequest": pr.ref}
    return Result(items=(item,), text=lambda: (line,))


def _no_record(owner: WorkItemRef) -> TheLoopError:
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
            raise _no_record(owner)
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


def _state_file_of(record: Session) -> WorkItemStateFile | None:
    """The work-item state file in the record's checkout, when the checkout has one."""
    if not record.cwd:
        return None
    from the_loop.repofile.file import WorkItemStateFile

    state_file = WorkItemStateFile(Path(record.cwd), record.work_item, on_warning=warn)
    return state_file if state_file.exists() else None
