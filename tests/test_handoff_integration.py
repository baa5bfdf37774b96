"""The hand-off: a work item moves between two machines by carrying `portable/` and the repo.

Two state roots stand in for two machines, each with its own workspace root and its
own private tmux server; one bare repository is the shared remote. Machine A works
on an item with three pull requests (two in other repositories), a channel binding
and poll ledgers; only A's `portable/` directory and the pushed branch reach B.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import git, make_remote
from tests.helpers.tmuxsock import private_tmux_socket, wait_until
from tests.helpers.world import World
from the_loop.dispatch.tmux import TmuxRunner, tmux_session_name
from the_loop.intake.routing import OWNER_FROM_PORTABLE, POLICY_FROM_REPOSITORY_FILE, Router
from the_loop.portable.channels import ChannelState
from the_loop.portable.control import ControlStore
from the_loop.portable.poll import PollState
from the_loop.portable.store import PULL_REQUESTS
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import STATE_KEYS, WorkItemState, WorkItemStateFile

ITEM = WorkItemRef.parse("github:octo/app#15")
SAME_REPO_PR = WorkItemRef.parse("github:octo/app#16")
LIB_PR = WorkItemRef.parse("github:octo/lib#7")
DOCS_PR = WorkItemRef.parse("github:octo/docs#3")
PULL_REQUESTS_OF_ITEM = (SAME_REPO_PR, LIB_PR, DOCS_PR)
BRANCH = "work/15"
AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]


class Machine(World):
    """One machine: a state root, a workspace root, a tmux server and a config naming them."""

    def __init__(self, home: Path, remote: Path, socket: str) -> None:
        self.socket = socket
        self.workspace = home / "workspaces"
        routing = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": AGENT}},
            "sessionPerPr": "never",
            "workspace": {"root": str(self.workspace), "repositories": {"octo/app": str(remote)}},
            "tmux": {"socket": socket, "harnessKillGraceSeconds": 3},
        }
        # Nothing here may reach a provider: an unroutable API that would fail loudly.
        github = {"github": {"apiUrl": "http://127.0.0.1:9"}}
        super().__init__(home, {"routing": routing, "integrations": github})

    def listed(self, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
        capsys.readouterr()
        assert self.run("sessions", "list", "--format", "json") == 0
        return json.loads(capsys.readouterr().out)["items"]

    @property
    def channels(self) -> ChannelState:
        return ChannelState(self.store, self.registry)

    @property
    def router(self) -> Router:
        return Router(registry=self.registry, store=self.store, default_session_per_pr="never")

    @property
    def tmux(self) -> TmuxRunner:
        return TmuxRunner(socket=self.socket, timeout=30)

    def checkout(self) -> Path:
        record = self.registry.find_by_work_item(ITEM, include_closed=True)
        assert record is not None and record.cwd
        return Path(record.cwd)


@pytest.fixture
def second_tmux_socket() -> Iterator[str]:
    """Machine B's own tmux server, killed when the test ends."""
    with private_tmux_socket() as socket:
        yield socket


def work_on_machine_a(a: Machine) -> None:
    """A starts the item, freezes its choices in the repository file, links three pull
    requests, records poll ledgers and a channel binding, pushes the branch, closes."""
    assert a.run("sessions", "start", "--work-item", ITEM.ref, "--no-comment") == 0
    target = tmux_session_name(ITEM.slug)
    assert wait_until(lambda: "ready" in a.tmux.capture(target))
    checkout = a.checkout()
    git(checkout, "checkout", "--quiet", "-b", BRANCH)
    state = WorkItemState(work_item=ITEM.ref, session_per_pr="cross-repository", model="opus")
    WorkItemStateFile(checkout, ITEM).save(state)
    for pr in ("16", LIB_PR.ref, DOCS_PR.ref):
        assert a.run("sessions", "link-pr", "--work-item", ITEM.ref, "--pull-request", pr) == 0
    polls = PollState(a.store, registry=a.registry)
    polls.baseline_comments(ITEM, ["IC_1", "IC_2"], "2026-11-29T10:42:00Z")
    for pr in PULL_REQUESTS_OF_ITEM:
        polls.baseline_comments(pr, [f"PRC_{pr.number}"], "2026-11-29T10:43:00Z")
    polls.note_comment_attempt(LIB_PR, "PRC_99")
    a.channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    assert a.channels.advance(ITEM, "slack", "1726.001", "1726.045")
    git(checkout, "add", "docs")
    git(checkout, "commit", "--quiet", "-m", "work item state")
    git(checkout, "push", "--quiet", "origin", BRANCH)
    assert a.run("sessions", "close", "--work-item", ITEM.ref) == 0


def carry_portable(a: Machine, b: Machine) -> None:
    """The only state that moves: A's `portable/` directory, copied as git would."""
    shutil.copytree(a.layout.portable_dir, b.layout.portable_dir)


def test_the_second_machine_sees_the_item_and_spawns_its_own_session(
    tmp_path: Path,
    tmux_socket: str,
    second_tmux_socket: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue proof: the hand-off on two state roots (tasks 11, R2.1–R2.3)."""
    remote = make_remote(tmp_path, "app")
    a = Machine(tmp_path / "machine-a", remote, tmux_socket)
    b = Machine(tmp_path / "machine-b", remote, second_tmux_socket)
    work_on_machine_a(a)
    a_record = a.registry.find_by_work_item(ITEM, include_closed=True)
    assert a_record is not None
    a_ledgers = a.store.section(ITEM, PULL_REQUESTS)
    carry_portable(a, b)
    assert sorted(path.name for path in b.layout.root.iterdir()) == ["portable"]

    # B sees the armed item, the three pull requests, their ledgers and the binding ...
    assert ControlStore(b.layout.portable_dir, store=b.store).start_requested(ITEM)
    ledgers = b.store.section(ITEM, PULL_REQUESTS)
    assert ledgers == a_ledgers
    assert ledgers is not None and sorted(ledgers) == sorted(pr.ref for pr in PULL_REQUESTS_OF_ITEM)
    assert ledgers[LIB_PR.ref]["commentAttempts"] == {"PRC_99": 1}
    assert b.channels.work_item_for("slack", "C0AB", "1726.001") == ITEM
    assert b.channels.cursor(ITEM, "slack", "1726.001") == ""  # the cursor stayed on A

    # ... lists no sessions (they are local) ...
    assert b.listed(capsys) == []

    # ... routes a pull request to its owner from portable/ alone ...
    for pr in PULL_REQUESTS_OF_ITEM:
        route = b.router.route(pr)
        assert (route.owner, route.owner_source, route.endpoint) == (
            ITEM,
            OWNER_FROM_PORTABLE,
            None,
        )
    assert not b.layout.event_log.exists()  # no comment posted, no provider asked
    assert b.run("state", "check", "--format", "json") == 0
    capsys.readouterr()

    # ... and spawns its own session when started, on the branch A pushed.
    start = ("sessions", "start", "--work-item", ITEM.ref, "--branch", BRANCH, "--no-comment")
    assert b.run(*start) == 0
    target = tmux_session_name(ITEM.slug)
    assert wait_until(lambda: "ready" in b.tmux.capture(target))
    [listed] = b.listed(capsys)
    assert listed["workItem"] == ITEM.ref and listed["status"] == "active"
    assert listed["harnessSessionId"] != a_record.harness_session_id
    checkout = b.checkout()
    assert checkout.is_relative_to(b.workspace)
    frozen = WorkItemStateFile(checkout, ITEM).load()
    assert frozen.session_per_pr == "cross-repository"
    assert [entry.ref for entry in frozen.pull_requests] == [pr.ref for pr in PULL_REQUESTS_OF_ITEM]
    written = (checkout / "docs" / "specs" / ITEM.slug / "work-item-state.json").read_text()
    # No session block came back; no pointer is no currentNode key (never a null).
    assert list(json.loads(written)) == [key for key in STATE_KEYS if key != "currentNode"]
    assert listed["harnessSessionId"] not in written and target not in written
    route = b.router.route(LIB_PR)
    assert route.policy_source == POLICY_FROM_REPOSITORY_FILE
    assert route.endpoint is not None and route.endpoint.work_item == ITEM
    assert b.tmux.liveness(target) == "live"
    assert a.tmux.liveness(target) != "live"  # A's agent was ended by its close
