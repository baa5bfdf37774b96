"""`the-loop poll --once` end to end: the loopback fake GitHub, real tmux on a private
socket, real git, and a stand-in agent that writes its prompt and what it reads to a file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.agent import reading_agent
from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.intake.events import AGENT_COMMENT_MARKER

TOKEN = "ghp_poll-test-token"
REPO = "octo/app"
ITEM = "github:octo/app#15"


class PollWorld(World):
    """A state root, a config pointing at the fake, a workspace remote and a tmux socket."""

    def __init__(
        self,
        tmp_path: Path,
        socket: str,
        github: FakeGitHub,
        *,
        agent: list[str] | None = None,
        authorized: tuple[str, ...] = ("alice",),
    ) -> None:
        """``agent``: the stand-in's argv (by default one that writes what it reads to
        ``agent_file``); ``authorized``: ``routing.authorizedUsers``."""
        super().__init__(tmp_path, source="test")
        self.agent_file = tmp_path / "agent-read.txt"
        agent = agent or reading_agent(self.agent_file)
        self.configure(
            {
                "routing": {
                    "defaultHarness": "command",
                    "harnesses": {"command": {"argv": agent}},
                    "prompt": "Ticket {url}: {title}",
                    "authorizedUsers": list(authorized),
                    "workspace": {
                        "root": str(tmp_path / "workspaces"),
                        "repositories": {REPO: str(make_remote(tmp_path, "app"))},
                    },
                    "tmux": {"socket": socket, "harnessKillGraceSeconds": 3},
                },
                "polling": {"repositories": [REPO], "labels": ["the-loop"]},
                "integrations": {"github": {"apiUrl": github.url}},
            }
        )

    def poll(self) -> dict[str, Any]:
        code, out, err = self.run_cli(["poll", "--once", "--format", "json"])
        assert code == 0, err
        return json.loads(out)["summary"]

    def read(self) -> str:
        return self.agent_file.read_text(encoding="utf-8") if self.agent_file.exists() else ""

    def events_named(self, name: str) -> list[dict[str, Any]]:
        log = self.layout.event_log
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [event for event in map(json.loads, lines) if event["event"] == name]

    def live(self) -> bool:
        return self.registry.find_by_work_item(ITEM) is not None

    def portable_bytes(self) -> dict[str, tuple[int, bytes]]:
        root = self.layout.portable_dir
        return {
            str(p): (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()
        }


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(
            REPO, 15, title="Fix the wobbling widget", body="It wobbles.", labels=("the-loop",)
        )
        yield fake


@pytest.fixture
def world(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> PollWorld:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return PollWorld(tmp_path, tmux_socket, github)


def test_a_ticket_is_driven_end_to_end_by_its_comments(
    world: PollWorld, github: FakeGitHub
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    report = world.poll()
    assert report["commands"] == 1 and world.live()
    assert wait_until(lambda: "Fix the wobbling widget" in world.read())

    for text in ("first note", "second note", "third note"):
        github.add_comment(REPO, 15, text, login="alice")
    assert world.poll()["delivered"] == 3
    assert wait_until(lambda: "third note" in world.read())
    world.poll()  # nothing new: nothing pasted again
    content = world.read()
    assert [content.count(t) for t in ("first note", "second note", "third note")] == [1, 1, 1]
    assert content.index("first note") < content.index("second note") < content.index("third note")

    github.add_comment(REPO, 15, "the-loop stop", login="mallory")
    github.add_comment(
        REPO, 15, f"{AGENT_COMMENT_MARKER}\nthe-loop stop; marked words", login="alice"
    )
    world.poll()
    assert world.live(), "neither the stranger nor the-loop's own words commanded"
    assert [e["login"] for e in world.events_named("poll.unauthorized")] == ["mallory"]
    assert "marked words" not in world.read()

    github.add_comment(REPO, 15, "the-loop pause", login="alice")
    world.poll()
    github.add_comment(REPO, 15, "held one", login="alice")
    github.add_comment(REPO, 15, "held two", login="alice")
    assert world.poll()["held"] == 2
    assert "held one" not in world.read()
    github.add_comment(REPO, 15, "the-loop resume", login="alice")
    world.poll()
    assert wait_until(lambda: "held two" in world.read())
    content = world.read()
    assert content.count("held one") == 1 and content.index("held one") < content.index("held two")

    github.set_state(REPO, 15, "closed")
    assert world.poll()["closed"] == 1
    assert not world.live()


def test_an_idle_cycle_is_all_304s_and_writes_nothing_under_portable(
    world: PollWorld, github: FakeGitHub
) -> None:
    github.add_comment(REPO, 15, "a note before anyone started", login="alice")
    world.poll()
    world.poll()
    before = world.portable_bytes()
    report = world.poll()
    assert report["requests"] == report["not_modified"] > 0
    assert world.portable_bytes() == before


def test_a_second_poller_exits_1_naming_the_holder(world: PollWorld) -> None:
    from the_loop.dispatch.daemons import DaemonLock, poller_files

    lock = DaemonLock(poller_files(world.layout))
    lock.acquire()
    try:
        code, _, err = world.run_cli(["poll", "--once"])
    finally:
        lock.release()
    assert code == 1
    assert f"another poller holds {world.layout.poll_lock} (pid {os.getpid()})" in err


def test_a_config_with_no_repository_is_a_usage_error_that_takes_no_lock(world: PollWorld) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["repositories"] = []
    world.configure(document)
    code, out, err = world.run_cli(["poll", "--once"])
    assert (code, out) == (2, "")
    assert "polling.repositories is empty" in err
    assert not world.layout.poll_pidfile.exists()


def test_a_merged_linked_pull_request_ends_only_its_endpoint(
    world: PollWorld, github: FakeGitHub
) -> None:
    github.add_issue(REPO, 16, title="Fix it", pull_request=True)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    code, _, err = world.run_cli(
        ["sessions", "link-pr", "--work-item", ITEM, "--pull-request", "github:octo/app#16"]
    )
    assert code == 0, err
    world.poll()
    github.set_state(REPO, 16, "closed", merged=True)
    assert world.poll()["closed"] == 1
    record = world.registry.find_by_work_item(ITEM)
    assert record is not None and record.is_live, "the work item's own session goes on"
    endpoint = record.endpoint_for("github:octo/app#16")
    assert endpoint is not None and not endpoint.is_live
    ledger = world.store.pull_request_ledger(ITEM, "github:octo/app#16")
    assert ledger is not None and ledger["state"] == "merged"
    assert [e.get("pull_request") for e in world.events_named("poll.closure")] == [
        "github:octo/app#16"
    ]


def test_the_pollers_machine_local_files_are_not_mistaken_for_session_records(
    world: PollWorld, github: FakeGitHub
) -> None:
    github.add_comment(REPO, 15, "a note", login="alice")
    world.poll()
    assert (world.layout.local_dir / "poll-cursors.json").exists()
    assert (world.layout.local_dir / "poll-status.json").exists()
    code, _, err = world.run_cli(["sessions", "list", "--format", "json"])
    assert code == 0 and "poll-" not in err
    code, _, err = world.run_cli(["state", "check"])
    assert "poll-" not in err


def test_the_breaker_holds_deliveries_past_the_hourly_limit_with_one_notice_and_one_event(
    world: PollWorld, github: FakeGitHub
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["maxDeliveriesPerHour"] = 1
    world.configure(document)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    github.add_comment(REPO, 15, "within the limit", login="alice")
    github.add_comment(REPO, 15, "past the limit", login="alice")
    assert world.poll()["delivered"] == 1
    world.poll()
    world.poll()
    assert wait_until(lambda: "within the limit" in world.read())
    assert "past the limit" not in world.read()
    marked = [c for c in github.comments if AGENT_COMMENT_MARKER in c.body]
    notices = [c for c in marked if "the-loop:claim" not in c.body]  # the start's claim aside
    assert len(notices) == 1 and "holding further comments" in notices[0].body
    assert len(world.events_named("poll.breaker_open")) == 1
    assert world.live(), "the notice the-loop posted is its own words: it commands nothing"
