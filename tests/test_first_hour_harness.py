"""A harness that cannot run names the way out: ``--harness`` and the config key to change
(issue 18, item 19), through ``main([...])`` on a private tmux server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.cli import main

ITEM = "github:octo/app#15"


def world_with(tmp_path: Path, socket: str, **routing: object) -> World:
    workdir = tmp_path / "workdir"
    workdir.mkdir(exist_ok=True)
    document = {"routing": {"spawnWorkdir": str(workdir), "tmux": {"socket": socket}, **routing}}
    return World(tmp_path, document)


def test_a_claude_that_is_not_on_path_names_its_binary_key_and_the_harness_flag(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    world = world_with(
        tmp_path, tmux_socket, harnesses={"claude": {"binary": "no-such-claude-here"}}
    )
    code, out, err = world.run_cli(["sessions", "start", "--work-item", ITEM, "--no-comment"])
    assert code == 1 and out == ""
    assert "no-such-claude-here is not on PATH" in err
    assert "routing.harnesses.claude.binary" in err
    assert "--harness cursor|command" in err
    assert "routing.defaultHarness" in err


def test_the_command_placeholder_init_writes_names_the_argv_key_and_the_harness_flag(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    capsys: pytest.CaptureFixture[str],
) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    assert main(["init", "--harness", "command"]) == 0
    config = fresh / ".the-loop" / "cli-config.yaml"
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["routing"]["tmux"] = {"socket": tmux_socket}  # only the test's private server
    config.write_text(json.dumps(document), encoding="utf-8")
    capsys.readouterr()
    assert main(["sessions", "start", "--work-item", ITEM, "--no-comment"]) == 1
    err = capsys.readouterr().err
    assert "my-agent (still init's placeholder) is not on PATH" in err
    assert "routing.harnesses.command.argv" in err
    assert "--harness claude|cursor" in err
    assert "routing.defaultHarness" in err


def test_an_unconfigured_command_harness_names_the_argv_key_and_the_harness_flag(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    world = world_with(tmp_path, tmux_socket)
    argv = ["sessions", "start", "--work-item", ITEM, "--harness", "command", "--no-comment"]
    code, _, err = world.run_cli(argv)
    assert code == 1
    assert "set routing.harnesses.command.argv" in err and "--harness claude|cursor" in err
