"""Channel state: the binding travels in the portable record, the cursor stays in local/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from the_loop.cleanup import cleanup_work_item
from the_loop.portable.channels import ChannelError, ChannelState
from the_loop.portable.store import CHANNELS, PULL_REQUESTS, WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.reset import reset_work_item
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER = WorkItemRef.parse("github:octo/app#21")
NOON = 1_764_417_600.0  # 2025-11-29T12:00:00Z


@pytest.fixture
def store(tmp_path: Path) -> WorkItemStore:
    return WorkItemStore(tmp_path / "portable")


@pytest.fixture
def registry(tmp_path: Path) -> SessionRegistry:
    return SessionRegistry(tmp_path / "local")


@pytest.fixture
def channels(store: WorkItemStore, registry: SessionRegistry) -> ChannelState:
    return ChannelState(store, registry)


def registered(registry: SessionRegistry, ref: WorkItemRef = ITEM) -> Session:
    return registry.register(Session(ref, "claude", "0f1c", cwd="/abs/checkout"))


def test_a_binding_is_written_to_the_portable_channels_section_in_the_published_shape(
    channels: ChannelState, store: WorkItemStore
) -> None:
    binding = channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001", now=NOON)
    expected = {
        "channel": "C0AB",
        "thread": "1726.001",
        "opened": "2025-11-29T12:00:00Z",
        "origin": "start",
    }
    assert binding == expected
    on_disk = json.loads(store.path_for(ITEM).read_text(encoding="utf-8"))
    assert on_disk[CHANNELS] == {"slack": expected}
    assert list(on_disk) == ["ref", "url", CHANNELS]


def test_binding_leaves_every_other_section_as_it_is_on_disk(
    channels: ChannelState, store: WorkItemStore
) -> None:
    store.write_section(ITEM, "poll", {"seenComments": ["IC_1"], "commentAttempts": {}})
    channels.bind(ITEM, "slack", conversation="C0AB")
    channels.bind(ITEM, "teams", conversation="19:abc", origin="comment")
    assert store.section(ITEM, "poll") == {"seenComments": ["IC_1"], "commentAttempts": {}}
    assert channels.binding(ITEM, "slack") is not None
    teams = channels.binding(ITEM, "teams")
    assert teams is not None and teams["origin"] == "comment"


def test_rebinding_the_same_thread_keeps_when_it_was_opened(channels: ChannelState) -> None:
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1.0", now=NOON)
    again = channels.bind(ITEM, "slack", conversation="C0AB", thread="1.0", now=NOON + 3600)
    assert again["opened"] == "2025-11-29T12:00:00Z"
    moved = channels.bind(ITEM, "slack", conversation="C0AB", thread="2.0", now=NOON + 3600)
    assert moved["opened"] == "2025-11-29T13:00:00Z"


def test_a_thread_that_carries_one_work_item_cannot_be_bound_to_another(
    channels: ChannelState, store: WorkItemStore
) -> None:
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    with pytest.raises(ChannelError, match="already carries github:octo/app#15"):
        channels.bind(OTHER, "slack", conversation="C0AB", thread="1726.001")
    assert store.section(OTHER, CHANNELS) is None


@pytest.mark.parametrize(
    ("channel", "conversation", "origin"),
    [("", "C0AB", "start"), ("slack", "", "start"), ("slack", "C0AB", " ")],
)
def test_an_empty_channel_conversation_or_origin_is_refused_before_anything_is_written(
    channels: ChannelState, store: WorkItemStore, channel: str, conversation: str, origin: str
) -> None:
    with pytest.raises(ChannelError):
        channels.bind(ITEM, channel, conversation=conversation, origin=origin)
    assert not store.path_for(ITEM).exists()


def test_the_work_item_for_a_thread_is_found_from_the_portable_records_alone(
    channels: ChannelState, store: WorkItemStore, tmp_path: Path
) -> None:
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    channels.bind(OTHER, "slack", conversation="C0AB", thread="1726.900")
    fresh = ChannelState(WorkItemStore(store.root), SessionRegistry(tmp_path / "elsewhere"))
    assert fresh.work_item_for("slack", "C0AB", "1726.001") == ITEM
    assert fresh.work_item_for("slack", "C0AB", "1726.900") == OTHER
    assert fresh.work_item_for("slack", "C0AB", "9.9") is None
    assert fresh.work_item_for("teams", "C0AB", "1726.001") is None


def test_two_records_claiming_one_thread_route_to_the_first_and_warn(
    store: WorkItemStore, registry: SessionRegistry
) -> None:
    binding = {"channel": "C0AB", "thread": "1.0", "opened": "", "origin": "start"}
    store.write_section(OTHER, CHANNELS, {"slack": binding})
    store.write_section(ITEM, CHANNELS, {"slack": binding})
    warnings: list[str] = []
    channels = ChannelState(store, registry, on_warning=warnings.append)
    assert channels.work_item_for("slack", "C0AB", "1.0") == ITEM
    assert len(warnings) == 1 and OTHER.ref in warnings[0]


def test_the_cursor_lives_in_the_local_record_and_never_in_the_portable_one(
    channels: ChannelState, store: WorkItemStore, registry: SessionRegistry
) -> None:
    registered(registry)
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    assert channels.advance(ITEM, "slack", "1726.001", "1726.045")
    assert channels.cursor(ITEM, "slack", "1726.001") == "1726.045"
    local = json.loads(registry.path_for(ITEM).read_text(encoding="utf-8"))
    assert local[CHANNELS] == {"slack": {"cursors": {"1726.001": "1726.045"}}}
    portable = json.loads(store.path_for(ITEM).read_text(encoding="utf-8"))
    assert "cursors" not in json.dumps(portable)


def test_a_cursor_never_moves_backwards(channels: ChannelState, registry: SessionRegistry) -> None:
    registered(registry)
    assert channels.advance(ITEM, "slack", "t", "1726.100")
    assert not channels.advance(ITEM, "slack", "t", "1726.045")
    assert not channels.advance(ITEM, "slack", "t", "1726.100")
    assert channels.advance(ITEM, "slack", "t", "1726.2")  # 1726.2 > 1726.100 as numbers
    assert channels.cursor(ITEM, "slack", "t") == "1726.2"


def test_without_a_session_record_on_this_machine_there_is_no_cursor_to_advance(
    channels: ChannelState, registry: SessionRegistry
) -> None:
    assert channels.cursor(ITEM, "slack", "t") == ""
    assert channels.advance(ITEM, "slack", "t", "1.0") is False
    assert not registry.path_for(ITEM).exists()


def test_cleanup_forgets_the_cursors_with_the_local_record_and_keeps_the_binding(
    channels: ChannelState, registry: SessionRegistry
) -> None:
    """Task 10: cleanup deletes the local record (cursors with it) and keeps `channels`."""
    registered(registry)
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    channels.advance(ITEM, "slack", "1726.001", "1726.045")
    outcome = cleanup_work_item(ITEM, registry=registry)
    assert outcome.record_removed
    assert channels.cursor(ITEM, "slack", "1726.001") == ""
    assert channels.binding(ITEM, "slack") is not None
    assert channels.work_item_for("slack", "C0AB", "1726.001") == ITEM


def test_reset_clears_the_binding_the_pull_request_ledgers_and_the_cursors(
    channels: ChannelState, store: WorkItemStore, registry: SessionRegistry
) -> None:
    """Task 10: reset clears every portable section, `channels` and `pullRequests` included."""
    registered(registry)
    channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001")
    channels.advance(ITEM, "slack", "1726.001", "1726.045")
    store.write_pull_request_ledger(ITEM, "github:octo/lib#7", {"seenComments": ["PRC_9"]})
    outcome = reset_work_item(ITEM, registry=registry, store=store)
    assert {"session", CHANNELS, PULL_REQUESTS} <= set(outcome.removed)
    assert channels.binding(ITEM, "slack") is None
    assert channels.work_item_for("slack", "C0AB", "1726.001") is None
    assert channels.cursor(ITEM, "slack", "1726.001") == ""
    assert store.owner_of("github:octo/lib#7") is None
    assert not store.path_for(ITEM).exists()
