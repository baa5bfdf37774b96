"""The shared test world: the CLI it runs and the stores it opens see one state root."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.world import World
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")


def register(world: World) -> tuple[int, str, str]:
    argv = ["sessions", "register", "--work-item", ITEM.ref, "--harness", "claude"]
    return world.run_cli([*argv, "--harness-session-id", "s1", "--cwd", str(world.home)])


def test_a_session_the_cli_registers_is_in_the_worlds_registry_and_event_log(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    code, _, _ = register(world)
    assert code == 0
    record = world.registry.find_by_work_item(ITEM)
    assert record is not None and record.harness_session_id == "s1"
    assert world.layout.root == tmp_path / "state"
    assert world.layout.event_log.is_file()


def test_run_cli_captures_the_output_and_leaves_nothing_for_capsys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(tmp_path)
    register(world)
    code, out, err = world.run_cli(["sessions", "list", "--format", "json"])
    assert code == 0 and ITEM.ref in out and err == ""
    assert capsys.readouterr().out == ""


def test_a_usage_error_comes_back_from_run_cli_as_exit_2_with_its_message_on_err(
    tmp_path: Path,
) -> None:
    code, out, err = World(tmp_path).run_cli(["sessions", "list", "--no-such-flag"])
    assert (code, out) == (2, "")
    assert "--no-such-flag" in err


def test_run_returns_a_usage_error_as_its_exit_code(tmp_path: Path) -> None:
    assert World(tmp_path).run("sessions", "list", "--no-such-flag") == 2


def test_the_config_names_the_worlds_state_root_over_whatever_the_document_says(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, {"state": {"root": "/elsewhere"}, "routing": {"sessionPerPr": "never"}})
    assert world.context.config.get("state.root") == str(tmp_path / "state")
    assert world.context.config.get("routing.sessionPerPr") == "never"
