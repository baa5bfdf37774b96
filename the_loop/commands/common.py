"""What every command shares: parent parsers, the config, the layout, output helpers.

Handlers call :func:`load_context` once; it resolves the config and the
state-directory overrides after parsing, never while the parser is built.
"""

from __future__ import annotations

import argparse
import getpass
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.commands.parser import parent_parser
from the_loop.commands.render import (
    FORMAT_JSON,
    FORMAT_JSONL,
    FORMAT_TABLE,
    FORMAT_TEXT,
    note,
    warn,
)
from the_loop.commands.render import error as error_line
from the_loop.config.file import Config, load_config
from the_loop.config.state_root import RootChoice, choose_state_root
from the_loop.errors import UsageError, quoted
from the_loop.layout import (
    FOLLOW_LINKS_KEY,
    StateLayout,
    layout_from_config,
    linked_directories,
)

__all__ = [
    "FORMAT_JSON",
    "FORMAT_JSONL",
    "FORMAT_TABLE",
    "FORMAT_TEXT",
    "error_line",
    "note",
    "warn",
]


_CONTROL_CHARACTERS = frozenset(map(chr, [*range(0x20), 0x7F]))


def path_argument(text: str) -> Path:
    """An argparse ``type`` for a path flag: refuses a blank value or a control character.

    The same rule as the config's path keys: ``""`` would silently mean the current
    directory and ``"  "`` a directory named by spaces.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a path: it is blank")
    if any(character in _CONTROL_CHARACTERS for character in text):
        raise argparse.ArgumentTypeError(
            f"{quoted(text)} is not a path: it holds a control character"
        )
    return Path(text)


def state_dir_parent() -> argparse.ArgumentParser:
    """``--registry-dir`` / ``--portable-dir``: declared once, shared by every sessions action.

    ``--state-root`` is a global flag (``parsing.add_global_flags``): any level takes it.
    """
    parent = parent_parser()
    group = parent.add_argument_group("state directories")
    group.add_argument(
        "--registry-dir",
        metavar="DIR",
        type=path_argument,
        help="session records directory (default: routing.registryDir, else <state.root>/local)",
    )
    group.add_argument(
        "--portable-dir",
        metavar="DIR",
        type=path_argument,
        help="portable work-item records directory (default: <state.root>/portable)",
    )
    return parent


def format_parent(*, table: bool = False, jsonl: bool = False) -> argparse.ArgumentParser:
    """``--format``, the one declaration: ``text`` (default) and ``json`` everywhere;
    ``table`` (an alias of text) where it was accepted before; ``jsonl`` where output streams.
    """
    choices = [FORMAT_TEXT, FORMAT_JSON]
    choices += [FORMAT_TABLE] if table else []
    choices += [FORMAT_JSONL] if jsonl else []
    help_text = "output format: text (default), json (one document: `the-loop docs json`)"
    help_text += ", table (same as text)" if table else ""
    help_text += ", jsonl (one item per line)" if jsonl else ""
    parent = parent_parser()
    parent.add_argument("--format", choices=choices, default=FORMAT_TEXT, help=help_text)
    return parent


@dataclass(frozen=True)
class Context:
    """The resolved config and state layout for one invocation."""

    config: Config
    layout: StateLayout
    root_choice: RootChoice | None = None

    @property
    def actor(self) -> str:
        return current_user()


def load_context(args: argparse.Namespace) -> Context:
    """Load the config (search order of ``cli.md``), choose the state root (decision 013)
    and apply the directory overrides."""
    config = load_config(getattr(args, "config", None))
    choice = choose_state_root(config, getattr(args, "state_root", None), os.environ, Path.cwd())
    layout = layout_from_config(config, choice.root).with_overrides(
        local_dir=getattr(args, "registry_dir", None),
        portable_dir=getattr(args, "portable_dir", None),
    )
    refuse_linked_directories(layout, follow=config.get_bool(FOLLOW_LINKS_KEY, False))
    return Context(config=config, layout=layout, root_choice=choice)


def describe_root(context: Context) -> str:
    """``the state root <path> (<the rule that chose it>)``, for a one-line message."""
    choice = context.root_choice
    where = f"the state root {context.layout.root}"
    return f"{where} ({choice.reason})" if choice is not None else where


def refuse_linked_directories(layout: StateLayout, *, follow: bool) -> None:
    """``UsageError`` naming the first of the root's own directories that is a link.

    Nothing is read or written through it; ``follow`` (the config key) allows them.
    """
    linked = [] if follow else linked_directories(layout)
    if linked:
        raise UsageError(
            f"{linked[0]} is a symbolic link: the-loop does not follow links out of its "
            f"state root (set {FOLLOW_LINKS_KEY}: true to allow it)"
        )


def current_user() -> str:
    """The OS user, for ``actor`` fields."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def work_item_type(text: str) -> Any:
    """argparse ``type=`` for a work-item ref: ``ValueError`` becomes a usage error."""
    from the_loop.ref import WorkItemRef

    try:
        return WorkItemRef.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def work_item_parent(
    help_text: str = "the work item, e.g. github:octo/repo#15",
) -> argparse.ArgumentParser:
    """``--work-item REF`` (required, parsed by :func:`work_item_type`): one work item."""
    parent = parent_parser()
    parent.add_argument(
        "--work-item", metavar="REF", type=work_item_type, required=True, help=help_text
    )
    return parent
