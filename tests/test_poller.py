"""PollState: the poll ledgers of work items and their pull requests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.poll import PollState
from the_loop.portable.store import CONTROL, POLL, PULL_REQUESTS, WorkItemStore
from the_loop.ref import WorkItemRef

APP = "github:octo/app#15"
PR = "github:octo/lib#7"


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout(tmp_path / "state")


def make_store(layout: StateLayout) -> WorkItemStore:
    return WorkItemStore(
        layout.portable_dir, legacy_layout(layout), locks_dir=layout.portable_locks_dir
    )


@pytest.fixture
def store(layout: StateLayout) -> WorkItemStore:
    return make_store(layout)


def record_of(store: WorkItemStore, ref: str) -> dict[str, object]:
    return json.loads(store.path_for(ref).read_text())


@dataclass(frozen=True)
class FakeSession:
    work_item: WorkItemRef


class FakeRegistry:
    """Stands in for the session registry: maps endpoint refs to their work item."""

    def __init__(self, owners: dict[str, str]) -> None:
        self.owners = owners
        self.asked: list[str] = []

    def record_owning(self, ref: WorkItemRef, /) -> FakeSession | None:
        self.asked.append(ref.ref)
        owner = self.owners.get(ref.ref)
        return FakeSession(WorkItemRef.parse(owner)) if owner else None


def test_a_work_items_own_ledger_is_its_poll_section(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.own(APP)
    assert polls.is_known(APP) is False
    polls.baseline_comments(APP, ["IC_1", "IC_2", "IC_1"], "2026-11-29T10:42:00Z")
    assert polls.is_known(APP) is True
    assert polls.seen_comments(APP) == ["IC_1", "IC_2"]
    assert store.section(APP, POLL) == {
        "seenComments": ["IC_1", "IC_2"],
        "commentAttempts": {},
    }


def test_a_pull_requests_ledger_lives_in_its_owners_map_from_the_moment_it_is_owned(
    store: WorkItemStore,
) -> None:
    polls = PollState(store)
    polls.own(PR, APP)
    assert store.pull_request_ledger(APP, PR) == {"seenComments": [], "commentAttempts": {}}
    assert store.owner_of(PR) == APP
    assert polls.is_known(PR) is True

    polls.resolve_comment(PR, "PRC_9")
    assert record_of(store, APP)[PULL_REQUESTS] == {
        PR: {"seenComments": ["PRC_9"], "commentAttempts": {}}
    }
    assert not store.path_for(PR).exists(), "one work item is one file"


def test_owning_again_keeps_the_ledger_that_is_there(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.own(PR, APP)
    polls.resolve_comment(PR, "PRC_9")
    PollState(store).own(PR, APP)
    assert polls.seen_comments(PR) == ["PRC_9"]


def test_comment_attempts_are_counted_until_the_comment_is_resolved(store: WorkItemStore) -> None:
    polls = PollState(store)
    assert polls.note_comment_attempt(APP, "IC_3") == 1
    assert polls.note_comment_attempt(APP, "IC_3") == 2
    assert polls.comment_attempts(APP, "IC_3") == 2
    assert polls.comment_attempts(APP, "IC_4") == 0
    polls.resolve_comment(APP, "IC_3")
    assert polls.comment_attempts(APP, "IC_3") == 0
    assert polls.seen_comments(APP) == ["IC_3"]


def test_a_baseline_marks_comments_seen_and_drops_their_attempts(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.note_comment_attempt(APP, "IC_1")
    polls.note_comment_attempt(APP, "IC_9")
    polls.baseline_comments(APP, ["IC_1"], "2026-11-29T10:42:00Z")
    assert polls.comment_attempts(APP, "IC_1") == 0
    assert polls.comment_attempts(APP, "IC_9") == 1


def test_spawn_attempts_are_counted_in_the_ledger(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.note_spawn_attempt(APP, delivery_id="d-1")
    polls.note_spawn_attempt(APP, delivery_id="d-2", gave_up=True)
    assert store.section(APP, POLL)["spawn"] == {  # type: ignore[index]
        "attempts": 2,
        "gaveUp": True,
        "deliveryId": "d-2",
    }


def test_the_owner_is_resolved_from_the_registry_first(store: WorkItemStore) -> None:
    registry = FakeRegistry({PR: APP})
    polls = PollState(store, registry=registry)
    polls.note_comment_attempt(PR, "PRC_1")
    assert store.pull_request_ledger(APP, PR) == {
        "seenComments": [],
        "commentAttempts": {"PRC_1": 1},
    }
    assert registry.asked == [PR]


def test_without_a_registry_record_the_owner_comes_from_the_portable_maps(
    store: WorkItemStore,
) -> None:
    PollState(store).own(PR, APP)
    polls = PollState(store, registry=FakeRegistry({}))
    polls.resolve_comment(PR, "PRC_2")
    assert store.pull_request_ledger(APP, PR)["seenComments"] == ["PRC_2"]  # type: ignore[index]


def test_a_ref_that_resolves_to_nothing_is_a_work_item_of_its_own(store: WorkItemStore) -> None:
    polls = PollState(store, registry=FakeRegistry({}))
    polls.resolve_comment(PR, "PRC_3")
    assert store.section(PR, POLL) == {"seenComments": ["PRC_3"], "commentAttempts": {}}
    assert store.section(APP, PULL_REQUESTS) is None


def test_forget_removes_a_work_items_ledger_through_the_seal_rule(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.resolve_comment(APP, "IC_1")
    store.write_section(APP, CONTROL, {"command": "start"})
    polls.forget(APP)
    assert polls.is_known(APP) is False
    assert record_of(store, APP)[POLL] is None
    store.write_section(APP, CONTROL, None)
    assert not store.path_for(APP).exists()


def test_forget_removes_a_pull_request_ledger_from_its_owners_map(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.own(PR, APP)
    polls.own("github:octo/lib#8", APP)
    polls.forget(PR)
    assert store.owner_of(PR) is None
    assert store.owner_of("github:octo/lib#8") == APP
    polls.forget("github:octo/lib#8")
    assert not store.path_for(APP).exists()


def test_flush_and_save_write_nothing(store: WorkItemStore) -> None:
    polls = PollState(store)
    polls.flush(APP)
    polls.save()
    assert not store.root.exists()
    polls.resolve_comment(APP, "IC_1")
    before = store.path_for(APP).stat()
    polls.flush(APP)
    polls.save()
    after = store.path_for(APP).stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_a_ledger_cleared_by_a_reset_is_not_written_back_from_memory(
    layout: StateLayout,
) -> None:
    poller_store = make_store(layout)
    polls = PollState(poller_store)
    polls.own(APP)
    polls.baseline_comments(APP, ["IC_1", "IC_2"], "2026-11-29T10:42:00Z")
    assert polls.seen_comments(APP) == ["IC_1", "IC_2"]

    make_store(layout).write_section(APP, POLL, None)  # a reset, from another process
    polls.note_comment_attempt(APP, "IC_3")
    assert poller_store.section(APP, POLL) == {
        "seenComments": [],
        "commentAttempts": {"IC_3": 1},
    }


def test_a_pull_request_ledger_cleared_meanwhile_is_not_written_back(
    layout: StateLayout,
) -> None:
    polls = PollState(make_store(layout))
    polls.own(PR, APP)
    polls.resolve_comment(PR, "PRC_1")
    make_store(layout).write_section(APP, PULL_REQUESTS, None)
    polls.note_comment_attempt(PR, "PRC_2")
    assert make_store(layout).pull_request_ledger(APP, PR) == {
        "seenComments": [],
        "commentAttempts": {"PRC_2": 1},
    }


def test_a_v1_poll_state_file_answers_until_the_next_write_which_goes_to_portable_only(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    legacy.poll_state.parent.mkdir(parents=True)
    legacy.poll_state.write_text(
        json.dumps({"items": {APP: {"seenComments": ["OLD_1"], "commentAttempts": {"OLD_2": 2}}}})
    )
    before = legacy.poll_state.read_bytes()
    polls = PollState(store)
    assert polls.is_known(APP)
    assert polls.seen_comments(APP) == ["OLD_1"]
    assert polls.comment_attempts(APP, "OLD_2") == 2

    polls.resolve_comment(APP, "OLD_2")
    assert legacy.poll_state.read_bytes() == before
    assert record_of(store, APP)[POLL] == {
        "seenComments": ["OLD_1", "OLD_2"],
        "commentAttempts": {},
    }

    polls.forget(APP)
    assert polls.is_known(APP) is False, "the legacy ledger does not come back"
    assert record_of(store, APP)["sealed"] is True
