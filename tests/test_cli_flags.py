"""Every flag of every command either refuses a second use or acts on every value.

The parser is walked, so a flag added later is checked without a word here.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from the_loop.cli import build_parser

#: Actions that take several values by design: each must act on every one.
REPEATABLE = (argparse._AppendAction, argparse._ExtendAction, argparse._CountAction)  # pyright: ignore[reportPrivateUsage]
#: Actions that end the parse at once (help, version): a second use is never reached.
TERMINAL = (argparse._HelpAction, argparse._VersionAction)  # pyright: ignore[reportPrivateUsage]
#: Sample values; the first one a flag's type (or choices) accepts is used.
SAMPLES = ("github:octo/app#1", "1", "1d", "x")


def walk(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """(the command words, an option) for every option of every parser in the tree."""
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            for name, child in action.choices.items():
                yield from walk(child, (*words, name))
        elif action.option_strings:
            yield words, action


def single_valued() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [
        (words, action)
        for words, action in walk(build_parser())
        if not isinstance(action, REPEATABLE + TERMINAL)
    ]


def sample(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """The value(s) to give ``action`` once: none for a switch, else one it accepts."""
    if action.nargs == 0:
        return []
    candidates = [str(choice) for choice in action.choices or ()] or list(SAMPLES)
    for candidate in candidates:
        try:
            parser._get_values(action, [candidate])  # pyright: ignore[reportPrivateUsage]
        except argparse.ArgumentError:
            continue
        return [candidate]
    raise AssertionError(f"no sample value suits {action.option_strings}")


def ids(case: tuple[tuple[str, ...], argparse.Action]) -> str:
    words, action = case
    return " ".join([*words, action.option_strings[0]])


def test_the_walk_finds_the_flags_of_every_command():
    flags = {ids(case) for case in single_valued()}
    assert {"sessions stop --work-item", "sessions start --comment", "--config"} <= flags
    assert {"events --limit", "state check --no-discover", "sessions reset --all"} <= flags
    assert len(flags) > 40


@pytest.mark.parametrize("case", single_valued(), ids=ids)
def test_a_single_valued_flag_given_twice_is_refused_with_one_line_naming_it(
    case: tuple[tuple[str, ...], argparse.Action], capsys: pytest.CaptureFixture[str]
):
    words, action = case
    value = sample(build_parser(), action)
    first, last = action.option_strings[0], action.option_strings[-1]
    argv = [*words, first, *value, last, *value]
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    error_line = capsys.readouterr().err.splitlines()[-1]
    names = "/".join(action.option_strings)
    assert f"error: argument {names}: given more than once; it takes one value" in error_line


def test_a_flag_given_once_parses_as_before_and_leaves_no_bookkeeping_behind():
    args = build_parser().parse_args(
        [
            "--config",
            "c.yaml",
            "sessions",
            "stop",
            "--work-item",
            "github:octo/app#1",
            "--no-comment",
        ]
    )
    assert (args.config, args.work_item.ref, args.comment) == ("c.yaml", "github:octo/app#1", False)
    assert not any(name.startswith("_") for name in vars(args))


def test_a_repeatable_flag_keeps_every_value():
    parser = build_parser()
    reset = parser.parse_args(
        [
            "sessions",
            "reset",
            "--work-item",
            "github:octo/app#1",
            "--work-item",
            "github:octo/app#2",
        ]
    )
    assert [ref.ref for ref in reset.work_items] == ["github:octo/app#1", "github:octo/app#2"]
    events = parser.parse_args(["events", "--type", "session.*", "--type", "poll.*"])
    assert events.types == ["session.*", "poll.*"]
    check = parser.parse_args(["state", "check", "--checkout", "a", "--checkout", "b"])
    assert [str(path) for path in check.checkout] == ["a", "b"]


def test_the_repeatable_flags_are_exactly_the_ones_that_say_so():
    repeatable = {ids(case) for case in walk(build_parser()) if isinstance(case[1], REPEATABLE)}
    assert repeatable == {
        "sessions reset --work-item",
        "events --type",
        "state check --checkout",
        "init --repo",
        "init --poll",
        "init --label",
        "init --authorized",
        "serve --allow-host",
    }
