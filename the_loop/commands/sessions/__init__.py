"""``the-loop sessions``: the session actions, one module per group of actions.

Each action module exposes ``add_parsers(actions, parents)``; this module
builds the ``sessions`` parser from the explicit tuple below.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from the_loop.commands.common import state_dir_parent


def _action_modules() -> tuple[ModuleType, ...]:
    from the_loop.commands.sessions import cleanup, lifecycle, records, reset

    return (records, lifecycle, cleanup, reset)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``sessions`` and its actions."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sessions",
        help="list, start, pause, stop, clean up and reset work-item sessions",
        description="Drive the agent sessions of work items on this machine.",
    )
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    parents = [state_dir_parent()]
    for module in _action_modules():
        module.add_parsers(actions, parents)
    return parser
