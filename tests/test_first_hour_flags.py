"""Every global option works on either side of the subcommand, and an unknown option is
answered with the nearest known one (issue 18, item 22), through ``main([...])``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.world import World
from the_loop.cli import chosen_command


def root_of(world: World, argv: list[str]) -> dict[str, str]:
    code, out, err = world.run_cli(argv)
    assert code == 0, err
    summary = json.loads(out)["summary"]
    return {"root": summary["root"], "rule": summary["rule"]}


@pytest.mark.parametrize("command", [["state", "paths"], ["sessions", "list"], ["poll", "status"]])
def test_the_state_root_may_come_before_the_command(tmp_path: Path, command: list[str]) -> None:
    world = World(tmp_path / "home")
    chosen = tmp_path / "chosen"
    code, _, err = world.run_cli(["--state-root", str(chosen), *command])
    assert code == 0, err
    if command == ["state", "paths"]:
        argv = ["--state-root", str(chosen), *command, "--format", "json"]
        assert root_of(world, argv) == {"root": str(chosen), "rule": "--state-root"}


def test_the_state_root_after_the_command_still_works(tmp_path: Path) -> None:
    world = World(tmp_path / "home")
    argv = ["state", "paths", "--state-root", str(tmp_path / "after"), "--format", "json"]
    assert root_of(world, argv) == {"root": str(tmp_path / "after"), "rule": "--state-root"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--state-root", "a", "state", "paths", "--state-root", "b"],
        ["--state-root=a", "sessions", "list", "--state-root=b"],
    ],
)
def test_the_state_root_given_on_both_sides_is_given_twice(tmp_path: Path, argv: list[str]) -> None:
    code, out, err = World(tmp_path).run_cli(argv)
    assert (code, out) == (2, "")
    assert "argument --state-root: given more than once" in err


def test_the_command_is_found_past_the_state_roots_value() -> None:
    assert chosen_command(["--state-root", "sessions", "poll", "status"]) == "poll"


@pytest.mark.parametrize(
    ("argv", "blamed", "meant"),
    [
        (["sessions", "list", "--statsu", "active"], "the-loop sessions list", "--status"),
        (["state", "paths", "--state-rot", "x"], "the-loop state paths", "--state-root"),
        (["poll", "status", "--formt=json"], "the-loop poll status", "--format"),
        (["--stateroot=x", "state", "paths"], "the-loop", "--state-root"),
    ],
)
def test_an_unknown_option_is_answered_with_the_nearest_known_one(
    tmp_path: Path, argv: list[str], blamed: str, meant: str
) -> None:
    code, out, err = World(tmp_path).run_cli(argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"{blamed}: error: unrecognized arguments: ")
    assert f"did you mean {meant!r}?" in err
    assert err.count("\n") == 1


def test_an_unknown_option_with_nothing_close_gets_no_guess(tmp_path: Path) -> None:
    _, _, err = World(tmp_path).run_cli(["sessions", "list", "--zzzzzz"])
    assert "unrecognized arguments: --zzzzzz (see" in err and "did you mean" not in err
