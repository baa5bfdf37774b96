"""Several machines on one repository: a state root each (its own tmux server, its own
workspace clones of one bare remote, its own ``routing.machineName``), all polling the
one loopback fake GitHub with the same token, as a team's bot account would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fake_github import FakeComment, FakeGitHub
from tests.helpers.agent import reading_agent
from tests.helpers.world import World

TOKEN = "ghp_claims-test-token"
BOT = "the-loop-bot"
REPO = "octo/app"


class Machine(World):
    """One machine: ``poll`` runs one ``poll --once`` in this process."""

    def __init__(
        self,
        home: Path,
        *,
        name: str,
        socket: str,
        github: FakeGitHub,
        remote: Path | None,
        claim: str = "always",
    ) -> None:
        super().__init__(home, source="test")
        self.name = name
        self.agent_file = home / "agent-read.txt"
        routing: dict[str, Any] = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": reading_agent(self.agent_file)}},
            "prompt": "Ticket {url}: {title}",
            "authorizedUsers": ["alice"],
            "machineName": name,
            "claim": claim,
            "tmux": {"socket": socket, "harnessKillGraceSeconds": 3},
        }
        if remote is not None:
            routing["workspace"] = {
                "root": str(home / "workspaces"),
                "repositories": {REPO: str(remote)},
            }
        else:
            routing["spawnWorkdir"] = str(home)
        self.configure(
            {
                "routing": routing,
                "polling": {"repositories": [REPO], "labels": ["the-loop"]},
                "integrations": {"github": {"apiUrl": github.url}},
            }
        )

    def poll(self) -> dict[str, Any]:
        code, out, err = self.run_cli(["poll", "--once", "--format", "json"])
        assert code in (0, 1), err
        return json.loads(out)["summary"]

    def live(self, number: int) -> bool:
        return self.registry.find_by_work_item(f"github:{REPO}#{number}") is not None

    def events_named(self, name: str) -> list[dict[str, Any]]:
        log = self.layout.event_log
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [event for event in map(json.loads, lines) if event["event"] == name]

    def read(self) -> str:
        return self.agent_file.read_text(encoding="utf-8") if self.agent_file.exists() else ""


def claims_on(github: FakeGitHub, number: int) -> list[FakeComment]:
    """The claim comments standing on item ``number``."""
    with github.lock:
        return [c for c in github.comments if c.number == number and "the-loop:claim " in c.body]
