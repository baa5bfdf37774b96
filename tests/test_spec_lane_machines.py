"""The spec lane on a repository two machines share (issue 31 over claims): the machine
whose claim won the start keeps the lane, says its gates and takes its decisions; the
other one only sees the decisions, and never answers them as if there were no lane."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import the_loop.adapters.poll_factory as poll_factory
from tests.fake_github import FakeGitHub, serve
from tests.helpers import spec_agent
from tests.helpers.gitrepo import make_remote
from tests.helpers.machines import BOT, REPO, TOKEN, Machine
from tests.helpers.tmuxsock import private_tmux_socket
from the_loop.github.backoff import PostSpacer
from the_loop.intake.events import AGENT_COMMENT_MARKER

ITEM = f"github:{REPO}#15"
SPEC_DIR = "docs/specs/issue-15"


@pytest.fixture
def machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeGitHub, list[Machine]]]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    # An in-process cycle spaces its POSTs a second apart; claims are decided by the
    # order GitHub numbers them, not by the spacing.
    monkeypatch.setattr(poll_factory, "PostSpacer", lambda: PostSpacer(0.0))
    remote = make_remote(tmp_path, "app")
    with serve(FakeGitHub(tokens={TOKEN: BOT})) as github, contextlib.ExitStack() as stack:
        made: list[Machine] = []
        for name in ("one", "two"):
            home = tmp_path / name
            socket = stack.enter_context(private_tmux_socket())
            machine = Machine(home, name=name, socket=socket, github=github, remote=remote)
            agent = [sys.executable, spec_agent.__file__, str(machine.agent_file), "{prompt}"]
            config = json.loads(machine.config_path.read_text(encoding="utf-8"))
            config["routing"]["harnesses"]["command"]["argv"] = agent
            machine.config_path.write_text(json.dumps(config), encoding="utf-8")
            made.append(machine)
        github.add_issue(REPO, 15, title="Fix the wobbling widget", labels=("the-loop",))
        github.add_comment(REPO, 15, "hello", login="alice")
        for machine in made:
            machine.poll()  # each has met the thread before the start
        yield github, made


def lane_of(machine: Machine) -> dict[str, Any]:
    record = machine.registry.find_by_work_item(ITEM, include_closed=True)
    if record is None or not record.cwd:
        return {}
    path = Path(record.cwd) / SPEC_DIR / "work-item-state.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def poll_until(machines: list[Machine], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for machine in machines:
            machine.poll()
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(what)


def comment(github: FakeGitHub, body: str) -> None:
    github.now = datetime.now(UTC)
    github.add_comment(REPO, 15, body, login="alice")


def test_only_the_machine_holding_the_item_keeps_its_lane(
    machines: tuple[FakeGitHub, list[Machine]],
) -> None:
    github, both = machines
    comment(github, "the-loop start spec")
    poll_until(both, lambda: any(m.live(15) for m in both), "one machine started it")
    [holder] = [m for m in both if m.live(15)]
    [other] = [m for m in both if m is not holder]

    def status(phase: str) -> str:
        return str(lane_of(holder).get("nodes", {}).get(phase, {}).get("status", ""))

    def gates() -> list[str]:
        with github.lock:
            return [c.body for c in github.comments if "ready for review" in c.body]

    poll_until(both, lambda: len(gates()) == 1, "the requirements gate said")
    comment(github, "the-loop approve")
    poll_until(both, lambda: status("design") == "waiting", "design done on the holder")
    for _ in range(3):
        for machine in both:
            machine.poll()

    with github.lock:
        ours = [c.body for c in github.comments if AGENT_COMMENT_MARKER in c.body]
    assert not [body for body in ours if "changed nothing" in body], ours
    said = [body for body in ours if "ready for review" in body]
    assert len(said) == 2, said
    assert not other.live(15) and lane_of(other) == {}
    assert [e["outcome"] for e in holder.events_named("spec.decided")] == ["started", "approved"]
    assert other.events_named("spec.decided") == []
