"""``the-loop`` entry point: builds the parser from an explicit list of command modules.

``main(argv) -> int`` runs the chosen handler and renders the ``Result`` it
returns, inside one error handler: ``TheLoopError`` prints ``error: ...`` and
returns its exit code, Ctrl-C returns 130, any other exception is a bug (exit 3,
one line, the traceback in the crash log), and argparse usage errors exit 2 on
their own. ``docs/cli/exit-codes.md`` lists the codes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from the_loop import __version__
from the_loop.errors import (
    EXIT_BUG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    TheLoopError,
    describe_error,
)

TYPE_CHECKING = False  # not `typing`'s: importing typing would slow `--version`
if TYPE_CHECKING:
    from the_loop.commands.parsing import LoopParser

PROG = "the-loop"


#: The commands, in help order, and the module that builds each one's parser.
COMMAND_MODULES = {
    "init": "the_loop.commands.init",
    "doctor": "the_loop.commands.doctor",
    "sessions": "the_loop.commands.sessions",
    "check": "the_loop.commands.check",
    "done": "the_loop.commands.done",
    "events": "the_loop.commands.events",
    "state": "the_loop.commands.state",
    "poll": "the_loop.commands.poll",
    "webhook": "the_loop.commands.webhook",
    "serve": "the_loop.commands.serve",
    "completion": "the_loop.commands.completion",
    "config": "the_loop.commands.config",
    "docs": "the_loop.commands.docs",
}


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMAND_MODULES[name])


def build_parser(only: str | None = None) -> LoopParser:
    """The parser; with ``only``, just that command's (start-up imports one command module).

    Config-derived defaults are resolved after parsing, never here.
    """
    from the_loop.commands.parsing import LoopParser, add_global_flags, finish

    parser = LoopParser(
        prog=PROG,
        allow_abbrev=False,  # chosen_command must see the global flags as argparse does
        description="Turn GitHub issues and pull requests into coding-agent sessions in tmux, "
        "and keep honest, durable state about each of them.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    add_global_flags(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name in [only] if only in COMMAND_MODULES else list(COMMAND_MODULES):
        _command_module(name).add_parser(subparsers)
    return finish(parser)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when it names a known one before any help flag."""
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
        elif arg in ("--config", "--state-root"):
            skip_value = True
        elif arg in ("-h", "--help"):
            return None
        elif not arg.startswith("-"):
            return arg if arg in COMMAND_MODULES else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code,
    usage errors (2) and ``--help`` (0) included.

    A reader that goes away (``| head``) ends the output quietly, never as a failure
    (``docs/cli/exit-codes.md``).
    """
    try:
        code = _main(argv)
    except BrokenPipeError:  # help, the version or a handler's own output met a closed stdout
        from the_loop.commands.pipes import silence_stdout

        silence_stdout()
        code = EXIT_OK
    except SystemExit as exit_:  # argparse's own exits: --help (0) and usage errors (2)
        code = exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    _flush_stdout()
    return code


def _flush_stdout() -> None:
    """Flush stdout now, so that a closed pipe is met here rather than at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from the_loop.commands.pipes import silence_stdout

        silence_stdout()


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if argv is None and "_ARGCOMPLETE" in os.environ:
        # The shell asks for completions (the-loop completion SHELL): answer, then exit.
        from the_loop.commands.completion import complete

        complete(build_parser())
    if args_list in (["--version"], ["-V"]):
        # Fast path: start-up stays within a hair of the bare interpreter.
        print(f"{PROG} {__version__}")
        return 0
    parser = build_parser(only=chosen_command(args_list))
    from the_loop.commands.parsing import refuse_repeated_global_flags

    refuse_repeated_global_flags(parser, args_list)
    args = parser.parse_args(args_list)
    if getattr(args, "func", None) is None:
        # A bare ``the-loop`` or command group (``the-loop sessions``) prints its help.
        from the_loop.commands.parsing import deepest

        words = [getattr(args, "command", None), getattr(args, "action", None)]
        deepest(parser, words).print_help()
        return 0
    return _run(args, args_list)


def command_name(args: argparse.Namespace) -> str:
    """The command as the JSON envelope names it, e.g. ``sessions reset``."""
    words = [getattr(args, "command", None), getattr(args, "action", None)]
    return " ".join(word for word in words if word)


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    from the_loop.commands import render

    render.begin()
    output_format: str = getattr(args, "format", render.FORMAT_TEXT)
    try:
        result = args.func(args)
        return render.render(result, output_format, command=command_name(args))
    except TheLoopError as error:
        return _failed(str(error), error.exit_code, output_format, args)
    except OSError as error:
        if isinstance(error, BrokenPipeError) and _stdout_closed():
            raise  # the reader went away: main ends quietly
        # A store lets an OSError propagate so that nothing claims success; say it plainly.
        return _failed(describe_error(error), EXIT_FAILED, output_format, args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # a bug: one line, the traceback in the crash log
        from the_loop.commands.crash import report_bug

        print(f"error: {report_bug(error, args, argv)}", file=sys.stderr)
        return EXIT_BUG


def _stdout_closed() -> bool:
    from the_loop.commands.pipes import stdout_closed

    return stdout_closed()


def _failed(message: str, exit_code: int, output_format: str, args: argparse.Namespace) -> int:
    """Say a failure; as JSON, a failed operation (not bad input) still gets its document."""
    from the_loop.commands import render

    render.error(message)
    if output_format == render.FORMAT_JSON and exit_code != EXIT_USAGE:
        failed = render.Result(exit_code=exit_code)
        sys.stdout.write(render.envelope(failed, command=command_name(args)))
    return exit_code


def main_entry() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
