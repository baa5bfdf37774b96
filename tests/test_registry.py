"""The session registry (``local/<slug>.json``) on real files."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from the_loop.errors import EXIT_USAGE, TheLoopError
from the_loop.eventlog.log import EventLog
from the_loop.eventlog.query import query_events
from the_loop.fsio import DirectorySyncs
from the_loop.sessions import RegistryError, Session, SessionRegistry, WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")
OTHER = WorkItemRef.parse("github:octo/app#21")
STAMP = "2026-11-29T19:02:08Z"


def move_cursor(
    registry: SessionRegistry, ref: WorkItemRef, channel: str, thread: str, cursor: str
) -> bool:
    """Set a channel cursor whatever it was (the registry writes what it is given)."""
    return registry.advance_channel_cursor(ref, channel, thread, cursor, accept=lambda _: True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".the-loop" / "local"


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / ".the-loop" / "logs" / "events.jsonl"


@pytest.fixture
def registry(root: Path, warnings: list[str], log_path: Path) -> SessionRegistry:
    return SessionRegistry(root, events=EventLog(log_path, "sessions"), on_warning=warnings.append)


def a_session(ref: WorkItemRef = ITEM, **changes: Any) -> Session:
    session = Session(
        ref,
        "claude",
        "sess-1",
        cwd="/abs/checkout",
        tmux_target=f"loop-{ref.slug}",
        created_at=STAMP,
        last_event_at=STAMP,
    )
    return replace(session, **changes)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def events(log_path: Path) -> list[dict[str, Any]]:
    return list(query_events(log_path).events)


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every entry under ``directory`` with its bytes (None for directories)."""
    return {
        str(path.relative_to(directory)): None if path.is_dir() else path.read_bytes()
        for path in sorted(directory.rglob("*"))
    }


# -- register and the v2 format ------------------------------------------------


def test_register_writes_the_v2_record_exactly(registry: SessionRegistry, root: Path) -> None:
    registry.register(a_session(model="opus", effort="high"))
    assert read(root / "github-octo-app-15.json") == {
        "version": 2,
        "workItem": "github:octo/app#15",
        "sessions": {
            "github:octo/app#15": {
                "harness": "claude",
                "harnessSessionId": "sess-1",
                "cwd": "/abs/checkout",
                "status": "active",
                "createdAt": STAMP,
                "lastEventAt": STAMP,
                "tmuxTarget": "loop-github-octo-app-15",
                "recentDeliveries": [],
                "model": "opus",
                "effort": "high",
            }
        },
    }


def test_optional_keys_and_channels_are_written_only_when_set(
    registry: SessionRegistry, root: Path
) -> None:
    registry.register(a_session())
    document = read(root / "github-octo-app-15.json")
    assert list(document) == ["version", "workItem", "sessions"]
    assert not {"model", "effort", "harnessArgs"} & set(document["sessions"][ITEM.ref])
    registry.register(a_session(harness_args=("--verbose",)), force=True)
    document = read(root / "github-octo-app-15.json")
    assert document["sessions"][ITEM.ref]["harnessArgs"] == ["--verbose"]


def test_register_fills_the_timestamps_when_they_are_empty(registry: SessionRegistry) -> None:
    record = registry.register(a_session(created_at="", last_event_at=None))
    assert record.created_at and record.created_at.endswith("Z")
    assert record.last_event_at == record.created_at
    kept = registry.register(a_session(), force=True)
    assert (kept.created_at, kept.last_event_at) == (STAMP, STAMP)


def test_a_second_live_session_is_refused_without_force(
    registry: SessionRegistry, root: Path
) -> None:
    registry.register(a_session())
    before = (root / "github-octo-app-15.json").read_bytes()
    with pytest.raises(RegistryError) as refused:
        registry.register(a_session(harness_session_id="sess-2"))
    assert refused.value.exit_code == EXIT_USAGE
    assert "github:octo/app#15" in str(refused.value)
    assert (root / "github-octo-app-15.json").read_bytes() == before


def test_a_paused_session_counts_as_live_for_registration(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.pause(ITEM)
    with pytest.raises(RegistryError):
        registry.register(a_session(harness_session_id="sess-2"))


def test_force_replaces_a_live_session(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.register(a_session(harness_session_id="sess-2"), force=True)
    found = registry.find_by_work_item(ITEM)
    assert found is not None and found.harness_session_id == "sess-2"


def test_a_closed_session_can_be_replaced_without_force(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.close(ITEM)
    record = registry.register(a_session(harness_session_id="sess-2"))
    assert record.status == "active" and record.harness_session_id == "sess-2"


def test_register_keeps_the_pull_request_endpoints_and_channel_cursors(
    registry: SessionRegistry,
) -> None:
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    move_cursor(registry, ITEM, "slack", "1726.001", "1726.045")
    registry.close(ITEM)
    record = registry.register(a_session(harness_session_id="sess-2"))
    assert [endpoint.work_item for endpoint in record.pull_requests] == [PR]
    assert registry.channel_cursors(ITEM, "slack") == {"1726.001": "1726.045"}


def test_register_emits_session_registered(registry: SessionRegistry, log_path: Path) -> None:
    registry.register(a_session())
    [event] = events(log_path)
    assert event["event"] == "session.registered"
    assert event["work_item"] == ITEM.ref and event["session_id"] == "sess-1"
    assert event["harness"] == "claude" and event["forced"] is False


def test_the_default_lock_directory_matches_the_state_layout(
    registry: SessionRegistry, root: Path
) -> None:
    registry.register(a_session())
    assert registry.locks_dir == root.parent / "locks" / "local"
    assert (root.parent / "locks" / "local" / "github-octo-app-15.lock").is_file()


def test_a_write_that_fails_raises_its_os_error(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    registry = SessionRegistry(blocked, locks_dir=tmp_path / "locks")
    with pytest.raises(OSError):
        registry.register(a_session())


# -- reading ---------------------------------------------------------------------


def test_find_by_work_item_returns_live_records_and_closed_ones_on_request(
    registry: SessionRegistry,
) -> None:
    assert registry.find_by_work_item(ITEM) is None
    registry.register(a_session())
    assert registry.find_by_work_item("github:octo/app#15") == registry.find_by_work_item(ITEM)
    registry.close(ITEM)
    assert registry.find_by_work_item(ITEM) is None
    closed = registry.find_by_work_item(ITEM, include_closed=True)
    assert closed is not None and closed.status == "closed"


def test_list_sessions_is_sorted_by_ref_and_filters_by_status(registry: SessionRegistry) -> None:
    registry.register(a_session(OTHER))
    registry.register(a_session(ITEM))
    registry.register(a_session(PR))
    registry.pause(OTHER)
    assert [record.work_item for record in registry.list_sessions()] == [ITEM, OTHER, PR]
    assert [record.work_item for record in registry.list_sessions("paused")] == [OTHER]
    assert registry.list_sessions("closed") == []


def test_record_status_tells_absent_ok_and_unreadable(
    registry: SessionRegistry, root: Path
) -> None:
    assert registry.record_status(ITEM) == "absent"
    registry.register(a_session())
    assert registry.record_status(ITEM) == "ok"
    (root / "github-octo-app-15.json").write_text("{not json")
    assert registry.record_status(ITEM) == "unreadable"


def test_refs_maps_every_readable_record_to_its_file(registry: SessionRegistry, root: Path) -> None:
    registry.register(a_session(ITEM))
    registry.register(a_session(PR))
    (root / "github-octo-app-99.json").write_text("[]")
    assert registry.refs() == {
        ITEM.ref: root / "github-octo-app-15.json",
        PR.ref: root / "github-octo-lib-7.json",
    }
    assert registry.work_items() == {ITEM.ref, PR.ref}


# -- pause, resume, close ------------------------------------------------------------


def test_pause_holds_an_active_session_and_resume_releases_it(
    registry: SessionRegistry, log_path: Path
) -> None:
    assert registry.pause(ITEM) is None
    registry.register(a_session())
    paused = registry.pause(ITEM)
    assert paused is not None and paused.is_paused and paused.is_live
    assert registry.pause(ITEM) is None
    resumed = registry.resume(ITEM)
    assert resumed is not None and resumed.status == "active"
    assert registry.resume(ITEM) is None
    names = [event["event"] for event in events(log_path)]
    assert names == ["session.registered", "session.paused", "session.resumed"]


def test_pause_and_resume_move_the_pull_request_endpoints_too(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    paused = registry.pause(ITEM)
    assert paused is not None
    assert [endpoint.status for endpoint in paused.endpoints()] == ["paused", "paused"]
    resumed = registry.resume(ITEM)
    assert resumed is not None
    assert [endpoint.status for endpoint in resumed.endpoints()] == ["active", "active"]


def test_a_closed_session_is_neither_paused_nor_resumed(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.close(ITEM)
    assert registry.pause(ITEM) is None and registry.resume(ITEM) is None


def test_close_closes_every_endpoint_once(registry: SessionRegistry, log_path: Path) -> None:
    assert registry.close(ITEM) is False
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    assert registry.close(ITEM, reason="stop") is True
    record = registry.find_by_work_item(ITEM, include_closed=True)
    assert record is not None
    assert [endpoint.status for endpoint in record.endpoints()] == ["closed", "closed"]
    assert registry.close(ITEM) is False
    closed = [event for event in events(log_path) if event["event"] == "session.closed"]
    assert [(event["work_item"], event["reason"]) for event in closed] == [(ITEM.ref, "stop")]


def test_close_ends_a_live_pull_request_endpoint_of_a_closed_item(
    registry: SessionRegistry,
) -> None:
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    registry.close_endpoint(ITEM, ITEM)
    assert registry.close(ITEM) is True


# -- forget ---------------------------------------------------------------------------


def test_forget_deletes_the_record_and_says_false_when_there_is_none(
    registry: SessionRegistry, root: Path, log_path: Path
) -> None:
    assert registry.forget(ITEM) is False
    registry.register(a_session())
    assert registry.forget(ITEM) is True
    assert not (root / "github-octo-app-15.json").exists()
    assert registry.forget(ITEM) is False
    assert [event["event"] for event in events(log_path)] == ["session.registered"]


def test_forget_removes_an_unreadable_file_at_the_plain_name(
    registry: SessionRegistry, root: Path
) -> None:
    root.mkdir(parents=True)
    (root / "github-octo-app-15.json").write_text("{broken")
    assert registry.forget(ITEM) is True
    assert not (root / "github-octo-app-15.json").exists()


def test_forget_defers_the_directory_sync_to_a_batch(registry: SessionRegistry, root: Path) -> None:
    registry.register(a_session())
    syncs = DirectorySyncs()
    assert registry.forget(ITEM, syncs=syncs) is True
    syncs.flush()


def test_forget_lets_an_os_error_propagate(registry: SessionRegistry, root: Path) -> None:
    class FailingSyncs(DirectorySyncs):
        def add(self, directory: Path) -> None:
            raise OSError("disk went away")

    registry.register(a_session())
    with pytest.raises(OSError, match="disk went away"):
        registry.forget(ITEM, syncs=FailingSyncs())


def test_forget_leaves_a_directory_named_like_the_record_alone(
    registry: SessionRegistry, root: Path
) -> None:
    (root / "github-octo-app-15.json").mkdir(parents=True)
    assert registry.record_status(ITEM) == "absent"
    assert registry.forget(ITEM) is False
    assert (root / "github-octo-app-15.json").is_dir()


# -- pull requests and routing ---------------------------------------------------------


def test_link_pull_request_adds_an_endpoint_with_empty_handles(
    registry: SessionRegistry, root: Path
) -> None:
    registry.register(a_session())
    record = registry.link_pull_request(ITEM, PR)
    assert record is not None and record.owns(PR)
    entry = read(root / "github-octo-app-15.json")["sessions"][PR.ref]
    assert entry.pop("createdAt").endswith("Z")
    assert entry == {
        "harness": "",
        "harnessSessionId": "",
        "cwd": "/abs/checkout",
        "status": "active",
        "lastEventAt": None,
        "tmuxTarget": "",
        "recentDeliveries": [],
    }


def test_link_pull_request_is_idempotent(
    registry: SessionRegistry, root: Path, log_path: Path
) -> None:
    registry.register(a_session())
    first = registry.link_pull_request(ITEM, "github:octo/lib#7")
    before = (root / "github-octo-app-15.json").read_bytes()
    again = registry.link_pull_request(ITEM, PR)
    assert again == first
    assert (root / "github-octo-app-15.json").read_bytes() == before
    linked = [event for event in events(log_path) if event["event"] == "session.pr_linked"]
    assert [(event["work_item"], event["pull_request"]) for event in linked] == [(ITEM.ref, PR.ref)]


def test_link_pull_request_needs_an_owner_record_and_refuses_a_self_link(
    registry: SessionRegistry,
) -> None:
    assert registry.link_pull_request(ITEM, PR) is None
    registry.register(a_session())
    with pytest.raises(ValueError):
        registry.link_pull_request(ITEM, ITEM)


def test_record_owning_finds_the_item_itself_or_the_owner_of_a_pull_request(
    registry: SessionRegistry,
) -> None:
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    own = registry.record_owning(ITEM)
    owner = registry.record_owning(PR)
    assert own is not None and owner is not None and owner.work_item == ITEM == own.work_item
    assert registry.record_owning(OTHER) is None


def test_session_for_routes_a_pull_request_to_its_owner_until_it_has_its_own_session(
    registry: SessionRegistry,
) -> None:
    assert registry.session_for(PR) is None
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    item = registry.session_for(ITEM)
    assert item is not None and item.work_item == ITEM
    routed = registry.session_for(PR)
    assert routed is not None and routed.work_item == ITEM
    own = Session(PR, "claude", "sess-pr", cwd="/abs/pr", tmux_target="loop-github-octo-lib-7")
    registry.save_endpoint(ITEM, own)
    routed = registry.session_for(PR)
    assert routed is not None and routed.work_item == PR and routed.harness_session_id == "sess-pr"
    shared = registry.session_for(PR, session_per_pr=False)
    assert shared is not None and shared.work_item == ITEM
    registry.close_endpoint(ITEM, PR)
    routed = registry.session_for(PR)
    assert routed is not None and routed.work_item == ITEM


def test_save_endpoint_replaces_one_endpoint_and_keeps_the_rest(
    registry: SessionRegistry,
) -> None:
    missing = registry.save_endpoint(ITEM, Session(PR, "claude", "x"))
    assert missing is None
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    move_cursor(registry, ITEM, "slack", "t", "c")
    record = registry.save_endpoint(ITEM, replace(a_session(), tmux_target="loop-new"))
    assert record is not None and record.tmux_target == "loop-new"
    assert record.owns(PR) and record.channels == {"slack": {"cursors": {"t": "c"}}}
    stored = registry.find_by_work_item(ITEM)
    assert stored == record


def test_close_endpoint_closes_only_that_endpoint(registry: SessionRegistry) -> None:
    assert registry.close_endpoint(ITEM, PR) is False
    registry.register(a_session())
    registry.link_pull_request(ITEM, PR)
    assert registry.close_endpoint(ITEM, PR) is True
    assert registry.close_endpoint(ITEM, PR) is False
    assert registry.close_endpoint(ITEM, OTHER) is False
    record = registry.find_by_work_item(ITEM)
    assert record is not None and record.status == "active"
    endpoint = record.endpoint_for(PR)
    assert endpoint is not None and endpoint.status == "closed"


# -- touch ------------------------------------------------------------------------------


def test_touch_records_the_event_time_and_the_delivery(registry: SessionRegistry) -> None:
    assert registry.touch(ITEM, "d-1") is None
    registry.register(a_session(last_event_at="2000-01-01T00:00:00Z"))
    record = registry.touch(ITEM, "d-1")
    assert record is not None and record.recent_deliveries == ("d-1",)
    assert record.last_event_at != "2000-01-01T00:00:00Z"
    again = registry.touch(ITEM, "d-1")
    assert again is not None and again.recent_deliveries == ("d-1",)


def test_touch_keeps_the_last_twenty_deliveries(registry: SessionRegistry) -> None:
    registry.register(a_session())
    for number in range(25):
        registry.touch(ITEM, f"d-{number}")
    record = registry.find_by_work_item(ITEM)
    assert record is not None
    assert record.recent_deliveries == tuple(f"d-{number}" for number in range(5, 25))


def test_a_touch_never_undoes_a_pause(registry: SessionRegistry) -> None:
    registry.register(a_session())
    registry.pause(ITEM)
    touched = registry.touch(ITEM, "d-1")
    assert touched is not None and touched.status == "paused"


def test_touch_can_address_a_pull_request_endpoint(registry: SessionRegistry) -> None:
    registry.register(a_session(last_event_at="2000-01-01T00:00:00Z"))
    registry.link_pull_request(ITEM, PR)
    record = registry.touch(ITEM, "d-pr", endpoint_ref=PR)
    assert record is not None and record.last_event_at == "2000-01-01T00:00:00Z"
    endpoint = record.endpoint_for(PR)
    assert endpoint is not None and endpoint.recent_deliveries == ("d-pr",)
    assert endpoint.last_event_at is not None
    assert registry.touch(ITEM, "d-x", endpoint_ref=OTHER) is None


# -- channel cursors ------------------------------------------------------------------------


def test_channel_cursors_are_kept_per_thread_in_the_record(
    registry: SessionRegistry, root: Path
) -> None:
    assert move_cursor(registry, ITEM, "slack", "1726.001", "1726.045") is False
    assert registry.channel_cursors(ITEM, "slack") == {}
    registry.register(a_session())
    assert move_cursor(registry, ITEM, "slack", "1726.001", "1726.045") is True
    assert move_cursor(registry, ITEM, "slack", "1726.002", "1726.050") is True
    assert move_cursor(registry, ITEM, "slack", "1726.001", "1726.099") is True
    assert registry.channel_cursors(ITEM, "slack") == {
        "1726.001": "1726.099",
        "1726.002": "1726.050",
    }
    assert registry.channel_cursors(ITEM, "teams") == {}
    document = read(root / "github-octo-app-15.json")
    assert list(document) == ["version", "workItem", "channels", "sessions"]


# -- the Session value ------------------------------------------------------------------------


def test_a_session_answers_for_its_endpoints() -> None:
    pr = Session(PR, "", "", status="closed")
    record = a_session(pull_requests=[pr], recent_deliveries=["d-1"])  # pyright: ignore[reportArgumentType]
    assert record.recent_deliveries == ("d-1",) and record.pull_requests == (pr,)
    assert record.is_live and not record.is_paused and not pr.is_live
    assert record.endpoints() == (record, pr)
    assert record.endpoint_for("github:octo/lib#7") == pr and record.endpoint_for(OTHER) is None
    assert record.owns(ITEM) and record.owns(PR) and not record.owns(OTHER)
    assert hash(record) == hash(replace(record))


def test_to_dict_reports_every_field_and_the_pull_requests() -> None:
    record = a_session(pull_requests=(Session(PR, "", ""),), channels={"slack": {"cursors": {}}})
    report = record.to_dict()
    assert report["workItem"] == ITEM.ref and report["harnessSessionId"] == "sess-1"
    assert {"model", "effort", "harnessArgs", "lastEventAt", "tmuxTarget"} <= set(report)
    assert [entry["workItem"] for entry in report["pullRequests"]] == [PR.ref]
    assert report["channels"] == {"slack": {"cursors": {}}}
    json.dumps(report)


# -- v1 records -----------------------------------------------------------------------------


V1 = {
    "workItem": {"ref": "github:octo/app#15", "url": "https://github.com/octo/app/issues/15"},
    "harness": "claude",
    "harnessSessionId": "sess-1",
    "cwd": "/abs/checkout",
    "status": "paused",
    "createdAt": STAMP,
    "lastEventAt": STAMP,
    "tmuxTarget": "loop-github-octo-app-15",
    "recentDeliveries": ["d-1"],
    "model": "opus",
    "pullRequests": [
        {
            "workItem": {"ref": "github:octo/lib#7", "state": "open"},
            "harness": "claude",
            "harnessSessionId": "sess-pr",
            "cwd": "/abs/checkout",
            "status": "active",
            "createdAt": STAMP,
            "lastEventAt": None,
            "tmuxTarget": "loop-github-octo-lib-7",
            "recentDeliveries": [],
        },
        {"workItem": "github:octo/lib#8", "harness": "", "harnessSessionId": "", "cwd": ""},
    ],
}

V2 = {
    "version": 2,
    "workItem": "github:octo/app#15",
    "sessions": {
        "github:octo/app#15": {
            "harness": "claude",
            "harnessSessionId": "sess-1",
            "cwd": "/abs/checkout",
            "status": "paused",
            "createdAt": STAMP,
            "lastEventAt": STAMP,
            "tmuxTarget": "loop-github-octo-app-15",
            "recentDeliveries": ["d-1"],
            "model": "opus",
        },
        "github:octo/lib#7": {
            "harness": "claude",
            "harnessSessionId": "sess-pr",
            "cwd": "/abs/checkout",
            "status": "active",
            "createdAt": STAMP,
            "lastEventAt": None,
            "tmuxTarget": "loop-github-octo-lib-7",
            "recentDeliveries": [],
        },
        "github:octo/lib#8": {
            "harness": "",
            "harnessSessionId": "",
            "cwd": "",
            "status": "active",
            "createdAt": "",
            "lastEventAt": None,
            "tmuxTarget": "",
            "recentDeliveries": [],
        },
    },
}


def registry_holding(tmp_path: Path, name: str, document: Any) -> SessionRegistry:
    directory = tmp_path / name / "local"
    directory.mkdir(parents=True)
    (directory / "github-octo-app-15.json").write_text(json.dumps(document))
    return SessionRegistry(directory)


def test_a_v1_record_reads_exactly_like_its_v2_equivalent(tmp_path: Path) -> None:
    old = registry_holding(tmp_path, "v1", V1)
    new = registry_holding(tmp_path, "v2", V2)
    assert old.find_by_work_item(ITEM) == new.find_by_work_item(ITEM) is not None
    assert old.list_sessions() == new.list_sessions()
    assert old.record_owning(PR) == new.record_owning(PR)
    assert old.session_for(PR) == new.session_for(PR)
    pr = old.session_for(PR)
    assert pr is not None and pr.harness_session_id == "sess-pr"
    assert old.refs().keys() == new.refs().keys() == {ITEM.ref}


def test_the_next_write_rewrites_a_v1_record_as_v2(tmp_path: Path) -> None:
    old = registry_holding(tmp_path, "v1", V1)
    touched = old.touch(ITEM, "d-2")
    assert touched is not None and touched.status == "paused"
    document = read(tmp_path / "v1" / "local" / "github-octo-app-15.json")
    expected = json.loads(json.dumps(V2))
    own = expected["sessions"][ITEM.ref]
    own["recentDeliveries"] = ["d-1", "d-2"]
    own["lastEventAt"] = document["sessions"][ITEM.ref]["lastEventAt"]
    assert document == expected


# -- files that are not ours, or not readable ----------------------------------------------------

BAD_CONTENTS = {
    "corrupt JSON": "{not json",
    "empty file": "",
    "a list": "[]",
    "no workItem": json.dumps({"version": 2, "sessions": {}}),
    "sessions not a map": json.dumps({"version": 2, "workItem": ITEM.ref, "sessions": []}),
    "an endpoint that is a string": json.dumps(
        {"version": 2, "workItem": ITEM.ref, "sessions": {ITEM.ref: "active"}}
    ),
    "no own endpoint": json.dumps({"version": 2, "workItem": ITEM.ref, "sessions": {}}),
    "an unknown version": json.dumps({"version": 7, "workItem": ITEM.ref}),
    "a bad ref": json.dumps({"version": 2, "workItem": "octo/app", "sessions": {}}),
}


@pytest.mark.parametrize("content", BAD_CONTENTS.values(), ids=list(BAD_CONTENTS))
def test_an_unreadable_record_is_skipped_with_a_warning_and_never_touched(
    registry: SessionRegistry, root: Path, warnings: list[str], content: str
) -> None:
    registry.register(a_session(OTHER))
    bad = root / "github-octo-app-15.json"
    bad.write_text(content)
    assert [record.work_item for record in registry.list_sessions()] == [OTHER]
    assert len(warnings) == 1 and str(bad) in warnings[0]
    assert registry.record_status(ITEM) == "unreadable"
    assert registry.find_by_work_item(ITEM, include_closed=True) is None
    for change in (registry.pause, registry.resume, registry.close, registry.touch):
        assert not change(ITEM)
    assert registry.link_pull_request(ITEM, PR) is None
    assert move_cursor(registry, ITEM, "slack", "t", "c") is False
    assert registry.forget(OTHER) is True
    assert bad.read_text() == content


def test_strangers_files_temp_files_and_directories_are_never_listed_or_touched(
    registry: SessionRegistry, root: Path, warnings: list[str]
) -> None:
    registry.register(a_session(ITEM))
    (root / ".github-octo-app-21.json.abc.tmp").write_text("{half")
    (root / "notes.txt").write_text("mine")
    (root / "index.json").write_text("{}")
    (root / "github-octo-app-99.json").mkdir()
    (root / "github-octo-app-99.json" / "inside").write_text("x")
    (root / "github-octo-app-98.json").write_text(json.dumps(V2))  # names another ref
    strangers = {name: data for name, data in snapshot(root).items() if "-15" not in name}
    assert [record.work_item for record in registry.list_sessions()] == [ITEM]
    assert registry.refs() == {ITEM.ref: root / "github-octo-app-15.json"}
    assert len(warnings) == 1 and "github-octo-app-98.json" in warnings[0]
    for number in (21, 98, 99):
        assert registry.forget(f"github:octo/app#{number}") is False
    assert registry.forget(ITEM) is True
    assert snapshot(root) == strangers


def test_register_replaces_an_unreadable_file_of_its_own_with_a_warning(
    registry: SessionRegistry, root: Path, warnings: list[str]
) -> None:
    root.mkdir(parents=True)
    (root / "github-octo-app-15.json").write_text("{broken")
    registry.register(a_session())
    assert registry.record_status(ITEM) == "ok"
    assert len(warnings) == 1 and "unreadable" in warnings[0]


# -- slug collisions -----------------------------------------------------------------------

DASH_OWNER = WorkItemRef.parse("github:octo-a/b#1")
DASH_REPO = WorkItemRef.parse("github:octo/a-b#1")


@pytest.mark.parametrize(("first", "second"), [(DASH_OWNER, DASH_REPO), (DASH_REPO, DASH_OWNER)])
def test_refs_that_share_a_slug_never_see_change_or_forget_each_other(
    registry: SessionRegistry, root: Path, first: WorkItemRef, second: WorkItemRef
) -> None:
    assert first.slug == second.slug
    registry.register(a_session(first, harness_session_id="first"))
    assert registry.find_by_work_item(second) is None
    assert registry.record_status(second) == "absent"
    assert registry.pause(second) is None and registry.touch(second, "d") is None
    assert registry.forget(second) is False
    registry.register(a_session(second, harness_session_id="second"))
    assert registry.path_for(first) == root / f"{first.slug}.json"
    assert registry.path_for(second) == root / f"{second.disambiguated_slug}.json"
    registry.pause(second)
    registry.link_pull_request(first, PR)
    mine = registry.find_by_work_item(first)
    theirs = registry.find_by_work_item(second)
    assert mine is not None and mine.harness_session_id == "first" and mine.status == "active"
    assert theirs is not None and theirs.harness_session_id == "second" and theirs.is_paused
    assert not theirs.owns(PR)
    assert [record.work_item for record in registry.list_sessions()] == sorted([first, second])
    assert registry.forget(second) is True
    assert registry.find_by_work_item(first) == mine
    assert registry.forget(first) is True
    assert list(root.iterdir()) == []


def test_an_unreadable_file_naming_another_ref_is_never_taken_over(
    registry: SessionRegistry, root: Path
) -> None:
    root.mkdir(parents=True)
    other = root / f"{DASH_OWNER.slug}.json"
    other.write_text(json.dumps({"version": 2, "workItem": DASH_OWNER.ref, "sessions": 3}))
    assert registry.record_status(DASH_REPO) == "absent"
    assert registry.forget(DASH_REPO) is False
    registry.register(a_session(DASH_REPO))
    assert registry.path_for(DASH_REPO) == root / f"{DASH_REPO.disambiguated_slug}.json"
    assert json.loads(other.read_text())["sessions"] == 3
    assert os.path.exists(other)


def test_a_disambiguated_file_holding_a_third_ref_is_never_read_changed_or_removed(
    registry: SessionRegistry, root: Path
) -> None:
    registry.register(a_session(DASH_OWNER))
    planted = root / f"{DASH_REPO.disambiguated_slug}.json"
    planted.write_text(json.dumps(V2))
    assert registry.record_status(DASH_REPO) == "absent"
    assert registry.find_by_work_item(DASH_REPO, include_closed=True) is None
    assert registry.touch(DASH_REPO, "d") is None
    assert registry.forget(DASH_REPO) is False
    with pytest.raises(TheLoopError, match="another work item"):
        registry.register(a_session(DASH_REPO))
    assert json.loads(planted.read_text()) == V2


def test_a_symlink_named_like_the_record_is_stepped_around_never_replaced(
    registry: SessionRegistry, root: Path, tmp_path: Path
) -> None:
    target = tmp_path / "someone-elses.json"
    target.write_text('{"mine": true}')
    root.mkdir(parents=True, exist_ok=True)
    link = root / f"{ITEM.slug}.json"
    link.symlink_to(target)
    registry.register(a_session())
    assert link.is_symlink() and target.read_text() == '{"mine": true}'
    assert registry.path_for(ITEM).name == f"{ITEM.disambiguated_slug}.json"
    assert registry.find_by_work_item(ITEM) is not None
    assert registry.forget(ITEM)
    assert link.is_symlink() and registry.find_by_work_item(ITEM, include_closed=True) is None


def test_a_stranger_s_file_at_both_names_is_never_replaced_by_a_registration(
    registry: SessionRegistry, root: Path, tmp_path: Path
) -> None:
    target = tmp_path / "someone-elses.json"
    target.write_text('{"mine": true}')
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{ITEM.slug}.json").symlink_to(target)
    other = root / f"{ITEM.disambiguated_slug}.json"
    other.symlink_to(target)
    with pytest.raises(TheLoopError, match="not a regular file"):
        registry.register(a_session())
    assert other.is_symlink() and target.read_text() == '{"mine": true}'


def test_a_record_nested_too_deeply_to_parse_is_skipped_as_unreadable(
    registry: SessionRegistry, root: Path, warnings: list[str]
) -> None:
    registry.register(a_session(OTHER))
    (root / f"{ITEM.slug}.json").write_text("[" * 200_000)
    assert [session.ref for session in registry.list_sessions()] == [OTHER.ref]
    assert registry.record_status(ITEM) == "unreadable"
    assert any("nested too deeply" in warning for warning in warnings)
