"""``the-loop docs [TOPIC]``: the CLI reference pages, read from the package itself.

A built wheel carries ``docs/cli/`` as ``the_loop/reference/`` (decision 017); a source
checkout (an editable install) has no copy and reads its ``docs/cli/``. A page's topic is
its path under that folder without ``.md``; a command page drops ``commands/`` unless a
reference page has its name (``commands/state`` beside ``state``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from the_loop.commands.common import format_parent
from the_loop.commands.render import Result
from the_loop.errors import ELLIPSIS, TheLoopError

PACKAGE = Path(__file__).resolve().parent.parent
#: The pages inside an installed package (copied there by ``scripts/build_reference.py``).
SHIPPED = PACKAGE / "reference"
#: The pages of a source checkout: the one source every copy is made from.
CHECKOUT = PACKAGE.parent / "docs" / "cli"
COMMAND_PAGES = "commands"
#: About how long a topic's summary may be.
SUMMARY_LIMIT = 90

_COMMAND_TITLE = re.compile(r"the-loop [a-z-]+")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_CLAUSE_END = re.compile(r"[.:;](\s|$)")


def pages_directory() -> Path | None:
    """Where the pages are: the package's own copy, else a source checkout's ``docs/cli/``."""
    if SHIPPED.is_dir():
        return SHIPPED
    if (PACKAGE.parent / "pyproject.toml").is_file() and CHECKOUT.is_dir():
        return CHECKOUT
    return None


def topics() -> dict[str, Path]:
    """Every topic and its page: the reference pages, then the command pages, by name."""
    directory = pages_directory()
    if directory is None:
        return {}
    reference = {page.stem: page for page in sorted(directory.glob("*.md"))}
    commands = {
        (page.stem if page.stem not in reference else f"{COMMAND_PAGES}/{page.stem}"): page
        for page in sorted((directory / COMMAND_PAGES).glob("*.md"))
    }
    return reference | commands


def summary(page: Path) -> str:
    """The page's title; for a command page, the command and its lead's first clause."""
    lines = page.read_text(encoding="utf-8").splitlines()
    title = _plain(lines[0].lstrip("#")) if lines else page.stem
    if not _COMMAND_TITLE.fullmatch(title):
        return title
    lead: list[str] = []
    for line in lines[1:]:
        if line.strip():
            lead.append(line.strip())
        elif lead:
            break
    clause = _CLAUSE_END.split(_plain(" ".join(lead)), maxsplit=1)[0]
    return _shortened(f"{title}: {clause}" if clause else title)


def _plain(text: str) -> str:
    """Markdown as plain words: links as their text, no backticks."""
    return _LINK.sub(r"\1", text).replace("`", "").strip()


def _shortened(text: str) -> str:
    if len(text) <= SUMMARY_LIMIT:
        return text
    return text[: SUMMARY_LIMIT - len(ELLIPSIS)].rsplit(" ", 1)[0].rstrip(",;") + ELLIPSIS


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``docs``; its topics are the pages found (a listing, never the config)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "docs",
        parents=[format_parent()],
        help="print a page of the CLI reference (the config, exit codes, each command)",
        description="Print a page of the CLI reference that ships with the-loop, as "
        "Markdown. With no topic, list the topics, one a line with its summary.",
    )
    parser.add_argument(
        "topic",
        nargs="?",
        choices=list(topics()),
        metavar="TOPIC",
        help="the page to print (no topic: list them)",
    )
    parser.set_defaults(func=run_docs)
    return parser


def run_docs(args: argparse.Namespace) -> Result:
    """The page of ``args.topic``, or with none the list of topics."""
    pages = topics()
    if not pages:
        raise TheLoopError(f"no reference pages in {SHIPPED}: this install of the-loop is broken")
    topic: str | None = args.topic
    if topic is not None:
        page = pages[topic]
        text = page.read_text(encoding="utf-8")
        item = {"topic": topic, "path": str(page), "text": text}
        return Result(items=[item], text=lambda: text.splitlines())
    items = [
        {"topic": name, "summary": summary(page), "path": str(page)} for name, page in pages.items()
    ]
    width = max(len(name) for name in pages)
    return Result(
        items=items, text=lambda: [f"{item['topic']:<{width}}  {item['summary']}" for item in items]
    )
