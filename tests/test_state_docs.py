"""Docs parity: ``docs/cli/state.md`` shows exactly the declarations in code.

Each table of the page is parsed (backticks dropped) and compared, row for row and in
order, with ``GENERATED_PATHS``, ``ATTRIBUTE_FILES``/``ALLOWED_KINDS``,
``ATTRIBUTE_KINDS``, ``ATTRIBUTES`` and the upgrade report's ``RETIRED_KINDS``;
``docs/cli/commands/state.md`` documents every flag of ``the-loop state``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from the_loop.attributes import ALLOWED_KINDS, ATTRIBUTE_FILES, ATTRIBUTE_KINDS, ATTRIBUTES
from the_loop.cli import build_parser
from the_loop.layout import DEFAULT_STATE_ROOT, GENERATED_PATHS
from the_loop.upgrade import RETIRED_KINDS

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli"
STATE_DOC = DOCS / "state.md"
COMMAND_DOC = DOCS / "commands" / "state.md"


def table_after(header: str) -> list[tuple[str, ...]]:
    """The rows of the table whose header row is ``header`` (cells without backticks)."""
    lines = STATE_DOC.read_text(encoding="utf-8").splitlines()
    assert lines.count(header) == 1, f"{STATE_DOC} must have exactly one table {header!r}"
    rows: list[tuple[str, ...]] = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip().replace("`", "") for cell in line.strip("|").split("|")]
        rows.append(tuple(cells))
    return rows


def yes_no(value: bool) -> str:
    return "yes" if value else "no"


def test_the_generated_paths_table_equals_generated_paths() -> None:
    expected = [
        (path.where, yes_no(path.portable), path.name, path.holds, path.why)
        for path in GENERATED_PATHS
    ]
    assert table_after("| where | travels | name | holds | why |") == expected


def test_the_files_table_equals_attribute_files_and_allowed_kinds() -> None:
    expected = [
        (
            item.name,
            item.where,
            yes_no(item.tracked),
            item.travels,
            ", ".join(ALLOWED_KINDS[item.name]),
        )
        for item in ATTRIBUTE_FILES
    ]
    assert table_after("| file | where | tracked | travels | may hold |") == expected


def test_the_kinds_table_equals_attribute_kinds() -> None:
    assert table_after("| kind | meaning |") == list(ATTRIBUTE_KINDS.items())


def test_the_attribute_table_equals_attributes() -> None:
    expected = [(item.file, item.key, item.kind, item.holds) for item in ATTRIBUTES]
    assert table_after("| file | key | kind | holds |") == expected


def test_the_upgrade_table_equals_the_retired_kinds() -> None:
    expected = [(kind, what, replaced) for kind, (what, replaced) in RETIRED_KINDS.items()]
    assert table_after("| kind | what | replaced by |") == expected


def gitignore_block() -> str:
    text = STATE_DOC.read_text(encoding="utf-8")
    match = re.search(r"```gitignore\n(.*?)```", text, re.DOTALL)
    assert match is not None, f"{STATE_DOC} has no gitignore block"
    return match.group(1)


def ignored(repository: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (relative to ``repository``) git ignores."""
    completed = subprocess.run(
        ["git", "check-ignore", "--no-index", "--", *paths],
        cwd=repository,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return set(completed.stdout.splitlines())


def test_the_gitignore_block_ignores_every_path_that_never_travels_and_nothing_that_does(
    tmp_path: Path,
) -> None:
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    root = tmp_path / DEFAULT_STATE_ROOT
    root.mkdir()
    (root / ".gitignore").write_text(gitignore_block(), encoding="utf-8")
    filled = {
        f"{DEFAULT_STATE_ROOT}/{path.where}".replace("<slug>", "github-octo-app-15").replace(
            "<store>", "local"
        ): path.portable
        for path in GENERATED_PATHS
    }
    others = {
        f"{DEFAULT_STATE_ROOT}/{name}": travels
        for name, travels in (
            ("cli-config.yaml", True),
            (".gitignore", True),
            ("sessions/control/github-octo-app-15.json", False),
            ("workspaces/.worktrees/github.com/octo/app/github-octo-app-15/README.md", False),
            ("my-poller.pid", False),
            ("portable/.github-octo-app-15.json.x1.tmp", False),
            (".cli-config.yaml.x1.tmp", False),
        )
    }
    expected = {**filled, **others}
    found = ignored(tmp_path, list(expected))
    assert found == {path for path, travels in expected.items() if not travels}


def state_actions() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:  # argparse exposes its subparsers no other way
        if isinstance(action, argparse._SubParsersAction):
            state: argparse.ArgumentParser = action.choices["state"]  # pyright: ignore[reportUnknownVariableType]
            for inner in state._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    return dict(inner.choices)  # pyright: ignore[reportUnknownArgumentType]
    raise AssertionError("the parser has no state actions")


def test_every_flag_of_every_state_action_is_documented() -> None:
    text = COMMAND_DOC.read_text(encoding="utf-8")
    actions = state_actions()
    assert sorted(actions) == ["attributes", "check", "paths"]
    for name, parser in actions.items():
        assert f"## `state {name}`" in text
        flags = [flag for action in parser._actions for flag in action.option_strings]
        missing = [flag for flag in flags if not re.search(rf"`{re.escape(flag)}(?![\w-])", text)]
        assert missing == [], f"flags of state {name} missing from {COMMAND_DOC}: {missing}"
