"""What every command shares: parent parsers, the config, the layout, output helpers.

Handlers call :func:`load_context` once; it resolves the config and the
state-directory overrides after parsing, never while the parser is built.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.config import Config, load_config
from the_loop.layout import StateLayout, layout_from_config

FORMAT_TABLE = "table"
FORMAT_JSON = "json"
FORMAT_TEXT = "text"


def state_dir_parent() -> argparse.ArgumentParser:
    """``--registry-dir`` / ``--portable-dir``: declared once, shared by every sessions action."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("state directories")
    group.add_argument(
        "--registry-dir",
        metavar="DIR",
        type=Path,
        help="session records directory (default: routing.registryDir, else <state.root>/local)",
    )
    group.add_argument(
        "--portable-dir",
        metavar="DIR",
        type=Path,
        help="portable work-item records directory (default: <state.root>/portable)",
    )
    return parent


def format_parent(*choices: str, default: str) -> argparse.ArgumentParser:
    """``--format`` with the given choices."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--format", choices=choices, default=default, help=f"output format (default: {default})"
    )
    return parent


@dataclass(frozen=True)
class Context:
    """The resolved config and state layout for one invocation."""

    config: Config
    layout: StateLayout

    @property
    def actor(self) -> str:
        return current_user()


def load_context(args: argparse.Namespace) -> Context:
    """Load the config (search order of ``cli.md``) and apply the directory overrides."""
    config = load_config(getattr(args, "config", None))
    layout = layout_from_config(config).with_overrides(
        local_dir=getattr(args, "registry_dir", None),
        portable_dir=getattr(args, "portable_dir", None),
    )
    return Context(config=config, layout=layout)


def current_user() -> str:
    """The OS user, for ``actor`` fields."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def print_json(document: Any) -> None:
    """One JSON document on stdout, stable key order as given."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def error_line(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A plain aligned table on stdout."""
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    for row in [headers, *rows]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print(line.rstrip())


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
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--work-item", metavar="REF", type=work_item_type, required=True, help=help_text
    )
    return parent
