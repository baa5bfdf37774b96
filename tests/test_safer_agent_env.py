"""The agent never inherits the-loop's own secrets (issue 18, item 28): a pane the poller
starts holds none of the GitHub token variables the-loop reads (``GITHUB_TOKEN``,
``GH_TOKEN``, the one ``integrations.github.tokenEnv`` names) nor the webhook secret,
unless the harness lists them in ``routing.harnesses.<name>.passEnv``; and a tmux server
the-loop starts holds none of them either. Real tmux on a private socket, the loopback
fake GitHub, and a stand-in agent that writes its environment to a file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github  # noqa: F401 - fixture
from the_loop.config.file import Config
from the_loop.dispatch.harnesses import harnesses_from_config
from the_loop.github.poster import TOKEN_VARIABLES
from the_loop.ref import WorkItemRef

SECRETS = {
    "GITHUB_TOKEN": "ghp_the-first-token",
    "GH_TOKEN": "ghp_the-second-token",
    "MY_LOOP_TOKEN": TOKEN,  # the one the-loop reads: integrations.github.tokenEnv names it
    "THE_LOOP_GH_WEBHOOK_SECRET": "the-webhook-secret",
}


class EnvWorld(PollWorld):
    """The poll world whose agent writes its environment, NUL-separated, to a file."""

    def __init__(self, tmp_path: Path, socket: str, fake: FakeGitHub, **harness: Any) -> None:
        super().__init__(tmp_path, socket, fake)
        self.socket = socket
        self.env_file = tmp_path / "agent-env.txt"
        document = json.loads(self.config_path.read_text(encoding="utf-8"))
        agent = ["bash", "-c", 'env -0 > "$1.part"; mv "$1.part" "$1"; exec cat', "agent"]
        routing = document["routing"]
        routing["harnesses"] = {"command": {"argv": [*agent, str(self.env_file)], **harness}}
        document["integrations"]["github"]["tokenEnv"] = "MY_LOOP_TOKEN"
        self.configure(document)

    def start_agent(self, fake: FakeGitHub) -> dict[str, str]:
        fake.add_comment(REPO, 15, "the-loop start", login="alice")
        assert self.poll()["commands"] == 1
        assert wait_until(self.env_file.exists), "the agent never started"
        entries = self.env_file.read_bytes().decode("utf-8").split("\0")
        return dict(entry.split("=", 1) for entry in entries if "=" in entry)

    def server_environment(self) -> str:
        shown = subprocess.run(
            ["tmux", "-L", self.socket, "show-environment", "-g"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
        return shown.stdout


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOOP_TEST_HARMLESS", "kept")
    return SECRETS


def test_a_pane_the_poller_starts_holds_none_of_the_loops_secrets(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    secrets: dict[str, str],
) -> None:
    world = EnvWorld(tmp_path, tmux_socket, github)
    environment = world.start_agent(github)
    assert set(secrets) & set(environment) == set()
    assert not any(value in "\n".join(environment.values()) for value in secrets.values())
    assert environment["LOOP_TEST_HARMLESS"] == "kept", "only the secrets are withheld"
    server = world.server_environment()
    assert server and not any(value in server for value in secrets.values()), (
        "the tmux server the-loop started holds none of them (`tmux show-environment -g`)"
    )


def test_a_tmux_server_started_earlier_with_the_token_does_not_hand_it_on(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    secrets: dict[str, str],
) -> None:
    started = subprocess.run(
        ["tmux", "-L", tmux_socket, "new-session", "-d", "-s", "operator", "sleep", "600"],
        env={**os.environ, **secrets},
        capture_output=True,
        check=False,
        timeout=10,
    )
    assert started.returncode == 0, started.stderr
    world = EnvWorld(tmp_path, tmux_socket, github)
    assert TOKEN in world.server_environment(), "the operator's server holds the token"
    environment = world.start_agent(github)
    assert set(secrets) & set(environment) == set()


def test_a_variable_the_harness_lists_in_pass_env_reaches_the_agent(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    secrets: dict[str, str],
) -> None:
    world = EnvWorld(tmp_path, tmux_socket, github, passEnv=["GH_TOKEN"])
    environment = world.start_agent(github)
    assert environment.get("GH_TOKEN") == secrets["GH_TOKEN"]
    assert {"GITHUB_TOKEN", "MY_LOOP_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET"} & set(
        environment
    ) == set()


def test_a_variable_another_harness_lists_is_still_withheld_from_this_one(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    secrets: dict[str, str],
) -> None:
    world = EnvWorld(tmp_path, tmux_socket, github)
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["routing"]["harnesses"]["claude"] = {"passEnv": ["GH_TOKEN"]}
    world.configure(document)
    environment = world.start_agent(github)
    assert set(secrets) & set(environment) == set()


def test_the_withheld_names_cover_every_token_variable_the_loop_reads() -> None:
    from the_loop.dispatch.settings import AGENT_SECRET_VARIABLES

    assert set(TOKEN_VARIABLES) <= set(AGENT_SECRET_VARIABLES)
    assert "THE_LOOP_GH_WEBHOOK_SECRET" in AGENT_SECRET_VARIABLES
    config = Config({"routing": {"harnesses": {"command": {"argv": ["agent"]}}}})
    argv = harnesses_from_config(config)["command"].start_argv(
        session_id="s", work_item=WorkItemRef.parse("github:octo/app#1"), prompt=""
    )
    assert argv == ["agent"], "nothing to unset per harness when no harness passes anything"


def test_an_agent_spawned_beside_the_api_holds_neither_its_token_nor_its_cookie(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    secrets: dict[str, str],
) -> None:
    """The API's token is in a file, never a variable the-loop sets (issue 30): an agent
    spawned after ``serve`` made it sees neither it nor the cookie that proves it."""
    from the_loop.api.token import api_token, cookie_value

    del secrets
    world = EnvWorld(tmp_path, tmux_socket, github)
    token = api_token(world.layout.api_token, make=True)
    environment = "\n".join(f"{k}={v}" for k, v in world.start_agent(github).items())
    assert token not in environment and cookie_value(token) not in environment
    assert token not in world.server_environment()
