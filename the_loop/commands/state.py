"""``the-loop state check | paths | attributes``: where state lives, and what is retired.

``check`` lists the retired locations older releases left on this machine (it reads
only and deletes nothing; exit 1 while any is left). ``paths`` and ``attributes``
print the declarations ``GENERATED_PATHS`` and ``ATTRIBUTES``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    Context,
    format_parent,
    load_context,
    path_argument,
    state_dir_parent,
    warn,
)
from the_loop.commands.render import Result, table_lines
from the_loop.errors import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from the_loop.upgrade import UpgradeReport

CHECK_HEADERS = ["KIND", "READ", "WORK ITEM", "PATH", "DETAIL"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``state`` and its actions."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "state",
        help="where the-loop keeps state, and what older releases left behind",
        description="Inspect the layout of the-loop's state: the retired locations an "
        "older release left on this machine, the generated paths and the attribute rule.",
    )
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    formats = format_parent(table=True)
    check = actions.add_parser(
        "check",
        parents=[state_dir_parent(), formats],
        help="list retired state locations (reads only; deletes nothing)",
        description="List the state locations older releases wrote that the-loop has "
        "retired: the legacy sessions/ tree, pull requests' own portable records, portable "
        "graph sections and graph-state.json files. Says which are still read as a "
        "fallback and what replaced each. Deletes nothing. Exit 0 when nothing retired is "
        "left, 1 otherwise.",
    )
    check.add_argument(
        "--checkout",
        metavar="DIR",
        type=path_argument,
        action="append",
        default=[],
        help="a checkout to scan for graph-state.json (repeatable)",
    )
    check.add_argument(
        "--no-discover",
        dest="discover",
        action="store_false",
        help="scan only the --checkout directories, not the cwd of every session record "
        "and every checkout under routing.workspace.root",
    )
    check.set_defaults(func=run_check)
    paths = actions.add_parser(
        "paths",
        parents=[state_dir_parent(), formats],
        help="print the state root, the rule that chose it, and every path under it",
        description="Print the state root this invocation uses and the rule that chose it "
        "(`the-loop docs state`), then GENERATED_PATHS: every path under the state root, "
        "whether it travels, what it holds and why it exists.",
    )
    paths.set_defaults(func=run_paths)
    attributes = actions.add_parser(
        "attributes",
        parents=[formats],
        help="print the attribute rule: which key may live in which file",
        description="Print ATTRIBUTES: every top-level key of the three per-work-item "
        "files with its kind, and the kinds each file may hold.",
    )
    attributes.set_defaults(func=run_attributes)
    return parser


def run_check(args: argparse.Namespace) -> Result:
    """Report retired locations; exit 1 while any is left."""
    from the_loop.commands.stores import open_stores
    from the_loop.errors import UsageError
    from the_loop.upgrade import default_checkouts, find_retired

    given: list[Path] = list(args.checkout)
    missing = [str(path) for path in given if not path.is_dir()]
    if missing:
        raise UsageError(f"--checkout {missing[0]}: not a directory")
    context = load_context(args)
    stores = open_stores(context, source="state")
    checkouts = [Path(os.path.abspath(path)) for path in given]
    if args.discover:
        from the_loop.dispatch.workspace import workspace_root

        workspace = workspace_root(context.config)
        checkouts += default_checkouts(stores.registry, workspace, on_warning=warn)
    report = find_retired(
        layout=context.layout, registry=stores.registry, store=stores.store, checkouts=checkouts
    )
    document = report.to_dict()
    return Result(
        items=document.pop("retired"),
        text=lambda: _report_lines(report),
        summary=document,
        errors=tuple(f"could not look in {place}" for place in report.unscanned),
        exit_code=EXIT_OK if report.clean else EXIT_FAILED,
    )


def _report_lines(report: UpgradeReport) -> list[str]:
    from the_loop.upgrade import RETIRED_KINDS

    if report.clean:
        return ["nothing retired is left on this machine"]
    if not report.locations:
        count = len(report.unscanned)
        return [f"no retired location found, but {count} of the places to look could not be read"]
    rows = [
        [item.kind, "yes" if item.read else "no", item.ref or "-", item.path, item.detail]
        for item in report.locations
    ]
    kinds = list(dict.fromkeys(item.kind for item in report.locations))
    width = max(len(kind) for kind in kinds)
    count, read = len(report.locations), len(report.still_read)
    noun = "location" if count == 1 else "locations"
    return [
        *table_lines(CHECK_HEADERS, rows),
        "",
        "replaced by:",
        *(f"  {kind.ljust(width)}  {RETIRED_KINDS[kind][1]}" for kind in kinds),
        "",
        f"{count} retired {noun} left, {read} still read as a fallback; nothing was deleted. "
        "Remove what is no longer read once you no longer need it.",
    ]


def run_paths(args: argparse.Namespace) -> Result:
    """The chosen root and its rule (the summary), then ``GENERATED_PATHS``, one item per path."""
    from the_loop.layout import GENERATED_PATHS

    context = load_context(args)
    choice = context.root_choice
    assert choice is not None  # load_context always chooses
    rows = [
        [path.where, "yes" if path.portable else "no", path.name, path.holds]
        for path in GENERATED_PATHS
    ]
    name, machine = machine_of(context)
    head = [
        f"state root: {context.layout.root}",
        f"chosen by:  {choice.reason}",
        f"machine:    {name} ({machine or 'no id yet: made the first time one is needed'})",
        "",
    ]
    summary = {
        "root": str(context.layout.root),
        "rule": choice.rule,
        "reason": choice.reason,
        "machine": {"name": name, "id": machine},
    }
    return Result(
        items=[dataclasses.asdict(path) for path in GENERATED_PATHS],
        text=lambda: [*head, *table_lines(["WHERE", "TRAVELS", "NAME", "HOLDS"], rows)],
        summary=summary,
    )


def machine_of(context: Context) -> tuple[str, str | None]:
    """This machine's name (``routing.machineName``, else the host name) and its id (None
    until one is made); never makes one."""
    import socket

    from the_loop.sessions.machine import MACHINE_FILE, read_machine_id

    name = context.config.get_str("routing.machineName", "") or socket.gethostname()
    return name, read_machine_id(context.layout.local_dir / MACHINE_FILE)


def run_attributes(_args: argparse.Namespace) -> Result:
    """``ATTRIBUTES``, one item per key; the summary holds the files, kinds and allowed kinds."""
    from the_loop.attributes import ALLOWED_KINDS, ATTRIBUTE_FILES, ATTRIBUTE_KINDS, ATTRIBUTES

    rows = [[item.file, item.key, item.kind, item.holds] for item in ATTRIBUTES]
    summary = {
        "files": [dataclasses.asdict(item) for item in ATTRIBUTE_FILES],
        "kinds": dict(ATTRIBUTE_KINDS),
        "allowedKinds": {name: list(kinds) for name, kinds in ALLOWED_KINDS.items()},
    }
    return Result(
        items=[dataclasses.asdict(item) for item in ATTRIBUTES],
        text=lambda: table_lines(["FILE", "KEY", "KIND", "HOLDS"], rows),
        summary=summary,
    )
