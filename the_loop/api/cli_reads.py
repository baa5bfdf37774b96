"""A read route that prints exactly what a command prints: the command's own code path,
run in the server's process with its words, its JSON envelope the answer's body."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import threading
from collections.abc import Sequence

from the_loop.commands import render
from the_loop.errors import EXIT_OK, EXIT_USAGE, TheLoopError, describe_error


class CommandReadError(Exception):
    """The command refused its input (``status`` 400) or failed (500): ``sentence`` says."""

    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status


#: The commands a route reads through, and the modules that declare them.
_COMMANDS = {"sessions": "the_loop.commands.sessions", "events": "the_loop.commands.events"}
#: One command read at a time: a handler writes its warnings to ``sys.stderr``, which this
#: redirects for the read, and that is the whole process's.
_ONE_AT_A_TIME = threading.Lock()


def command_document(global_flags: Sequence[str], words: Sequence[str]) -> bytes:
    """The envelope ``the-loop <global_flags> <words> --format json`` prints, made by the
    command's own handler in this process (its stderr kept from the server's).
    :class:`CommandReadError` when it refused its input or failed."""
    with _ONE_AT_A_TIME, contextlib.redirect_stderr(io.StringIO()) as said:
        return _document([*global_flags, *words, "--format", "json"], words[0], said)


def _parser(command: str) -> argparse.ArgumentParser:
    """The CLI's parser for ``command`` alone, as ``the-loop`` builds it: the global flags,
    then the command module's own declaration."""
    from the_loop.commands.parsing import LoopParser, add_global_flags, finish

    parser = LoopParser(prog="the-loop", allow_abbrev=False)
    add_global_flags(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    importlib.import_module(_COMMANDS[command]).add_parser(subparsers)
    return finish(parser)


def _document(argv: list[str], command: str, said: io.StringIO) -> bytes:
    try:
        args = _parser(command).parse_args(argv)
    except SystemExit as exit_:
        lines = [line for line in said.getvalue().splitlines() if line.strip()]
        sentence = lines[-1] if lines else "bad query"
        raise CommandReadError(400 if exit_.code == EXIT_USAGE else 500, sentence) from None
    render.begin()
    try:
        result = args.func(args)
        words = [getattr(args, "command", None), getattr(args, "action", None)]
        text = render.envelope(result, command=" ".join(word for word in words if word))
    except TheLoopError as error:
        raise CommandReadError(400 if error.exit_code == EXIT_USAGE else 500, str(error)) from None
    except OSError as error:  # as the command says it: a failed read, never a bare error
        raise CommandReadError(500, describe_error(error)) from None
    if result.exit_code != EXIT_OK:
        raise CommandReadError(500, "; ".join(render.current().errors) or "the read failed")
    return text.encode("utf-8")


__all__ = ["CommandReadError", "command_document"]
