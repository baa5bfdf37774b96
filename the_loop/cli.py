"""``the-loop`` entry point: builds the parser from an explicit list of command modules.

``main(argv) -> int`` runs the chosen handler inside one error handler:
``TheLoopError`` prints ``error: ...`` and returns its exit code, Ctrl-C
returns 130, and argparse usage errors exit 2 on their own.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from the_loop import __version__
from the_loop.errors import EXIT_FAILED, EXIT_INTERRUPTED, TheLoopError, describe_error

PROG = "the-loop"


#: The commands, in help order, and the module that builds each one's parser.
COMMAND_MODULES = {
    "sessions": "the_loop.commands.sessions",
    "events": "the_loop.commands.events",
    "state": "the_loop.commands.state",
}


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMAND_MODULES[name])


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's (start-up imports one command module).

    Config-derived defaults are resolved after parsing, never here.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        allow_abbrev=False,  # chosen_command must see --config exactly as argparse does
        description="Turn GitHub issues and pull requests into coding-agent sessions in tmux, "
        "and keep honest, durable state about each of them.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="CLI config file (default: $THE_LOOP_CLI_CONFIG, ./.the-loop/cli-config.yaml, "
        "~/.the-loop/cli-config.yaml)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name in [only] if only in COMMAND_MODULES else list(COMMAND_MODULES):
        _command_module(name).add_parser(subparsers)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when it names a known one before any help flag."""
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
        elif arg == "--config":
            skip_value = True
        elif arg in ("-h", "--help"):
            return None
        elif not arg.startswith("-"):
            return arg if arg in COMMAND_MODULES else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list == ["--version"]:
        # Fast path: start-up stays within a hair of the bare interpreter.
        print(f"{PROG} {__version__}")
        return 0
    parser = build_parser(only=chosen_command(args_list))
    args = parser.parse_args(args_list)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args))
    except TheLoopError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        # A store lets an OSError propagate so that nothing claims success; say it plainly.
        print(f"error: {describe_error(error)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main_entry() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
