"""`the-loop sessions start` tells the agent about its ticket: `routing.prompt` gets the
ticket's title, URL and body, read from the loopback fake GitHub; real tmux on a private
socket, real git, and a stand-in agent that writes its prompt to a file."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World

TOKEN = "ghp_start-test-token"
REPO = "octo/app"
ITEM = "github:octo/app#15"
URL = "https://github.com/octo/app/issues/15"
TEMPLATE = "Ticket {url}: {title}\n---\n{body}\n--- {not a placeholder}"


class StartWorld(World):
    """A config whose agent records its prompt, a workspace remote and a tmux socket."""

    def __init__(self, tmp_path: Path, tmux: str, api_url: str, prompt: str = TEMPLATE) -> None:
        super().__init__(tmp_path)
        self.prompt_file = tmp_path / "agent-prompt.txt"
        agent = ["bash", "-c", 'printf "%s" "$1" > "$2"; exec cat', "agent", "{prompt}"]
        self.configure(
            {
                "routing": {
                    "defaultHarness": "command",
                    "harnesses": {"command": {"argv": [*agent, str(self.prompt_file)]}},
                    "prompt": prompt,
                    # The fake's tickets are alice's: an authorized author's ticket is not
                    # framed as untrusted (tests/test_safer_agent_ticket.py).
                    "authorizedUsers": ["alice"],
                    "workspace": {
                        "root": str(tmp_path / "workspaces"),
                        "repositories": {REPO: str(make_remote(tmp_path, "app"))},
                    },
                    "tmux": {"socket": tmux, "harnessKillGraceSeconds": 3},
                },
                "integrations": {"github": {"apiUrl": api_url}},
            }
        )

    def start(self) -> tuple[int, str]:
        code, _out, err = self.run_cli(["sessions", "start", "--work-item", ITEM, "--no-comment"])
        return code, err

    def prompt(self) -> str:
        assert wait_until(self.prompt_file.exists), "the agent never started"
        assert wait_until(lambda: bool(self.prompt_file.read_text(encoding="utf-8")))
        return self.prompt_file.read_text(encoding="utf-8")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the wobbling widget", body="It wobbles.\nOn Mondays.")
        yield fake


def unused_port_url() -> str:
    """The URL of a loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_the_first_prompt_carries_the_tickets_title_url_and_body(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = StartWorld(tmp_path, tmux_socket, github.url)
    code, err = world.start()
    assert code == 0, err
    assert world.prompt() == (
        f"Ticket {URL}: Fix the wobbling widget\n---\nIt wobbles.\nOn Mondays.\n"
        "--- {not a placeholder}"
    )
    assert [r.path for r in github.logged("GET")] == ["/repos/octo/app/issues/15"]
    assert "warning" not in err


def test_an_empty_template_gives_the_pollers_default_prompt(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = StartWorld(tmp_path, tmux_socket, github.url, prompt="")
    assert world.start()[0] == 0
    prompt = world.prompt()
    assert prompt.startswith(f"You are working on {URL}: Fix the wobbling widget\n")
    assert "It wobbles.\nOn Mondays." in prompt


def test_the_token_named_by_token_env_is_the_one_sent(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not-this-one")
    monkeypatch.setenv("MY_LOOP_TOKEN", TOKEN)
    world = StartWorld(tmp_path, tmux_socket, github.url)
    config = world.config_path.read_text(encoding="utf-8")
    world.config_path.write_text(
        config.replace('"github": {', '"github": {"tokenEnv": "MY_LOOP_TOKEN", '), encoding="utf-8"
    )
    code, err = world.start()
    assert code == 0, err
    assert "Fix the wobbling widget" in world.prompt()


def test_without_a_token_the_start_goes_on_with_the_url_and_one_warning(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
) -> None:
    world = StartWorld(tmp_path, tmux_socket, github.url)
    code, err = world.start()
    assert code == 0, err
    assert world.prompt() == f"Ticket {URL}: \n---\n\n--- {{not a placeholder}}"
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {ITEM}: could not read the ticket (no token: set $GITHUB_TOKEN or "
        "$GH_TOKEN); the agent's prompt has no title or body"
    ]
    assert github.logged("GET") == []
    assert world.registry.find_by_work_item(ITEM) is not None


def test_an_unreachable_api_warns_once_and_the_session_still_starts(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = StartWorld(tmp_path, tmux_socket, unused_port_url())
    code, err = world.start()
    assert code == 0, err
    assert world.prompt() == f"Ticket {URL}: \n---\n\n--- {{not a placeholder}}"
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"warning: {ITEM}: could not read the ticket (could not talk to")
    assert TOKEN not in err
    assert world.registry.find_by_work_item(ITEM) is not None


def test_a_ticket_github_does_not_know_warns_and_the_session_still_starts(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    github.issues.clear()
    world = StartWorld(tmp_path, tmux_socket, github.url)
    code, err = world.start()
    assert code == 0, err
    assert "could not read the ticket" in err and "404" in err
    assert world.prompt().startswith(f"Ticket {URL}: \n")
