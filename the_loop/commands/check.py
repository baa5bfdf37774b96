"""``the-loop check [--work-item REF]``: where each work item's spec lane is.

One item per work item whose session's checkout holds its repository file, read from the
recorded state alone (no GitHub, no git): every phase in lane order with its status, who
brought it there, when and the link, and ``currentNode``. A gate waiting on a person is
no failure; a file or value that cannot be read is (exit 1).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    format_parent,
    load_context,
    state_dir_parent,
    warn,
    work_item_type,
)
from the_loop.commands.render import Result, table_lines
from the_loop.errors import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from the_loop.ref import WorkItemRef
    from the_loop.sessions.registry import SessionRegistry
    from the_loop.spec.checkouts import SpecCheckout
    from the_loop.spec.status import LaneStatus

NODE_HEADERS = ["NODE", "STATUS", "BY", "AT", "LINK"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``check``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        parents=[state_dir_parent(), format_parent()],
        help="where each work item's spec lane is, from its repository file",
        description="Print where each work item's spec lane is: every phase (requirements, "
        "design, tasks, implementation) with its status (pending, active, waiting, pass, "
        "skipped), who brought it there, when and the link, read from the repository file "
        "in the checkout of the item's session on this machine. Reads only the recorded "
        "state: no GitHub, no git. A gate waiting on a person is no failure: exit 0; a file "
        "that cannot be read exits 1 (`the-loop docs spec`).",
    )
    parser.add_argument(
        "--work-item",
        metavar="REF",
        type=work_item_type,
        help="only this work item, e.g. github:octo/app#15 (exit 1 when its session's "
        "checkout holds no repository file)",
    )
    parser.set_defaults(func=run_check)
    return parser


def run_check(args: argparse.Namespace) -> Result:
    """One item per work item with a repository file in its session's checkout."""
    from the_loop.commands.stores import open_stores
    from the_loop.spec.status import lane_status

    context = load_context(args)
    registry = open_stores(context, source="spec").registry
    found = _checkouts(registry, args.work_item)
    statuses = [lane_status(each) for each in found]
    problems = tuple(
        f"{status.work_item}: {status.problem}" for status in statuses if status.problem
    )
    summary = {
        "workItems": len(statuses),
        "waiting": sum(1 for status in statuses if status.waiting),
        "unreadable": len(problems),
    }
    return Result(
        items=[status.to_dict() for status in statuses],
        text=lambda: _report_lines(statuses),
        summary=summary,
        errors=problems,
        exit_code=EXIT_FAILED if problems else EXIT_OK,
    )


def _checkouts(registry: SessionRegistry, ref: WorkItemRef | None) -> list[SpecCheckout]:
    """Every record's checkout holding its repository file; with ``ref``, that item's own
    (``TheLoopError`` when it has none)."""
    from the_loop.errors import TheLoopError
    from the_loop.spec.checkouts import spec_checkouts

    if ref is None:
        return spec_checkouts(registry.list_sessions(), on_warning=warn)
    record = registry.find_by_work_item(ref, include_closed=True)
    if record is None:
        raise TheLoopError(f"{ref.ref} has no session record on this machine: no checkout of it")
    found = spec_checkouts([record], on_warning=warn)
    if not found:
        where = record.cwd or "(the record names none)"
        raise TheLoopError(f"{ref.ref} has no repository file in its session's checkout {where}")
    return found


def _report_lines(statuses: list[LaneStatus]) -> list[str]:
    if not statuses:
        return ["no session's checkout on this machine holds its work item's repository file"]
    lines: list[str] = []
    for status in statuses:
        if status.lane is None:
            continue  # its problem is said on stderr
        lines.append(f"{status.work_item}: {status.lane.where()}  ({status.checkout})")
        rows = [
            [node.node, node.status, node.by or "-", node.at or "-", node.link or "-"]
            for node in status.lane.nodes
        ]
        lines += [f"  {line}" for line in table_lines(NODE_HEADERS, rows)]
        lines.append("")
    return [*lines, _closing_line(statuses)]


def _closing_line(statuses: list[LaneStatus]) -> str:
    count = len(statuses)
    noun = "work item" if count == 1 else "work items"
    waiting = [
        f"{status.work_item} ({', '.join(status.waiting)})" for status in statuses if status.waiting
    ]
    if not waiting:
        return f"{count} {noun}; none waits on a person"
    return f"{count} {noun}; waiting on a person: {', '.join(waiting)}"
