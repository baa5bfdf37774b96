"""Issue 18, item 24: where a page and the behaviour could disagree, a test keeps them
the same.

- every config default a command page lists is the default docs/cli/config.md gives
  (poll.md once said `apiUrl` defaults to `https://api.github.com`, config.md `""`);
- the example config says what `routing.prompt` replaces (it once said nothing);
- sessions.md's keyword comment is the sentence the code posts;
- the README names every command the parser has;
- what the pages say of `sessions reset` names what it leaves: a kept transcript.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from the_loop.cli import build_parser
from the_loop.commands.sessions.comments import keyword_comment
from the_loop.intake.prompt import PLACEHOLDERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "cli"
CONFIG_ROW = re.compile(r"^\| `(?P<key>[a-z][\w.<>]+)` \| [^|]+ \| (?P<default>[^|]+?) \| .+ \|$")
PAGE_ROW = re.compile(r"^\| `(?P<key>[a-z][\w.<>]+)` \| (?P<default>[^|]+?) \| [^|]+ \|$")


def config_defaults() -> dict[str, str]:
    text = (DOCS / "config.md").read_text(encoding="utf-8")
    return {m["key"]: m["default"] for line in text.splitlines() if (m := CONFIG_ROW.match(line))}


def page_config_rows(page: Path) -> dict[str, str]:
    """The rows of a command page's tables that name a config key and its default."""
    keys = config_defaults()
    rows = (PAGE_ROW.match(line) for line in page.read_text(encoding="utf-8").splitlines())
    return {m["key"]: m["default"] for m in rows if m is not None and m["key"] in keys}


@pytest.mark.parametrize("page", sorted((DOCS / "commands").glob("*.md")), ids=lambda p: p.name)
def test_a_command_pages_config_defaults_are_config_mds(page: Path) -> None:
    defaults = config_defaults()
    differing = {
        key: (default, defaults[key])
        for key, default in page_config_rows(page).items()
        if default != defaults[key]
    }
    assert differing == {}, f"{page.name}: (its default, config.md's) per key"


def test_the_poll_page_lists_its_config_keys() -> None:
    """The comparison above has rows to compare (the table's form did not drift)."""
    rows = page_config_rows(DOCS / "commands" / "poll.md")
    assert {"integrations.github.apiUrl", "routing.prompt", "polling.labels"} <= set(rows)


def test_the_example_config_names_the_prompt_placeholders_the_code_replaces() -> None:
    example = (ROOT / "docs" / "examples" / "cli-config.yaml").read_text(encoding="utf-8")
    [line] = [line for line in example.splitlines() if line.strip().startswith("prompt:")]
    comment = line.partition("#")[2]
    assert "no placeholders" not in comment
    assert re.findall(r"\{\w+\}", comment) == list(PLACEHOLDERS), comment
    config_md = (DOCS / "config.md").read_text(encoding="utf-8")
    [row] = [r for r in config_md.splitlines() if r.startswith("| `routing.prompt` |")]
    assert all(f"`{p}`" in row for p in PLACEHOLDERS)


def test_the_keyword_comment_sessions_md_shows_is_the_one_posted() -> None:
    page = (DOCS / "commands" / "sessions.md").read_text(encoding="utf-8")
    section = page.split("## Keyword comments", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"``(.+?)``", " ".join(section.split()))
    assert shown is not None, "the section shows the sentence posted"
    assert shown[1].strip() == keyword_comment("pause", "alice")


def top_level_commands() -> list[str]:
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # pyright: ignore[reportPrivateUsage]
    return sorted(set(subparsers.choices))


def test_the_readme_links_every_command_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if line.startswith("Commands: ")]
    assert commands, "the README has its command list"
    paragraph = readme[readme.index(commands[0]) :].split("\n\n", 1)[0]
    missing = [
        name
        for name in top_level_commands()
        if f"[{name}](docs/cli/commands/{name}.md)" not in paragraph
    ]
    assert missing == []


RESET_SAYINGS = [
    (ROOT / "README.md", "sessions reset` forgets"),
    (DOCS / "commands" / "sessions.md", "Forget everything this machine remembers"),
]


@pytest.mark.parametrize(("page", "opening"), RESET_SAYINGS, ids=lambda v: getattr(v, "name", v))
def test_what_a_page_says_reset_forgets_names_the_transcript_it_keeps(
    page: Path, opening: str
) -> None:
    text = " ".join(page.read_text(encoding="utf-8").split())
    start = text.index(opening)
    sentence = text[start : text.index(".", text.index("item", start)) + 1]
    assert "transcript" in sentence, sentence
