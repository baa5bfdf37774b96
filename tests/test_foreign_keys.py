"""Keys another release wrote into a portable record (issue 11, point 9).

Upstream 20.10.2 writes ``collaborators``, ``collaborationChannels``, ``ended`` and
``lifecycle`` into the same record. Every path of ours keeps them — file and index
entry — when it clears our last own section; only ``reset`` removes them, with the
rest of the record, and says so (its dry run too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.reset_world import World
from tests.test_reset_integration import Machine
from the_loop.eventlog.log import read_events
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.poll import PollState
from the_loop.portable.store import CONTROL, POLL, SEALED, WorkItemStore
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
UPSTREAM = {
    "collaborators": [{"login": "octocat", "role": "reviewer"}],
    "collaborationChannels": {"slack": {"channel": "C1"}},
    "ended": {"at": "2026-11-30T10:00:00Z"},
    "lifecycle": {"phase": "review"},
}
START = {"ref": ITEM.ref, "command": "start", "source": "cli", "actor": "me"}
LEDGER = {"seenComments": ["IC_1"], "commentAttempts": {}}


def place(directory: Path, ref: WorkItemRef, record: dict[str, Any]) -> Path:
    """Write a record file by hand, as another release would."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{ref.slug}.json"
    path.write_text(json.dumps({"ref": ref.ref, **record}), encoding="utf-8")
    return path


def on_disk(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def index_refs(store: WorkItemStore) -> list[str]:
    return [entry["ref"] for entry in on_disk(store.index_path)["workItems"]]


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout(tmp_path / "state")


@pytest.fixture
def store(layout: StateLayout) -> WorkItemStore:
    return WorkItemStore(layout.portable_dir, legacy_layout(layout))


def test_clearing_the_control_section_keeps_the_keys_another_release_wrote(
    store: WorkItemStore,
) -> None:
    path = place(store.root, ITEM, {CONTROL: START, **UPSTREAM})
    assert ControlStore(store.root, store=store).clear(ITEM) is True
    assert on_disk(path) == {"ref": ITEM.ref, "url": ITEM.url, **UPSTREAM}
    assert index_refs(store) == [ITEM.ref]
    assert store.summaries()[0].sections == ()


def test_forgetting_the_poll_ledger_keeps_the_keys_another_release_wrote(
    store: WorkItemStore,
) -> None:
    path = place(store.root, ITEM, {POLL: LEDGER, **UPSTREAM})
    assert POLL in PollState(store).forget(ITEM).removed
    assert on_disk(path) == {"ref": ITEM.ref, "url": ITEM.url, **UPSTREAM}
    assert index_refs(store) == [ITEM.ref]


def test_a_seal_keeps_the_keys_another_release_wrote(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    legacy.control_dir.mkdir(parents=True)
    (legacy.control_dir / f"{ITEM.slug}.json").write_text(json.dumps(START))
    path = place(store.root, ITEM, {CONTROL: START, **UPSTREAM})
    assert store.write_section(ITEM, CONTROL, None).action == "sealed"
    assert on_disk(path) == {"ref": ITEM.ref, "url": ITEM.url, SEALED: True, **UPSTREAM}
    assert store.section(ITEM, CONTROL) is None, "the legacy tree stays sealed out"


def test_a_write_keeps_the_keys_another_release_wrote_after_our_sections(
    store: WorkItemStore,
) -> None:
    path = place(store.root, ITEM, {"ended": UPSTREAM["ended"], CONTROL: START})
    store.write_section(ITEM, POLL, LEDGER)
    assert list(on_disk(path)) == ["ref", "url", CONTROL, POLL, "ended"]
    assert store.foreign_keys(ITEM) == ("ended",)


def test_a_start_whose_harness_is_missing_keeps_the_keys_another_release_wrote(
    tmp_path: Path, tmux_socket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failed spawn's undo restores "no control record" through the store, which
    keeps the record for the keys it does not own."""
    world = World(tmp_path, tmux_socket)
    config = json.loads(world.config_path.read_text())
    config["routing"]["harnesses"]["command"]["argv"] = [str(tmp_path / "no-such-agent")]
    world.config_path.write_text(json.dumps(config))
    upstream = {"collaborators": UPSTREAM["collaborators"], "ended": UPSTREAM["ended"]}
    path = place(world.layout.portable_dir, ITEM, upstream)
    before = on_disk(path)

    assert world.run("sessions", "start", "--work-item", ITEM.ref, "--no-comment") == 1
    assert "no-such-agent is not on PATH" in capsys.readouterr().err
    assert on_disk(path) == {**before, "url": ITEM.url}
    assert world.store.foreign_keys(ITEM) == ("collaborators", "ended")
    assert index_refs(world.store) == [ITEM.ref]
    assert world.registry.find_by_work_item(ITEM, include_closed=True) is None


def test_reset_removes_the_keys_another_release_wrote_and_its_dry_run_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    machine.armed(ITEM)
    path = machine.store.path_for(ITEM)
    record = on_disk(path)
    path.write_text(json.dumps({**record, "collaborators": [], "ended": {"at": "x"}}))

    assert machine.run("--work-item", ITEM.ref, "--dry-run") == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{ITEM.ref}: would remove control, poll, and 2 sections an older release wrote: "
        "collaborators, ended"
    )
    assert path.exists()
    assert machine.run("--work-item", ITEM.ref) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{ITEM.ref}: reset — removed control, poll, and 2 sections an older release wrote: "
        "collaborators, ended"
    )
    assert not path.exists()
    assert not machine.store.index_path.exists()
    (event,) = [
        e for e in read_events(machine.layout.event_log).events if e["event"] == "session.reset"
    ]
    assert event["removed"] == [CONTROL, POLL]
    assert event["foreign"] == ["collaborators", "ended"]


def test_reset_all_finds_a_record_that_holds_only_keys_another_release_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    path = place(machine.layout.portable_dir, ITEM, {"lifecycle": UPSTREAM["lifecycle"]})
    assert machine.run("--all", "--format", "json") == 0
    (item,) = json.loads(capsys.readouterr().out)["items"]
    assert (item["ref"], item["removed"], item["foreignSections"]) == (
        ITEM.ref,
        [],
        ["lifecycle"],
    )
    assert item["found"] and item["ok"]
    assert not path.exists()
