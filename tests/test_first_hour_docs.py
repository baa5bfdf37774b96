"""``the-loop docs [topic]`` prints the reference pages the package carries, and no message
cites a ``docs/`` path an installed copy does not have (issue 18, item 20)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import the_loop
from the_loop.cli import main

PACKAGE = Path(the_loop.__file__).resolve().parent
REPO_DOCS = PACKAGE.parent / "docs"
PAGES = REPO_DOCS / "cli"
EVERY_PAGE = sorted(PAGES.rglob("*.md"))


def listed(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    assert main(["docs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return {topic: summary.strip() for topic, summary in (line.split(None, 1) for line in lines)}


def test_docs_lists_one_topic_per_page_each_with_a_one_line_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topics = listed(capsys)
    assert len(topics) == len(EVERY_PAGE)
    assert {"config", "state", "exit-codes", "json", "conventions"} <= set(topics)
    assert {"poll", "sessions", "events", "init", "completion", "docs"} <= set(topics)
    assert topics["config"] == "The CLI config"
    assert topics["exit-codes"] == "Exit codes"
    assert topics["poll"].startswith("the-loop poll: ")
    assert all(summary and len(summary) <= 100 for summary in topics.values())


def test_a_command_page_named_like_a_reference_page_keeps_its_folder_in_its_topic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topics = listed(capsys)
    assert topics["state"] == "Where the-loop keeps state"
    assert topics["commands/state"].startswith("the-loop state: ")
    assert topics["commands/config"].startswith("the-loop config: ")


@pytest.mark.parametrize(
    ("topic", "page"),
    [
        ("config", "config.md"),
        ("state", "state.md"),
        ("exit-codes", "exit-codes.md"),
        ("poll", "commands/poll.md"),
        ("sessions", "commands/sessions.md"),
        ("docs", "commands/docs.md"),
        ("commands/state", "commands/state.md"),
        ("commands/config", "commands/config.md"),
    ],
)
def test_docs_with_a_topic_prints_its_page(
    topic: str, page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["docs", topic]) == 0
    captured = capsys.readouterr()
    assert captured.out == (PAGES / page).read_text(encoding="utf-8")
    assert captured.err == ""


def test_an_unknown_topic_is_a_usage_error_naming_the_nearest_topic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["docs", "confg"]) == 2
    captured = capsys.readouterr()
    assert "invalid choice: 'confg' — did you mean 'config'?" in captured.err
    assert captured.out == ""
    assert main(["docs", "nothing-like-it"]) == 2
    assert "'exit-codes'" in capsys.readouterr().err  # the choices are listed


def test_docs_as_json_gives_each_topic_its_file_and_a_page_its_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["docs", "exit-codes", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    [item] = document["items"]
    assert (document["command"], document["ok"]) == ("docs", True)
    assert item["topic"] == "exit-codes"
    assert Path(item["path"]).resolve() == (PAGES / "exit-codes.md").resolve()
    assert item["text"] == (PAGES / "exit-codes.md").read_text(encoding="utf-8")
    assert main(["docs", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [set(item) for item in items] == [{"topic", "summary", "path"}] * len(EVERY_PAGE)


def messages() -> Iterator[tuple[str, str]]:
    """Every string literal of the package that is not a docstring, with its module."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bare = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in bare:
                continue
            if isinstance(node.value, str):
                yield str(path.relative_to(PACKAGE)), node.value


def test_no_message_of_the_package_cites_a_path_of_the_repositorys_docs() -> None:
    """An installed copy has no ``docs/``: a message cites ``the-loop docs <topic>``."""
    cited = [f"docs/{entry.name}" for entry in REPO_DOCS.iterdir()]
    found = [(module, text) for module, text in messages() if any(c in text for c in cited)]
    assert found == []


def test_every_topic_a_message_cites_is_a_topic_of_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topics = set(listed(capsys))
    cited = {
        (module, topic)
        for module, text in messages()
        for topic in re.findall(r"the-loop docs ([a-z][\w/-]*)", text)
    }
    assert {topic for _, topic in cited} >= {"config"}
    assert sorted((module, topic) for module, topic in cited if topic not in topics) == []


@pytest.mark.parametrize(("command", "page"), [("docs", "docs.md"), ("config check", "config.md")])
def test_every_flag_of_the_new_commands_is_on_their_page(command: str, page: str) -> None:
    from the_loop.cli import build_parser
    from the_loop.commands.parsing import walk

    parser = dict(walk(build_parser()))[command]
    text = (PAGES / "commands" / page).read_text(encoding="utf-8")
    flags = [flag for action in parser._actions for flag in action.option_strings]  # pyright: ignore[reportPrivateUsage]
    missing = [flag for flag in flags if not re.search(rf"`{re.escape(flag)}(?![\w-])", text)]
    assert flags and missing == []
