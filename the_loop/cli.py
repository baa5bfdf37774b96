"""``the-loop`` entry point: builds the parser from an explicit list of command modules.

``main(argv) -> int`` runs the chosen handler inside one error handler:
``TheLoopError`` prints ``error: ...`` and returns its exit code, Ctrl-C
returns 130, and argparse usage errors exit 2 on their own.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from the_loop import __version__
from the_loop.errors import EXIT_FAILED, EXIT_INTERRUPTED, TheLoopError

PROG = "the-loop"


def _command_modules() -> tuple[ModuleType, ...]:
    from the_loop.commands import events, sessions, state

    return (sessions, events, state)


def build_parser() -> argparse.ArgumentParser:
    """The full parser; config-derived defaults are resolved after parsing, never here."""
    parser = argparse.ArgumentParser(
        prog=PROG,
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
    for module in _command_modules():
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list == ["--version"]:
        # Fast path: start-up stays within a hair of the bare interpreter.
        print(f"{PROG} {__version__}")
        return 0
    parser = build_parser()
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
        where = f": {error.filename}" if error.filename else ""
        print(f"error: {error.strerror or error}{where}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main_entry() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
