"""State roots written in older shapes are read, and converge on the rule at the next write.

Older shapes: the flat v1 session record, the portable ``graph`` section, a
``graph-state.json`` carrying a ``session`` block, and the legacy ``sessions/`` tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.attributes import ATTRIBUTES, MACHINE_FILE, OPERATOR_FILE
from the_loop.intake.routing import POLICY_FROM_GRAPH_SECTION, POLICY_FROM_REPOSITORY_FILE, Router
from the_loop.portable.channels import ChannelState
from the_loop.portable.control import ControlStore
from the_loop.portable.poll import PollState
from the_loop.portable.store import GRAPH
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import STATE_KEYS, WorkItemState, WorkItemStateFile
from the_loop.sessions.session import Session
from the_loop.upgrade import find_retired

ITEM = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")


def declared(file: str) -> set[str]:
    return {attribute.key for attribute in ATTRIBUTES if attribute.file == file}


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")


class OldRoot(World):
    """A state root as an older release left it (on the shared test world)."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.tmp_path = tmp_path
        self.checkout = tmp_path / "checkout"
        self.checkout.mkdir()

    def v1_session_record(self) -> Path:
        path = self.layout.local_dir / f"{ITEM.slug}.json"
        write(
            path,
            {
                "workItem": {"ref": ITEM.ref, "url": ITEM.url},
                "harness": "claude",
                "harnessSessionId": "0f1c",
                "cwd": str(self.checkout),
                "status": "active",
                "createdAt": "2026-11-29T19:02:08Z",
                "lastEventAt": None,
                "tmuxTarget": "loop-github-octo-app-15",
                "recentDeliveries": ["d-1"],
                "channels": {"slack": {"cursors": {"1726.001": "1726.045"}}},
                "pullRequests": [
                    {
                        "workItem": {"ref": PR.ref},
                        "harness": "claude",
                        "harnessSessionId": "pr-7",
                        "cwd": str(self.checkout),
                        "status": "active",
                        "tmuxTarget": "loop-github-octo-lib-7",
                    }
                ],
            },
        )
        return path

    def graph_section(self, graph: dict[str, Any]) -> Path:
        path = self.store.path_for(ITEM)
        write(path, {"ref": ITEM.ref, "url": ITEM.url, "graph": graph})
        return path

    def graph_state_file(self) -> WorkItemStateFile:
        state_file = WorkItemStateFile(self.checkout, ITEM)
        write(
            state_file.legacy_path,
            {
                "version": 1,
                "workItem": ITEM.ref,
                "currentNode": "implement",
                "skips": ["benchmarks"],
                "session": {"harness": "claude", "id": "stale", "tmuxTarget": "loop-old"},
            },
        )
        return state_file


@pytest.fixture
def old(tmp_path: Path) -> OldRoot:
    return OldRoot(tmp_path)


def test_a_flat_v1_session_record_is_read_with_its_pull_request_endpoints(old: OldRoot) -> None:
    old.v1_session_record()
    record = old.registry.find_by_work_item(ITEM)
    assert record is not None and record.harness_session_id == "0f1c"
    endpoint = old.registry.session_for(PR)
    assert endpoint is not None and endpoint.harness_session_id == "pr-7"
    assert ChannelState(old.store, old.registry).cursor(ITEM, "slack", "1726.001") == "1726.045"
    assert [session.ref for session in old.registry.list_sessions()] == [ITEM.ref]


def test_a_flat_v1_session_record_is_rewritten_as_v2_on_its_next_write(old: OldRoot) -> None:
    path = old.v1_session_record()
    old.registry.touch(ITEM, "d-2")
    document = read(path)
    assert set(document) == declared(MACHINE_FILE)
    assert document["version"] == 2 and document["workItem"] == ITEM.ref
    assert set(document["sessions"]) == {ITEM.ref, PR.ref}
    assert document["sessions"][ITEM.ref]["recentDeliveries"] == ["d-1", "d-2"]
    assert document["sessions"][PR.ref]["harnessSessionId"] == "pr-7"
    assert "pullRequests" not in json.dumps(document)
    assert document["channels"] == {"slack": {"cursors": {"1726.001": "1726.045"}}}


def test_a_v1_cursor_advances_in_the_v2_shape(old: OldRoot) -> None:
    path = old.v1_session_record()
    assert ChannelState(old.store, old.registry).advance(ITEM, "slack", "1726.001", "1726.099")
    assert read(path)["channels"]["slack"]["cursors"] == {"1726.001": "1726.099"}
    assert read(path)["version"] == 2


def test_the_cli_lists_a_v1_root_without_rewriting_it(
    old: OldRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    path = old.v1_session_record()
    before = path.read_bytes()
    assert old.run("sessions", "list", "--format", "json") == 0
    [listed] = json.loads(capsys.readouterr().out)["items"]
    assert listed["workItem"] == ITEM.ref
    assert [item["workItem"] for item in listed["pullRequests"]] == [PR.ref]
    assert path.read_bytes() == before


def test_a_portable_graph_section_decides_the_policy_until_the_repository_file_does(
    old: OldRoot,
) -> None:
    old.graph_section({"frozenGraph": {"sessionPerPr": "always", "model": "opus"}})
    old.registry.register(Session(ITEM, "claude", "s1", cwd=str(old.checkout)))
    router = Router(registry=old.registry, store=old.store)
    assert router.policy_for(ITEM) == ("always", POLICY_FROM_GRAPH_SECTION)
    state_file = WorkItemStateFile(old.checkout, ITEM)
    state_file.save(WorkItemState(work_item=ITEM.ref, session_per_pr="never"))
    assert router.policy_for(ITEM) == ("never", POLICY_FROM_REPOSITORY_FILE)


def test_the_next_section_write_keeps_the_graph_section_as_it_was_and_never_writes_one(
    old: OldRoot,
) -> None:
    graph = {"frozenGraph": {"sessionPerPr": "always"}}
    path = old.graph_section(graph)
    ControlStore(old.store.root, old.legacy, store=old.store).record(ITEM, "start", source="cli")
    document = read(path)
    assert document[GRAPH] == graph
    assert set(document) - {GRAPH} <= declared(OPERATOR_FILE)
    with pytest.raises(ValueError, match="never written"):
        old.store.write_section(ITEM, GRAPH, {"sessionPerPr": "never"})
    old.store.drop(ITEM)
    assert not path.exists()


def test_a_graph_state_file_is_read_without_its_session_block(old: OldRoot) -> None:
    state_file = old.graph_state_file()
    state = state_file.load()
    assert state.current_node == "implement" and state.skips == ["benchmarks"]
    assert "session" not in state.to_dict()
    router = Router(registry=old.registry, store=old.store)
    assert router.route(ITEM).endpoint is None  # the stale block names no session


def test_a_graph_state_file_converges_on_the_next_save_and_is_never_written(
    old: OldRoot,
) -> None:
    state_file = old.graph_state_file()
    legacy_before = state_file.legacy_path.read_bytes()
    assert state_file.link_pr(PR)
    document = read(state_file.path)
    assert list(document) == list(STATE_KEYS)
    assert document["version"] == 2 and document["currentNode"] == "implement"
    assert [entry["ref"] for entry in document["pullRequests"]] == [PR.ref]
    assert state_file.legacy_path.read_bytes() == legacy_before
    report = find_retired(
        layout=old.layout, registry=old.registry, store=old.store, checkouts=[old.checkout]
    )
    assert [(item.kind, item.read) for item in report.locations] == [("graph-state-file", False)]


def test_a_legacy_poll_ledger_converges_into_the_portable_record_on_the_next_write(
    old: OldRoot,
) -> None:
    write(old.legacy.poll_state, {"items": {ITEM.ref: {"seenComments": ["IC_1"]}}})
    write(old.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "start"})
    polls = PollState(old.store, registry=old.registry)
    assert polls.seen_comments(ITEM) == ["IC_1"]
    polls.baseline_comments(ITEM, ["IC_2"])
    record = read(old.store.path_for(ITEM))
    assert record["poll"]["seenComments"] == ["IC_1", "IC_2"]
    report = find_retired(layout=old.layout, registry=old.registry, store=old.store)
    assert [(item.kind, item.read) for item in report.locations] == [
        ("legacy-control-record", True),
        ("legacy-poll-state", False),
    ]


def test_the_older_root_poll_state_file_is_read_until_the_next_write_and_reported(
    old: OldRoot,
) -> None:
    write(old.legacy.older_poll_state, {"items": {ITEM.ref: {"seenComments": ["IC_0"]}}})
    before = old.legacy.older_poll_state.read_bytes()
    polls = PollState(old.store, registry=old.registry)
    assert polls.seen_comments(ITEM) == ["IC_0"]
    report = find_retired(layout=old.layout, registry=old.registry, store=old.store)
    assert [(item.kind, item.read) for item in report.locations] == [("older-poll-state", True)]

    polls.baseline_comments(ITEM, ["IC_1"])
    assert read(old.store.path_for(ITEM))["poll"]["seenComments"] == ["IC_0", "IC_1"]
    assert old.legacy.older_poll_state.read_bytes() == before
    report = find_retired(layout=old.layout, registry=old.registry, store=old.store)
    assert [(item.kind, item.read) for item in report.locations] == [("older-poll-state", False)]


def test_the_sessions_poll_state_file_wins_over_the_older_one_for_an_item_in_both(
    old: OldRoot,
) -> None:
    write(old.legacy.older_poll_state, {"items": {ITEM.ref: {"seenComments": ["older"]}}})
    write(old.legacy.poll_state, {"items": {ITEM.ref: {"seenComments": ["newer"]}}})
    assert PollState(old.store, registry=old.registry).seen_comments(ITEM) == ["newer"]
    report = find_retired(layout=old.layout, registry=old.registry, store=old.store)
    assert [(item.kind, item.read) for item in report.locations] == [
        ("legacy-poll-state", True),
        ("older-poll-state", False),
    ]
