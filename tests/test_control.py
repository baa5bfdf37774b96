"""The control store: recording, reading, clearing and restoring the last command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from the_loop.eventlog.log import EventLog
from the_loop.eventlog.query import query_events
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import (
    ARMING,
    CLEANUP,
    COMMANDS,
    CONTRIBUTE,
    DO,
    EXECUTE,
    PAUSE,
    RESUME,
    START,
    STOP,
    ControlRecord,
    ControlStore,
)
from the_loop.portable.store import CONTROL, POLL, SEALED, WorkItemStore
from the_loop.ref import WorkItemRef

APP = "github:octo/app#15"


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout(tmp_path / "state")


@pytest.fixture
def controls(layout: StateLayout) -> ControlStore:
    return ControlStore(
        layout.portable_dir,
        legacy_layout(layout),
        events=EventLog(layout.event_log, "sessions"),
    )


def write_legacy_control(layout: StateLayout, ref: str, command: str) -> Path:
    legacy = legacy_layout(layout)
    path = legacy.control_dir / f"{WorkItemRef.parse(ref).slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ref": ref, "command": command, "source": "comment"}))
    return path


def test_the_command_names_are_the_published_ones() -> None:
    assert (START, STOP, PAUSE, RESUME, EXECUTE, CONTRIBUTE, CLEANUP, DO) == (
        "start",
        "stop",
        "pause",
        "resume",
        "execute",
        "contribute",
        "cleanup",
        "do",
    )
    assert set(COMMANDS) == {START, STOP, PAUSE, RESUME, EXECUTE, CONTRIBUTE, CLEANUP, DO}
    assert set(ARMING) == {START, RESUME, CONTRIBUTE, DO}


def test_a_recorded_command_is_stored_in_the_control_section_and_read_back(
    controls: ControlStore,
) -> None:
    entry = controls.record(APP, START, source="cli", actor="octocat", note="go")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry.requested_at)
    stored = controls.store.section(APP, CONTROL)
    assert stored == {
        "ref": APP,
        "command": "start",
        "source": "cli",
        "actor": "octocat",
        "requestedAt": entry.requested_at,
        "note": "go",
    }
    assert controls.get(APP) == entry
    assert controls.get(WorkItemRef.parse("github:github.com/octo/app#15")) == entry
    assert controls.root == controls.store.root


def test_recording_emits_control_recorded(controls: ControlStore, layout: StateLayout) -> None:
    controls.record(APP, PAUSE, source="comment", actor="octocat")
    events = query_events(layout.event_log).events
    assert [event["event"] for event in events] == ["control.recorded"]
    assert events[0]["work_item"] == APP
    assert events[0]["command"] == PAUSE
    assert events[0]["command_source"] == "comment"
    assert events[0]["source"] == "sessions", "the envelope's process is not overwritten"
    assert events[0]["actor"] == "octocat"


@pytest.mark.parametrize(
    ("command", "source"), [("reset", "cli"), ("START", "cli"), (START, "webhook")]
)
def test_an_unknown_command_or_source_is_refused_and_nothing_is_written(
    controls: ControlStore, layout: StateLayout, command: str, source: str
) -> None:
    with pytest.raises(ValueError):
        controls.record(APP, command, source=source)
    assert not layout.portable_dir.exists()
    assert not layout.event_log.exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_only_arming_commands_request_a_start(controls: ControlStore, command: str) -> None:
    controls.record(APP, command)
    assert controls.start_requested(APP) is (command in ARMING)


def test_nothing_recorded_requests_no_start(controls: ControlStore) -> None:
    assert controls.get(APP) is None
    assert controls.start_requested(APP) is False


def test_clear_disarms_and_says_whether_there_was_a_command(controls: ControlStore) -> None:
    controls.record(APP, START)
    assert controls.clear(APP) is True
    assert controls.start_requested(APP) is False
    assert controls.clear(APP) is False
    assert not controls.store.path_for(APP).exists()


def test_clearing_a_legacy_start_seals_the_record_so_it_cannot_come_back(
    controls: ControlStore, layout: StateLayout
) -> None:
    legacy_file = write_legacy_control(layout, APP, START)
    before = legacy_file.read_bytes()
    assert controls.start_requested(APP) is True

    assert controls.clear(APP) is True
    assert controls.start_requested(APP) is False
    assert json.loads(controls.store.path_for(APP).read_text())[SEALED] is True
    assert legacy_file.read_bytes() == before


def test_a_v1_control_file_is_read_until_the_section_is_written(
    controls: ControlStore, layout: StateLayout
) -> None:
    legacy_file = write_legacy_control(layout, APP, PAUSE)
    before = legacy_file.read_bytes()
    entry = controls.get(APP)
    assert entry is not None and entry.command == PAUSE and entry.ref == APP

    controls.record(APP, RESUME, source="cli")
    assert controls.get(APP).command == RESUME  # type: ignore[union-attr]
    assert legacy_file.read_bytes() == before
    assert json.loads(controls.store.path_for(APP).read_text())[CONTROL]["command"] == RESUME


def test_restore_puts_back_what_was_there_before(controls: ControlStore) -> None:
    controls.store.write_section(APP, POLL, {"seenComments": ["IC_1"]})
    previous = controls.record(APP, PAUSE, actor="octocat")
    recorded = controls.record(APP, START)
    assert controls.restore(APP, previous, replacing=recorded) is True
    assert controls.get(APP) == previous

    fresh = "github:octo/app#16"
    before = controls.get(fresh)
    recorded = controls.record(fresh, START)
    assert controls.restore(fresh, before, replacing=recorded) is True
    assert controls.get(fresh) is None
    assert not controls.store.path_for(fresh).exists()


def test_restore_keeps_a_command_recorded_since(controls: ControlStore) -> None:
    previous = controls.record(APP, PAUSE, actor="octocat")
    recorded = controls.record(APP, START, source="cli")
    since = controls.record(APP, STOP, actor="bob")
    before = controls.store.path_for(APP).read_bytes()

    assert controls.restore(APP, previous, replacing=recorded) is False

    assert controls.get(APP) == since
    assert controls.store.path_for(APP).read_bytes() == before


def test_restore_does_not_bring_back_a_record_removed_since(controls: ControlStore) -> None:
    recorded = controls.record(APP, START, source="cli")
    controls.store.drop(APP)

    assert controls.restore(APP, None, replacing=recorded) is False

    assert controls.get(APP) is None
    assert not controls.store.path_for(APP).exists()


def test_a_malformed_control_section_reads_as_none_with_a_warning(layout: StateLayout) -> None:
    warnings: list[str] = []
    controls = ControlStore(layout.portable_dir, on_warning=warnings.append)
    controls.store.write_section(APP, CONTROL, {"source": "cli"})
    assert controls.get(APP) is None
    assert controls.start_requested(APP) is False
    assert warnings


def test_the_frozen_graph_of_an_older_release_is_readable(controls: ControlStore) -> None:
    controls.store.root.mkdir(parents=True)
    path = controls.store.root / "github-octo-app-15.json"
    path.write_text(json.dumps({"ref": APP, "graph": {"sessionPerPr": "always"}}))
    assert controls.frozen_graph(APP) == {"sessionPerPr": "always"}
    assert controls.frozen_graph("github:octo/app#16") is None


def test_a_control_store_can_share_a_work_item_store(layout: StateLayout) -> None:
    store = WorkItemStore(layout.portable_dir)
    controls = ControlStore(layout.portable_dir, store=store)
    assert controls.store is store
    controls.record(APP, STOP)
    assert store.section(APP, CONTROL)["command"] == STOP  # type: ignore[index]


def test_control_records_round_trip_through_dicts() -> None:
    entry = ControlRecord(APP, DO, "cli", "me", "2026-11-29T19:02:08Z", "n")
    assert list(entry.to_dict()) == ["ref", "command", "source", "actor", "requestedAt", "note"]
    assert ControlRecord.from_dict(entry.to_dict()) == entry
    with pytest.raises(ValueError):
        ControlRecord.from_dict({"ref": APP})
