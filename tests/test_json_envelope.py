"""``--format json`` on every command that changes state: one versioned document.

docs/cli/json.md: ``{"version", "command", "ok", "summary", "items", "warnings",
"errors"}``, each item on a line of its own, nothing else on stdout. Real tmux, real
git, a stand-in agent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import wait_until
from tests.reset_world import World
from the_loop.cli import main
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
HAND = WorkItemRef.parse("github:octo/app#21")
MEMBERS = ["version", "command", "ok", "summary", "items", "warnings", "errors"]


def document(
    world: World, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, dict[str, Any]]:
    """Run ``argv`` with ``--format json``; the exit code and the one document printed."""
    capsys.readouterr()
    code = world.run(*argv, "--format", "json")
    out = capsys.readouterr().out
    parsed: dict[str, Any] = json.loads(out)
    assert list(parsed) == MEMBERS
    assert len(out.splitlines()) == max(1, len(parsed["items"]) + 2)  # one line per item
    return code, parsed


def one_item(parsed: dict[str, Any], command: str, *warnings: str) -> dict[str, Any]:
    assert (parsed["version"], parsed["command"], parsed["ok"]) == (1, command, True)
    assert (parsed["warnings"], parsed["errors"]) == (list(warnings), [])
    [item] = parsed["items"]
    return item


@pytest.fixture
def world(tmp_path: Path, tmux_socket: str) -> World:
    return World(tmp_path, tmux_socket)


@pytest.mark.slow
def test_every_action_that_changes_a_session_prints_one_document_with_one_item(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    item = ("--work-item", ITEM.ref)
    code, started = document(world, capsys, "sessions", "start", *item, "--no-comment")
    no_ticket = (  # no token in this world: the agent's prompt has the ticket's URL only
        f"{ITEM.ref}: could not read the ticket (no token: set $GITHUB_TOKEN or $GH_TOKEN); "
        "the agent's prompt has no title or body"
    )
    started_item = one_item(started, "sessions start", no_ticket)
    assert (code, started_item["ref"], started_item["outcome"]) == (0, ITEM.ref, "started")
    assert started_item["checkout"] == str(world.worktree(ITEM))
    assert started_item["session"]["tmuxTarget"] == world.target(ITEM)
    assert wait_until(lambda: "ready" in world.tmux().capture(world.target(ITEM)))
    steps = [
        (("pause", *item, "--no-comment"), "paused"),
        (("pause", *item, "--no-comment"), "already paused"),
        (("resume", *item, "--no-comment"), "resumed"),
        (("start", *item, "--no-comment"), "already running"),
        (("link-pr", *item, "--pull-request", "16"), "linked"),
        (("stop", *item, "--no-comment"), "closed"),
        (("stop", *item, "--no-comment"), "recorded"),
    ]
    for argv, outcome in steps:
        code, parsed = document(world, capsys, "sessions", *argv)
        assert (code, one_item(parsed, f"sessions {argv[0]}")["outcome"]) == (0, outcome), argv
    code, linked = document(world, capsys, "sessions", "link-pr", *item, "--pull-request", "16")
    assert one_item(linked, "sessions link-pr")["pullRequest"] == "github:octo/app#16"


@pytest.mark.slow
def test_close_cleanup_register_and_reset_print_one_document_too(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    item = ("--work-item", ITEM.ref)
    assert world.run("sessions", "start", *item, "--no-comment") == 0
    code, closed = document(world, capsys, "sessions", "close", *item, "--kill-tmux")
    closed_item = one_item(closed, "sessions close")
    assert (code, closed_item["outcome"], closed_item["checkoutRemoved"]) == (0, "closed", True)
    assert closed_item["session"]["workItem"] == ITEM.ref
    code, cleaned = document(world, capsys, "sessions", "cleanup", *item)
    assert (code, cleaned["summary"]) == (0, {"dryRun": False})
    assert one_item(cleaned, "sessions cleanup")["recordRemoved"] is True
    register = ("register", "--work-item", HAND.ref, "--harness", "command")
    here = ("--harness-session-id", "s-1", "--cwd", str(world.tmp_path))
    code, registered = document(world, capsys, "sessions", *register, *here)
    registered_item = one_item(registered, "sessions register")
    assert (code, registered_item["outcome"]) == (0, "registered")
    assert registered_item["session"]["harnessSessionId"] == "s-1"
    code, reset = document(world, capsys, "sessions", "reset", "--all")
    assert (code, reset["summary"], reset["ok"]) == (0, {"dryRun": False}, True)
    assert {entry["ref"] for entry in reset["items"]} == {ITEM.ref, HAND.ref}


def test_a_failed_action_as_json_still_prints_the_document_with_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {tmp_path / 'state'}\n", encoding="utf-8")
    argv = ["--config", str(config), "sessions", "close", "--work-item", ITEM.ref]
    assert main([*argv, "--format", "json"]) == 1
    captured = capsys.readouterr()
    message = f"{ITEM.ref} has no live session on this machine"
    assert json.loads(captured.out) == {
        "version": 1,
        "command": "sessions close",
        "ok": False,
        "summary": {},
        "items": [],
        "warnings": [],
        "errors": [message],
    }
    assert captured.err == f"error: {message}\n"


def test_bad_input_as_json_prints_nothing_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sessions", "link-pr", "--work-item", ITEM.ref, "--pull-request", "15"]
    assert main([*argv, "--format", "json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {ITEM.ref} cannot be linked to itself\n"


def test_the_format_flag_offers_text_and_json_on_every_command_that_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printing = [
        ["sessions", name]
        for name in ("register", "link-pr", "list", "close", "start", "pause", "resume")
    ]
    printing += [["sessions", "stop"], ["sessions", "cleanup"], ["sessions", "reset"]]
    printing += [["events"], ["state", "check"], ["state", "paths"], ["state", "attributes"]]
    for argv in printing:
        assert main([*argv, "--help"]) == 0
        usage = capsys.readouterr().out
        assert "--format {text,json" in usage, argv


def test_a_warning_said_while_listing_is_in_the_document_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {tmp_path / 'state'}\n", encoding="utf-8")
    (tmp_path / "state" / "local").mkdir(parents=True)
    (tmp_path / "state" / "local" / "github-octo-app-99.json").write_text("{not json")
    assert main(["--config", str(config), "sessions", "list", "--format", "json"]) == 0
    captured = capsys.readouterr()
    parsed = json.loads(captured.out)
    [warning] = parsed["warnings"]
    assert (parsed["ok"], parsed["items"]) == (True, [])
    assert warning.startswith("skipping unreadable session record")
    assert captured.err.splitlines()[0] == f"warning: {warning}"


def test_table_is_the_same_as_text_where_it_was_accepted_before(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outputs: list[str] = []
    for output_format in ("text", "table"):
        assert main(["state", "paths", "--format", output_format]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "\nWHERE" in outputs[0]
