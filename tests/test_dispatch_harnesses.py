"""Harness adapters: the argv each agent is started and resumed with."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.config.file import Config
from the_loop.dispatch.harnesses import (
    HARNESSES,
    ClaudeHarness,
    CommandHarness,
    CursorHarness,
    harnesses_from_config,
)
from the_loop.dispatch.tmux import TmuxRunner, tmux_session_name
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#7")
SID = "0b9c3f2e-8d1a-4c5e-9f00-123456789abc"


def test_claude_starts_with_its_session_id_model_extra_args_and_prompt() -> None:
    claude = ClaudeHarness("claude", ["--permission-mode", "acceptEdits"])
    argv = claude.start_argv(session_id=SID, work_item=ITEM, prompt="fix #7", model="opus")
    assert argv == [
        "claude", "--session-id", SID, "--model", "opus",
        "--permission-mode", "acceptEdits", "fix #7",
    ]  # fmt: skip


def test_claude_resumes_by_session_id_and_leaves_out_what_is_empty() -> None:
    claude = ClaudeHarness()
    assert claude.resume_argv(session_id=SID, work_item=ITEM) == ["claude", "--resume", SID]
    assert claude.start_argv(session_id=SID, work_item=ITEM, prompt="", effort="high") == [
        "claude", "--session-id", SID,
    ]  # fmt: skip


def test_cursor_starts_and_resumes_with_its_chat_id() -> None:
    cursor = CursorHarness("/opt/cursor-agent", ["--force"])
    assert cursor.start_argv(session_id=SID, work_item=ITEM, prompt="go", model="gpt-5") == [
        "/opt/cursor-agent", "--resume", SID, "--model", "gpt-5", "--force", "go",
    ]  # fmt: skip
    assert cursor.resume_argv(session_id=SID, work_item=ITEM) == [
        "/opt/cursor-agent", "--resume", SID, "--force",
    ]  # fmt: skip


def test_a_session_id_that_looks_like_an_option_is_refused() -> None:
    with pytest.raises(ValueError, match="session id"):
        ClaudeHarness().resume_argv(session_id="--dangerously-skip-permissions", work_item=ITEM)
    with pytest.raises(ValueError, match="session id"):
        CursorHarness().start_argv(session_id="", work_item=ITEM, prompt="x")


def test_the_command_harness_fills_each_placeholder_inside_each_element() -> None:
    command = CommandHarness(
        ["bash", "-lc", "my-agent --session {session_id}", "{work_item}", "{model}/{effort}"]
    )
    argv = command.start_argv(session_id=SID, work_item=ITEM, prompt="p", model="m", effort="high")
    assert argv == ["bash", "-lc", f"my-agent --session {SID}", "github:octo/app#7", "m/high"]


def test_the_command_harness_never_rescans_a_value_or_touches_other_braces() -> None:
    command = CommandHarness(["agent", "{prompt}", "{unknown} {} {{session_id}}"])
    argv = command.start_argv(session_id=SID, work_item=ITEM, prompt="say {session_id} $(x)")
    assert argv == ["agent", "say {session_id} $(x)", f"{{unknown}} {{}} {{{SID}}}"]


def test_the_command_harness_resumes_with_its_resume_argv_or_else_its_argv() -> None:
    with_resume = CommandHarness(["agent", "{session_id}"], ["agent", "--resume", "{session_id}"])
    assert with_resume.resume_argv(session_id=SID, work_item=ITEM) == ["agent", "--resume", SID]
    plain = CommandHarness(["agent", "{session_id}", "{prompt}"])
    assert plain.resume_argv(session_id=SID, work_item=ITEM) == ["agent", SID, ""]


def test_an_empty_command_argv_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty argv"):
        CommandHarness([])
    with pytest.raises(ValueError, match="resume argv"):
        CommandHarness(["agent"], [])


def test_each_new_session_id_is_a_fresh_uuid4() -> None:
    harness = ClaudeHarness()
    first, second = harness.new_session_id(), harness.new_session_id()
    assert first != second
    assert uuid.UUID(first).version == 4


def test_a_harness_is_available_only_when_its_binary_is_found(tmp_path: Path) -> None:
    program = tmp_path / "agent"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert CommandHarness([str(program)]).available() is True
    assert CommandHarness(["bash", "-c", "true"]).available() is True
    assert ClaudeHarness(str(tmp_path / "no-claude")).available() is False


def test_harnesses_are_built_from_the_routing_config() -> None:
    config = Config(
        {
            "routing": {
                "harnesses": {
                    "claude": {"binary": "/opt/claude", "args": ["--verbose"]},
                    "command": {"argv": ["agent", "{session_id}"], "resumeArgv": ["agent", "-r"]},
                }
            }
        }
    )
    harnesses = harnesses_from_config(config)
    assert sorted(harnesses) == ["claude", "command", "cursor"]
    assert harnesses["claude"].start_argv(session_id=SID, work_item=ITEM, prompt="") == [
        "/opt/claude", "--session-id", SID, "--verbose",
    ]  # fmt: skip
    assert harnesses["cursor"].binary == "cursor-agent"
    assert harnesses["command"].resume_argv(session_id=SID, work_item=ITEM) == ["agent", "-r"]
    assert sorted(harnesses_from_config(Config())) == ["claude", "cursor"]


def test_a_command_harness_stand_in_agent_runs_in_tmux_with_its_values(
    tmux_socket: str,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    command = CommandHarness(
        [
            "bash",
            "-c",
            'echo "session=$1 item=$2"; sleep 300',
            "agent",
            "{session_id}",
            "{work_item}",
        ]
    )
    tmux = TmuxRunner(socket=tmux_socket, timeout=30)
    argv = command.start_argv(session_id=SID, work_item=ITEM, prompt="")
    tmux.spawn(tmux_session_name(ITEM.slug), tmp_path, argv)
    expected = f"session={SID} item=github:octo/app#7"
    assert wait_until(lambda: expected in tmux.capture(tmux_session_name(ITEM.slug)))


def test_one_harness_table_names_what_the_config_schema_and_the_adapters_accept() -> None:
    schema_path = Path(__file__).parent.parent / "the_loop" / "schemas" / "cli-config.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    routing = schema["properties"]["routing"]["properties"]
    assert tuple(routing["defaultHarness"]["enum"]) == HARNESSES
    config = Config({"routing": {"harnesses": {"command": {"argv": ["true"]}}}})
    assert tuple(harnesses_from_config(config)) == HARNESSES
