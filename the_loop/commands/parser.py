"""The parser class of every ``the-loop`` parser: a single-valued flag refuses a second use.

``CliParser`` re-registers argparse's ``store`` actions (the default, ``store_const``,
``store_true``, ``store_false``) as single-use ones, so every option declared on it,
on its groups, on its subparsers or on a parent built with it is covered without a
word at the declaration. ``ONCE_BOOLEAN`` is ``--x/--no-x`` with the same rule.
Repeatable flags say so with ``action="append"`` and must act on every value.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

#: The namespace attribute holding the destinations set during one parse (removed after).
_GIVEN = "_the_loop_given_once"
#: The namespace attribute naming the parser that left arguments unrecognized.
_LEFT_BY = "_the_loop_left_by"
_SINGLE_USE_ACTIONS = (None, "store", "store_const", "store_true", "store_false")
ONCE_BOOLEAN = "once_boolean_optional"


def single_use(base: type[argparse.Action]) -> type[argparse.Action]:
    """``base`` that raises a usage error naming the flag when its destination is set twice."""

    class SingleUse(base):
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: str | Sequence[Any] | None,
            option_string: str | None = None,
        ) -> None:
            given: set[str] = vars(namespace).setdefault(_GIVEN, set())
            if self.dest in given:
                raise argparse.ArgumentError(self, "given more than once; it takes one value")
            given.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    SingleUse.__name__ = SingleUse.__qualname__ = f"SingleUse{base.__name__.lstrip('_')}"
    return SingleUse


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose single-valued options may be given only once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in _SINGLE_USE_ACTIONS:
            self.register("action", name, single_use(self._registry_get("action", name)))
        self.register("action", ONCE_BOOLEAN, single_use(argparse.BooleanOptionalAction))

    def error(self, message: str) -> NoReturn:
        """A usage error is one line on stderr and exit 2; the usage is one ``--help`` away."""
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # pyright: ignore[reportIncompatibleMethodOverride] - typeshed's overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's; the bookkeeping of which flags were given is not left behind."""
        parsed, rest = super().parse_known_args(args, namespace or argparse.Namespace())
        vars(parsed).pop(_GIVEN, None)
        if rest:  # the deepest parser that left them names itself (it runs first)
            vars(parsed).setdefault(_LEFT_BY, (self.prog, tuple(self._option_string_actions)))
        return parsed, rest

    def parse_args(  # pyright: ignore[reportIncompatibleMethodOverride] - typeshed's overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's; arguments nobody took are blamed on the command they follow."""
        parsed, rest = self.parse_known_args(args, namespace)
        left_by, options = vars(parsed).pop(_LEFT_BY, (self.prog, ()))
        if rest:
            self.exit(
                2,
                f"{left_by}: error: unrecognized arguments: {' '.join(rest)}"
                f"{_nearest_option(rest, options)} (see '{left_by} --help')\n",
            )
        return parsed


def _nearest_option(rest: Sequence[str], options: Sequence[str]) -> str:
    """`` — did you mean '--x'?`` for the first unknown option with a close known one."""
    import difflib

    for word in rest:
        if word.startswith("--") and len(word) > 2:
            close = difflib.get_close_matches(word.partition("=")[0], options, n=1)
            if close:
                return f" — did you mean {close[0]!r}?"
    return ""


def parent_parser() -> CliParser:
    """A parent parser (no ``-h``) whose options follow the single-use rule."""
    return CliParser(add_help=False)
