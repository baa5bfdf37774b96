"""``sessions link-pr``: record a pull request as delivering a work item.

The link goes to the session record, the portable record and the work-item state
file of the record's checkout, in that order; linking twice changes nothing.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from the_loop.adapters.linking import link_pull_request
from the_loop.commands.common import (
    format_parent,
    load_context,
    warn,
    work_item_parent,
    work_item_type,
)
from the_loop.commands.render import Result
from the_loop.commands.stores import open_stores
from the_loop.errors import UsageError
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    pass

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
    outcome = link_pull_request(stores, owner, pr, warn=warn)
    line = f"{owner.ref}: {outcome} pull request {pr.ref}"
    item = {"ref": owner.ref, "outcome": outcome, "pullRequest": pr.ref}
    return Result(items=(item,), text=lambda: (line,))
