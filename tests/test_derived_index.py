"""A derived file's failure never fails a command that took effect (issue 11, point 11).

``portable/index.json`` is derived from the records: when it cannot be rewritten the
write that changed a record still succeeds, the operator is told once on stderr, and
the next write that can rebuild it does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from the_loop.cli import main
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.store import CONTROL, POLL, WorkItemStore
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER = WorkItemRef.parse("github:octo/app#21")
LEDGER = {"seenComments": ["IC_1"], "commentAttempts": {}}


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout(tmp_path / "state")


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def store(layout: StateLayout, warnings: list[str]) -> WorkItemStore:
    return WorkItemStore(layout.portable_dir, legacy_layout(layout), on_warning=warnings.append)


def block_index(store: WorkItemStore) -> None:
    """Make ``index.json`` impossible to write: a directory stands at its name."""
    store.index_path.mkdir(parents=True)


def index_refs(store: WorkItemStore) -> list[str]:
    document = json.loads(store.index_path.read_text(encoding="utf-8"))
    return [entry["ref"] for entry in document["workItems"]]


def test_pause_with_an_unwritable_index_records_the_command_warns_once_and_exits_0(
    tmp_path: Path, layout: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {layout.root}\n")
    # The machine holds the item (a poll ledger), so a pause records the command.
    WorkItemStore(layout.portable_dir, legacy_layout(layout)).write_section(ITEM, POLL, LEDGER)
    layout.portable_index.unlink()
    layout.portable_index.mkdir()
    assert main(["--config", str(config), "sessions", "pause", "--work-item", ITEM.ref]) == 0
    captured = capsys.readouterr()
    assert f"{ITEM.ref}: recorded pause" in captured.out
    assert captured.err.count("warning:") == 1
    assert "could not rebuild the derived" in captured.err
    assert "Is a directory" in captured.err
    assert "error:" not in captured.err
    recorded = ControlStore(layout.portable_dir).get(ITEM)
    assert recorded is not None and recorded.command == "pause"


def test_writes_succeed_while_the_index_cannot_be_written_and_it_is_said_once(
    store: WorkItemStore, warnings: list[str]
) -> None:
    block_index(store)
    assert store.write_section(ITEM, POLL, LEDGER).action == "written"
    assert store.write_section(OTHER, POLL, LEDGER).action == "written"
    assert store.write_section(ITEM, POLL, None).action == "deleted"
    assert len(warnings) == 1
    assert str(store.index_path) in warnings[0]
    assert store.section(OTHER, POLL) == LEDGER


def test_the_next_write_after_the_cause_is_gone_heals_the_index(
    store: WorkItemStore, warnings: list[str]
) -> None:
    block_index(store)
    store.write_section(ITEM, POLL, LEDGER)
    store.index_path.rmdir()
    store.write_section(OTHER, POLL, LEDGER)
    assert index_refs(store) == [ITEM.ref, OTHER.ref]
    store.index_path.unlink()
    block_index(store)
    store.write_section(ITEM, CONTROL, {"ref": ITEM.ref, "command": "stop"})
    assert len(warnings) == 2, "a new failure after a healed index is said again"


def test_a_batch_whose_index_cannot_be_written_keeps_every_write_and_warns_once(
    store: WorkItemStore, warnings: list[str]
) -> None:
    block_index(store)
    with store.batch():
        store.write_section(ITEM, POLL, LEDGER)
        store.write_section(OTHER, POLL, LEDGER)
    assert len(warnings) == 1
    assert sorted(store.refs()) == [ITEM.ref, OTHER.ref]


def test_the_last_record_going_while_the_index_cannot_be_removed_still_succeeds(
    store: WorkItemStore, warnings: list[str]
) -> None:
    store.write_section(ITEM, POLL, LEDGER)
    store.index_path.unlink()
    block_index(store)
    (store.index_path / "keep").write_text("someone's")
    assert store.write_section(ITEM, POLL, None).action == "deleted"
    assert len(warnings) == 1
    assert (store.index_path / "keep").read_text() == "someone's"
