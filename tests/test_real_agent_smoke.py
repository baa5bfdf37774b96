"""The real Claude Code CLI (the pinned version ``make agent`` installs) in a real tmux pane,
in a temporary git repository with a private HOME, against the loopback fake of the
Anthropic API: a prompt becomes a turn and its answer reaches the screen, a tool call
stops at the permission prompt, the trust dialog records its answer, and nothing ever
asks for the internet."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import (
    FakeAnthropic,
    after_tool_result,
    bash,
    running_fake_anthropic,
    text,
    user_says,
)
from tests.helpers.claude_agent import (
    AgentHome,
    AgentPane,
    agent_env,
    claude_argv,
    git_repo,
    hook_logging_settings,
    hook_names,
    make_agent_home,
    read_hook_log,
)
from tests.helpers.tmuxsock import wait_until

pytestmark = pytest.mark.slow


@dataclasses.dataclass
class Agent:
    """One test's agent: its fake API, HOME, repository, pane and hook log."""

    fake: FakeAnthropic
    pane: AgentPane
    repo: Path
    base: Path
    hook_log: Path
    settings_file: Path
    home: AgentHome | None = None

    def make_home(self, **state: Any) -> AgentHome:
        """The private HOME (see ``make_agent_home``); the repository is trusted unless
        ``trusted`` says otherwise."""
        state.setdefault("trusted", [self.repo])
        self.home = make_agent_home(self.base / "agent-home", **state)
        return self.home

    def start(self, *args: str) -> None:
        home = self.home or self.make_home()
        argv = claude_argv(*args, settings=self.settings_file)
        self.pane.start(argv, self.repo, agent_env(home, self.fake.url))

    def events(self) -> list[str]:
        return hook_names(self.hook_log)

    def wait_event(self, name: str, count: int = 1, timeout: float = 15.0) -> bool:
        return wait_until(lambda: self.events().count(name) >= count, timeout=timeout)


@pytest.fixture
def agent(tmp_path: Path, tmux_socket: str) -> Iterator[Agent]:
    hook_log = tmp_path / "hooks.jsonl"
    settings_file = tmp_path / "hook-settings.json"
    settings_file.write_text(json.dumps(hook_logging_settings(hook_log)), encoding="utf-8")
    repo = git_repo(tmp_path / "repo")
    with running_fake_anthropic() as fake:
        yield Agent(fake, AgentPane(tmux_socket), repo, tmp_path, hook_log, settings_file)
        # Offline, always: a request for any other host comes to the fake as a proxy
        # request (CONNECT host:443 or an absolute URL), and none may have come.
        elsewhere = [f"{r.method} {r.path}" for r in fake.requests if not r.path.startswith("/")]
        assert elsewhere == [], f"the agent asked for the internet: {elsewhere}"


def test_a_prompt_on_the_command_line_is_a_turn_whose_answer_reaches_the_screen(
    agent: Agent,
) -> None:
    agent.fake.script(text("The magic word is XYZZY-42."), when=user_says("the magic word"))

    agent.start("Please tell me the magic word")

    screen = agent.pane.wait_for("The magic word is XYZZY-42.", timeout=30)
    assert "❯ Please tell me the magic word" in screen
    turn = agent.fake.wait_for(user_says("the magic word"), timeout=5)
    assert agent.home is not None
    assert turn.headers["x-api-key"] == agent.home.api_key
    assert turn.body is not None and turn.body["stream"] is True
    assert "Bash" in turn.tools
    assert agent.fake.pending() == 0
    assert agent.wait_event("Stop")
    assert agent.events() == ["SessionStart", "UserPromptSubmit", "Stop"]
    stop = read_hook_log(agent.hook_log)[-1]
    assert stop["last_assistant_message"] == "The magic word is XYZZY-42."
    transcript = Path(stop["transcript_path"])
    assert transcript.is_file()
    assert transcript.name == f"{stop['session_id']}.jsonl"
    agent.pane.wait_idle()


def test_a_bash_tool_call_stops_at_the_permission_prompt_until_it_is_answered(
    agent: Agent,
) -> None:
    agent.fake.script(bash("touch made-by-agent.txt", "Create a file"), when=user_says("a file"))
    agent.fake.script(text("Made the file."), when=after_tool_result())

    agent.start("--permission-mode", "default", "Please make a file")

    screen = agent.pane.wait_for("Do you want to proceed?", timeout=30)
    assert "Bash command" in screen
    assert "touch made-by-agent.txt" in screen
    assert "❯ 1. Yes" in screen
    assert not (agent.repo / "made-by-agent.txt").exists()
    assert agent.wait_event("PermissionRequest")

    agent.pane.keys("1")

    agent.pane.wait_for("Made the file.", timeout=20)
    assert (agent.repo / "made-by-agent.txt").exists()
    result = agent.fake.wait_for(after_tool_result(), timeout=5)
    assert result.tool_results()[0]["is_error"] is False
    assert agent.wait_event("Stop")
    assert agent.events() == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
    ]


def test_a_new_folder_asks_for_trust_and_the_answer_is_kept_in_claude_json(
    agent: Agent,
) -> None:
    home = agent.make_home(trusted=[])
    agent.fake.script(text("Trusted and answering."), when=user_says("hello"))

    agent.start("hello there")

    screen = agent.pane.wait_for("Yes, I trust this folder", timeout=30)
    assert "Quick safety check: Is this a project you created or one you trust?" in screen
    assert "❯ No, exit" in screen
    assert agent.fake.turns() == []
    agent.pane.choose("Yes, I trust this folder")

    agent.pane.wait_for("Trusted and answering.", timeout=20)
    project = home.claude_json()["projects"][str(agent.repo)]
    assert project["hasTrustDialogAccepted"] is True


def test_exit_ends_the_session_with_its_hook(agent: Agent) -> None:
    agent.start()
    assert agent.wait_event("SessionStart")
    agent.pane.wait_idle(timeout=30)

    agent.pane.say("/exit")

    assert wait_until(agent.pane.dead, timeout=15)
    assert agent.pane.exit_status() == 0
    assert agent.wait_event("SessionEnd")
    end = read_hook_log(agent.hook_log)[-1]
    assert end["reason"] == "prompt_input_exit"
    assert agent.fake.turns() == []
