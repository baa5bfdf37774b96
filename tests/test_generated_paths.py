"""Every path the CLI generates under the state root is declared in GENERATED_PATHS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import wait_until
from tests.reset_world import World
from the_loop.layout import GENERATED_PATHS, GeneratedPath
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER = WorkItemRef.parse("github:octo/app#21")
PLACEHOLDERS = {"<slug>": r"[A-Za-z0-9._~-]+", "<store>": r"(?:local|portable)"}


def declared_pattern(path: GeneratedPath) -> re.Pattern[str]:
    pattern = re.escape(path.where)
    for placeholder, regex in PLACEHOLDERS.items():
        pattern = pattern.replace(re.escape(placeholder), regex)
    return re.compile(pattern + r"\Z")


def undeclared(root: Path) -> list[str]:
    patterns = [declared_pattern(path) for path in GENERATED_PATHS]
    found = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    return [name for name in found if not any(p.match(name) for p in patterns)]


def test_a_path_outside_the_declaration_is_caught(tmp_path: Path) -> None:
    (tmp_path / "portable").mkdir()
    (tmp_path / "portable" / "github-o-r-1.json").write_text("{}")
    (tmp_path / "surprise.json").write_text("{}")
    assert undeclared(tmp_path) == ["surprise.json"]


@pytest.mark.slow
def test_a_whole_lifecycle_generates_only_declared_paths(tmp_path: Path, tmux_socket: str) -> None:
    world = World(tmp_path, tmux_socket)
    for ref in (ITEM, OTHER):
        assert world.run("sessions", "start", "--work-item", ref.ref, "--no-comment") == 0
    assert wait_until(lambda: "ready" in world.tmux().capture(world.target(ITEM)))
    steps = [
        ("link-pr", "--work-item", ITEM.ref, "--pull-request", "16"),
        ("pause", "--work-item", ITEM.ref, "--no-comment"),
        ("resume", "--work-item", ITEM.ref, "--no-comment"),
        ("stop", "--work-item", ITEM.ref, "--no-comment"),
        ("cleanup", "--work-item", ITEM.ref),
        ("reset", "--all", "--dry-run"),
    ]
    for step in steps:
        assert world.run("sessions", *step) == 0, step
    generated = undeclared(world.layout.root)
    assert world.run("sessions", "reset", "--all") == 0
    assert generated == [] and undeclared(world.layout.root) == []
    assert (world.layout.root / "portable").is_dir()
