"""The spec lane's test world: `the-loop poll --once` against the loopback fake GitHub,
real tmux on a private socket, real git, and the stand-in agent of
:mod:`tests.helpers.spec_agent`, which writes each phase's document, commits it and runs
`the-loop done` in its checkout."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers import spec_agent
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import PollWorld
from the_loop.intake.events import AGENT_COMMENT_MARKER

TOKEN = "ghp_spec-test-token"
AUTHORIZED = ("alice", "bob")
REPO = "octo/app"
ITEM = "github:octo/app#15"
SPEC_DIR = "docs/specs/issue-15"


class LaneWorld(PollWorld):
    """The poll tests' world (a state root, a config pointing at the fake, a workspace
    remote, a tmux socket) with the spec stand-in agent, and alice and bob authorized."""

    def __init__(self, tmp_path: Path, socket: str, github: FakeGitHub) -> None:
        agent = [sys.executable, spec_agent.__file__, str(tmp_path / "agent-read.txt")]
        super().__init__(
            tmp_path, socket, github, agent=[*agent, "{prompt}"], authorized=AUTHORIZED
        )
        self.github = github

    def comment(self, body: str, *, login: str = "alice", number: int = 15) -> int:
        """A comment now, by GitHub's clock kept to the real one (a gate opens by ours)."""
        self.github.now = datetime.now(UTC)
        return self.github.add_comment(REPO, number, body, login=login).id

    @property
    def checkout(self) -> Path:
        record = self.registry.find_by_work_item(ITEM, include_closed=True)
        assert record is not None and record.cwd
        return Path(record.cwd)

    def lane(self) -> dict[str, Any]:
        path = self.checkout / SPEC_DIR / "work-item-state.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def status_of(self, phase: str) -> str:
        return str(self.lane().get("nodes", {}).get(phase, {}).get("status", ""))

    def poll_until(self, condition: Any, what: str, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()
            if condition():
                return
            time.sleep(0.1)
        ledger = self.store.section(ITEM, "poll")
        raise AssertionError(
            f"{what}; the agent read:\n{self.read()}\nlane: {self.lane()}\nledger: {ledger}"
        )

    def gate_comments(self) -> list[str]:
        return [
            c.body
            for c in self.github.comments
            if c.number == 15 and AGENT_COMMENT_MARKER in c.body and "ready for review" in c.body
        ]

    def document(self, phase: str) -> str:
        return (self.checkout / SPEC_DIR / f"{phase}.md").read_text(encoding="utf-8")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.checkout), *args], capture_output=True, text=True, check=True
        )
        return done.stdout


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix the wobbling widget", labels=("the-loop",))
        yield fake


@pytest.fixture
def lane_world(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> LaneWorld:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return LaneWorld(tmp_path, tmux_socket, github)
