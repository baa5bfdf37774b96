"""Docs parity for `the-loop sessions`: every action has a section in
`docs/cli/commands/sessions.md`, and every flag of every action is documented there."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from the_loop.cli import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli" / "commands" / "sessions.md"
COMMON_HEADING = "Options every action takes"
HELP_FLAGS = ("-h", "--help")


def subparsers_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse exposes its subparsers no other way
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)  # pyright: ignore[reportUnknownArgumentType]
    raise AssertionError(f"{parser.prog} has no subcommands")


def sessions_actions() -> dict[str, argparse.ArgumentParser]:
    return subparsers_of(subparsers_of(build_parser())["sessions"])


def flags_of(parser: argparse.ArgumentParser) -> list[str]:
    return [flag for action in parser._actions for flag in action.option_strings]


def sections() -> dict[str, str]:
    """``## <heading>`` -> the text up to the next ``## `` heading."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for chunk in text.split("\n## ")[1:]:
        heading, _, body = chunk.partition("\n")
        found[heading.strip().strip("`")] = body
    return found


def documents(text: str, flag: str) -> bool:
    return re.search(rf"`{re.escape(flag)}(?![\w-])", text) is not None


def test_every_action_of_the_sessions_parser_has_its_own_section():
    actions = sessions_actions()
    assert {"register", "link-pr", "list", "attach", "close", "start", "stop"} <= set(actions)
    missing = [name for name in actions if name not in sections()]
    assert missing == [], f"actions without a '## <action>' section in {DOC}: {missing}"


def test_every_flag_of_every_action_is_documented_in_its_section_or_the_common_one():
    actions = sessions_actions()
    shared = set.intersection(*(set(flags_of(parser)) for parser in actions.values()))
    assert {"--registry-dir", "--portable-dir"} <= shared
    documented = sections()
    common = documented[COMMON_HEADING]
    missing = [
        f"{name} {flag}"
        for name, parser in actions.items()
        for flag in flags_of(parser)
        if not documents(documented.get(name, ""), flag)
        and not (flag in shared and documents(common, flag))
    ]
    assert missing == [], f"flags missing from {DOC}: {missing}"


def test_the_flags_shared_by_every_action_are_documented_once_in_the_common_section():
    actions = sessions_actions()
    shared = set.intersection(*(set(flags_of(parser)) for parser in actions.values()))
    common = sections()[COMMON_HEADING]
    assert [flag for flag in sorted(shared) if not documents(common, flag)] == []
    assert all(flag in shared for flag in HELP_FLAGS)


def test_the_synopsis_names_every_action():
    text = DOC.read_text(encoding="utf-8")
    synopsis = text.split("```text\n", 1)[1].split("```", 1)[0]
    missing = [name for name in sessions_actions() if f"sessions {name} " not in synopsis]
    assert missing == []
