"""Docs parity for `the-loop events`: every flag and every catalogued event type is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from the_loop.cli import build_parser
from the_loop.eventlog.log import EVENT_TYPES

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli" / "commands" / "events.md"
EVENT_ROW = re.compile(r"^\| `([^`]+)` \| .+ \|$")


def events_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:  # argparse exposes its subparsers no other way
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["events"]  # pyright: ignore[reportUnknownVariableType]
    raise AssertionError("the parser has no subcommands")


def event_types_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    _, heading, section = text.partition("\n## Event types\n")
    assert heading, f"{DOC} has no '## Event types' section"
    return section.split("\n## ", 1)[0]


def test_every_flag_of_the_events_parser_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    flags = [flag for action in events_parser()._actions for flag in action.option_strings]
    assert "--follow" in flags
    missing = [flag for flag in flags if not re.search(rf"`{re.escape(flag)}(?![\w-])", text)]
    assert missing == [], f"flags missing from {DOC}: {missing}"


def test_every_catalogued_event_type_has_a_row_in_the_event_types_table() -> None:
    documented = {
        match.group(1)
        for row in event_types_section().splitlines()
        if (match := EVENT_ROW.match(row))
    }
    missing = [name for name in EVENT_TYPES if name not in documented]
    assert missing == [], f"event types missing from the table in {DOC}: {missing}"


def test_the_event_types_table_lists_nothing_the_catalogue_does_not_hold() -> None:
    documented = [
        match.group(1)
        for row in event_types_section().splitlines()
        if (match := EVENT_ROW.match(row))
    ]
    assert [name for name in documented if name not in EVENT_TYPES] == []
    assert len(documented) == len(set(documented))


def test_each_event_types_row_says_what_its_catalogue_entry_says() -> None:
    """The table and ``EVENT_TYPES`` are one text: a field added to one is in the other."""
    rows = {
        match.group(1): match.group(2).replace("\\|", "|")  # a table cell escapes its pipes
        for row in event_types_section().splitlines()
        if (match := re.match(r"^\| `([a-z_.]+)` \| (.*) \|$", row))
    }
    differing = [name for name, text in EVENT_TYPES.items() if rows.get(name, text) != text]
    assert differing == [], f"rows of {DOC} that differ from the catalogue: {differing}"
