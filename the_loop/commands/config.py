"""``the-loop config check``: find the config as every command does, read it as the loader
does, and say which file that was and every problem it holds.

Each problem is one ``error:`` line and the exit is 2; a good file is ``ok: <file>``
(exit 0); with no file found every key has its default, which is ok too.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import format_parent
from the_loop.commands.render import Result
from the_loop.errors import EXIT_USAGE

if TYPE_CHECKING:
    from the_loop.config.file import Config

NO_FILE = (
    "no config file found: every key has its default (`the-loop docs config` says where "
    "the-loop looks for one; `the-loop init` writes one here)"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``config`` and its one action."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="check the CLI config file",
        description="Check the CLI config: the file every command would read, and its "
        "problems. Every key is described by `the-loop docs config`.",
    )
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    check = actions.add_parser(
        "check",
        parents=[format_parent()],
        help="say which config file is read and every problem in it",
        description="Find the config file as every command does (--config, "
        "$THE_LOOP_CLI_CONFIG, the nearest .the-loop/cli-config.yaml at or above the "
        "working directory, ~/.the-loop/cli-config.yaml), read and validate it as they do, "
        "and print `ok: <file> (N keys set)`, then this machine's clone sources when "
        "local/clone-sources.json is beside it. Each problem (a key given twice, an unknown "
        "key, a value the schema refuses, YAML that does not parse) is one error line "
        "naming the file and where, and the exit is 2. With no file found every key has "
        "its default, and the exit is 0.",
    )
    check.set_defaults(func=run_check)
    return parser


def run_check(args: argparse.Namespace) -> Result:
    """The config file the search finds, checked: one item, its problems as errors."""
    from the_loop.config.file import check_file, find_config

    found = find_config(getattr(args, "config", None), os.environ, Path.cwd())
    if found is None:
        item: dict[str, Any] = {
            "file": None,
            "ok": True,
            "keysSet": 0,
            "problems": [],
            "cloneSources": None,
        }
        return Result(items=[item], text=lambda: [NO_FILE])
    path = Path(os.path.abspath(found))
    checked = check_file(path)
    keys = [] if checked.config is None else checked.config.keys_set()
    machine = _clone_sources(path, checked.config)
    item = {
        "file": str(path),
        "ok": not checked.problems,
        "keysSet": len(keys),
        "problems": list(checked.problems),
        "cloneSources": machine,
    }
    if checked.problems:
        return Result(items=[item], errors=checked.problems, exit_code=EXIT_USAGE)
    noun = "key" if len(keys) == 1 else "keys"
    lines = [f"ok: {path} ({len(keys)} {noun} set)"]
    if machine is not None:
        names = ", ".join(machine["repositories"]) or "none"
        lines.append(f"ok: {machine['file']} (this machine's clone sources: {names})")
    return Result(items=[item], text=lambda: lines)


def _clone_sources(path: Path, config: Config | None) -> dict[str, Any] | None:
    """This machine's clone-sources file beside the config, when there is one."""
    from the_loop.config.clone_sources import clone_sources_path

    machine = clone_sources_path(path)
    if not os.path.lexists(machine):
        return None
    names = [] if config is None else sorted(config.clone_sources)
    return {"file": str(machine), "repositories": names}
