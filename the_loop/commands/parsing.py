"""The CLI's parser conventions: one parser class, global flags anywhere, examples in help.

:class:`LoopParser` suggests the nearest choice for a mistyped command or value and
remembers its subcommands; :func:`finish` gives every parser of the tree the global
flags (accepted before or after the subcommand), its examples epilog, and makes a
bare command group print its help instead of failing.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from the_loop.commands.examples import EXAMPLES, epilog
from the_loop.commands.parser import CliParser


class HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions as usual; keeps the examples epilog's lines as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:\n"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class LoopParser(CliParser):
    """A ``CliParser`` (single-valued flags once) that says "did you mean" and knows its
    subcommands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.subcommand_action: Any = None

    def add_subparsers(self, **kwargs: Any) -> Any:
        self.subcommand_action = super().add_subparsers(**kwargs)
        return self.subcommand_action

    def subcommands(self) -> dict[str, LoopParser]:
        """Subcommand name -> its parser (empty for a leaf command)."""
        return {} if self.subcommand_action is None else dict(self.subcommand_action.choices)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices: Any = action.choices
        if choices is not None and value not in choices:
            import difflib

            names = [str(choice) for choice in choices]
            close = difflib.get_close_matches(str(value), names, n=1)
            if close:
                listed = ", ".join(repr(name) for name in names)
                raise argparse.ArgumentError(
                    action,
                    f"invalid choice: {value!r} — did you mean {close[0]!r}? "
                    f"(choose from {listed})",
                )
        super()._check_value(action, value)


def add_global_flags(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """The global flags, declared once. After the command they default to absent
    (``SUPPRESS``), so a value given before the command is never overwritten."""
    from the_loop.commands.common import path_argument

    default: Any = argparse.SUPPRESS if after_command else None
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=default,
        help="CLI config file (default: $THE_LOOP_CLI_CONFIG, the nearest "
        ".the-loop/cli-config.yaml at or above the working directory, "
        "~/.the-loop/cli-config.yaml)",
    )
    parser.add_argument(
        "--state-root",
        metavar="DIR",
        type=path_argument,
        default=default,
        help="the state root (default: $THE_LOOP_STATE_ROOT, else state.root, else the "
        "nearest .the-loop/ at or above the working directory, else ~/.the-loop)",
    )


#: The flags :func:`add_global_flags` declares, each taking one value.
GLOBAL_FLAGS = ("--config", "--state-root")


def refuse_repeated_global_flags(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A global flag before and after the command is one flag given twice: a usage error
    (each level parses apart, so the single-use rule of ``CliParser`` cannot see it)."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    for flag in GLOBAL_FLAGS:
        if sum(1 for word in words if word == flag or word.startswith(f"{flag}=")) > 1:
            parser.error(f"argument {flag}: given more than once; it takes one value")


def walk(parser: LoopParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, LoopParser]]:
    """Every parser of the tree with its command path (``""``, ``sessions``, ``sessions list``)."""
    yield " ".join(path), parser
    for name, child in parser.subcommands().items():
        yield from walk(child, (*path, name))


def finish(parser: LoopParser) -> LoopParser:
    """Give every parser its examples and (below the top) the global flags; groups optional."""
    for path, each in walk(parser):
        if path:
            add_global_flags(each, after_command=True)
        if path in EXAMPLES:
            each.epilog = epilog(EXAMPLES[path])
        if each.subcommand_action is not None:
            each.subcommand_action.required = False
    return parser


def deepest(parser: LoopParser, words: list[str | None]) -> LoopParser:
    """The parser of the command group ``words`` names (for a bare group's help)."""
    for word in words:
        child = parser.subcommands().get(word or "")
        if child is None:
            break
        parser = child
    return parser
