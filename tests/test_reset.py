"""The reset domain (seed design 000, testing strategy: unit) on real stores in tmp_path.

Each test names the requirement it proves. ``close`` is a fake process
boundary; everything else is the real registry and portable store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.adapters.reset_close import HarnessStillRunning
from the_loop.dispatch.teardown import SessionCloseError
from the_loop.errors import CloseIncomplete, TheLoopError
from the_loop.eventlog.query import query_events
from the_loop.fsio import DirectorySyncs
from the_loop.layout import legacy_layout
from the_loop.portable.store import WorkItemStore, WriteResult
from the_loop.ref import WorkItemRef
from the_loop.reset import (
    CHANNELS,
    CONTROL,
    PIECES,
    POLL,
    PULL_REQUESTS,
    RECORD,
    SESSION,
    WORKSPACE,
    ResetOutcome,
    reset_work_item,
    work_items_with_state,
)
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/repo#15")
OTHER = WorkItemRef.parse("github:octo/repo#21")


class Root(World):
    """A real state root with its stores (the shared test world)."""

    def session(self, ref: WorkItemRef, status: str = "active") -> Session:
        session = self.registry.register(
            Session(
                work_item=ref,
                harness="claude",
                harness_session_id="sid",
                cwd="/nowhere",
                tmux_target=f"loop-{ref.slug}",
            )
        )
        if status == "paused":
            self.registry.pause(ref)
        elif status == "closed":
            self.registry.close(ref)
        return session

    def armed(self, ref: WorkItemRef) -> None:
        self.control.record(ref, "start", source="cli", actor="me")
        self.store.write_section(ref, POLL, {"seenComments": ["IC_1"], "commentAttempts": {}})

    def reset(self, ref: WorkItemRef, **kwargs: Any) -> ResetOutcome:
        kwargs.setdefault("events", self.events)
        return reset_work_item(ref, registry=self.registry, store=self.store, **kwargs)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path)


class FakeClose:
    """The close path at its process boundary: closes the record like the dispatcher,
    then reports a removed checkout (or raises)."""

    def __init__(
        self,
        registry: SessionRegistry,
        removes_checkout: bool = True,
        error: Exception | None = None,
    ) -> None:
        self.registry = registry
        self.calls: list[Session] = []
        self.removes_checkout = removes_checkout
        self.error = error

    def __call__(self, session: Session) -> bool:
        self.calls.append(session)
        self.registry.close(session.work_item, reason="reset")
        if self.error is not None:
            raise self.error
        return self.removes_checkout


def test_each_piece_is_removed_independently(root: Root) -> None:
    """Unit: each piece removed independently (design § Testing strategy)."""
    root.session(ITEM, "closed")
    assert root.reset(ITEM).removed == (SESSION,)
    root.control.record(ITEM, "start", source="cli")
    assert root.reset(ITEM).removed == (CONTROL,)
    root.store.write_section(ITEM, POLL, {"seenComments": []})
    assert root.reset(ITEM).removed == (POLL,)
    root.store.write_pull_request_ledger(ITEM, "github:octo/lib#7", {"seenComments": ["P"]})
    assert root.reset(ITEM).removed == (PULL_REQUESTS,)
    root.store.write_section(ITEM, CHANNELS, {"slack": {"channel": "C1", "thread": "1.2"}})
    assert root.reset(ITEM).removed == (CHANNELS,)


def test_every_piece_together_in_removal_order(root: Root) -> None:
    """Unit: pieces removed in combination, reported in PIECES order."""
    root.session(ITEM)
    root.armed(ITEM)
    root.store.write_pull_request_ledger(ITEM, "github:octo/lib#7", {"seenComments": []})
    root.store.write_section(ITEM, CHANNELS, {"slack": {"channel": "C1"}})
    outcome = root.reset(ITEM, close=FakeClose(root.registry))
    assert outcome.removed == (WORKSPACE, SESSION, CONTROL, POLL, PULL_REQUESTS, CHANNELS)
    assert list(outcome.removed) == [p for p in PIECES if p in outcome.removed]
    assert outcome.ok and outcome.was_live and outcome.ended
    assert root.registry.find_by_work_item(ITEM, include_closed=True) is None
    assert not root.store.path_for(ITEM).exists()
    assert not root.layout.portable_index.exists()


def test_a_live_session_is_closed_before_its_record_goes(root: Root) -> None:
    """Unit: a live session ends before its record goes (design § Architecture order)."""
    root.session(ITEM)
    seen: list[bool] = []

    def close(session: Session) -> bool:
        seen.append(root.registry.find_by_work_item(ITEM, include_closed=True) is not None)
        seen.append(root.control.get(ITEM) is not None)
        root.registry.close(ITEM)
        return False

    root.armed(ITEM)
    outcome = root.reset(ITEM, close=close)
    assert seen == [True, True]
    assert outcome.ended and WORKSPACE not in outcome.removed


def test_a_paused_session_counts_as_live(root: Root) -> None:
    """Unit: a paused session counts as live."""
    root.session(ITEM, "paused")
    close = FakeClose(root.registry)
    outcome = root.reset(ITEM, close=close)
    assert len(close.calls) == 1 and outcome.was_live and outcome.ended


def test_a_closed_record_is_still_removed_without_closing_again(root: Root) -> None:
    """Unit: a closed record is still removed."""
    root.session(ITEM, "closed")
    close = FakeClose(root.registry)
    outcome = root.reset(ITEM, close=close)
    assert close.calls == []
    assert outcome.removed == (SESSION,) and not outcome.was_live


def test_nothing_found_is_not_ok(root: Root) -> None:
    """R1.6: an item with no state is not found, and so not ok."""
    outcome = root.reset(ITEM)
    assert not outcome.found and not outcome.ok and outcome.removed == ()


def test_close_none_reports_a_live_session_without_ending_it(root: Root) -> None:
    """Unit: close=None means do not close; was_live still reported, never 'ended'."""
    root.session(ITEM)
    outcome = root.reset(ITEM, close=None)
    assert outcome.was_live and not outcome.ended
    assert outcome.removed == (SESSION,)


def test_a_dry_run_writes_nothing_and_emits_nothing(root: Root) -> None:
    """Unit: --dry-run semantics — nothing written, no event."""
    root.session(ITEM)
    root.armed(ITEM)
    before = {p: p.read_bytes() for p in root.layout.root.rglob("*") if p.is_file()}
    close = FakeClose(root.registry)
    outcome = root.reset(ITEM, close=close, dry_run=True)
    after = {p: p.read_bytes() for p in root.layout.root.rglob("*") if p.is_file()}
    assert before == after
    assert close.calls == []
    assert outcome.dry_run and outcome.was_live and not outcome.ended
    assert outcome.removed == (SESSION, CONTROL, POLL)
    assert "session.reset" not in [e["event"] for e in query_events(root.layout.event_log).events]


def test_a_raising_close_is_reported_and_the_records_still_go(root: Root) -> None:
    """Design § Error handling: close path raises → reported, record removal proceeds."""
    root.session(ITEM)
    root.armed(ITEM)
    outcome = root.reset(ITEM, close=FakeClose(root.registry, error=RuntimeError("tmux exploded")))
    assert outcome.errors == ("could not end the session: tmux exploded",)
    assert not outcome.ended
    assert outcome.removed == (SESSION, CONTROL, POLL)
    assert outcome.found and not outcome.ok


class FailingForget(SessionRegistry):
    def forget(
        self,
        ref: WorkItemRef | str,
        *,
        syncs: DirectorySyncs | None = None,
        only_if_not_live: bool = False,
    ) -> bool:
        raise PermissionError(13, "Permission denied", str(self.path_for(ref)))


class FailingWrite(WorkItemStore):
    def write_sections(self, ref: Any, changes: Any, **_options: Any) -> WriteResult:
        raise OSError(28, "No space left on device", str(self.path_for(ref)))


def test_an_oserror_on_forget_is_collected_not_raised(root: Root) -> None:
    """R2.5 / abuse case 5: an OSError becomes an entry in errors, never an exception."""
    root.session(ITEM, "closed")
    root.armed(ITEM)
    registry = FailingForget(root.layout.local_dir)
    outcome = reset_work_item(ITEM, registry=registry, store=root.store)
    assert SESSION not in outcome.removed
    assert outcome.removed == (CONTROL, POLL)
    assert outcome.errors[0].startswith("could not remove the session record: Permission denied")
    assert root.registry.find_by_work_item(ITEM, include_closed=True) is not None


def test_an_oserror_on_the_portable_write_is_collected_and_names_nothing_on_disk(
    root: Root,
) -> None:
    """R2.5: the report never names a piece that is still on disk."""
    root.session(ITEM, "closed")
    root.armed(ITEM)
    store = FailingWrite(root.layout.portable_dir, legacy_layout(root.layout))
    outcome = reset_work_item(ITEM, registry=root.registry, store=store)
    assert outcome.removed == (SESSION,)
    assert "No space left on device" in outcome.errors[0]
    assert root.control.get(ITEM) is not None


def _legacy_control(root: Root, ref: WorkItemRef) -> None:
    legacy = legacy_layout(root.layout).control_dir / f"{ref.slug}.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"ref": ref.ref, "command": "start", "source": "comment"}))


def test_with_a_legacy_tree_the_record_is_sealed_not_resurrected(root: Root) -> None:
    """R3.1: clear through the store — a pre-issue-128 tree leaves a sealed record."""
    _legacy_control(root, ITEM)
    assert root.control.start_requested(ITEM)
    outcome = root.reset(ITEM)
    assert outcome.removed == (CONTROL,)
    sealed = json.loads(root.store.path_for(ITEM).read_text())
    assert sealed == {"ref": ITEM.ref, "url": ITEM.url, "sealed": True}
    assert root.control.get(ITEM) is None
    assert not root.control.start_requested(ITEM)
    assert not root.reset(ITEM).found


def test_without_a_legacy_tree_the_record_file_is_deleted(root: Root) -> None:
    """R3.1: no legacy tree → the record file is deleted, not sealed."""
    root.armed(ITEM)
    root.reset(ITEM)
    assert not root.store.path_for(ITEM).exists()


def test_an_unreadable_portable_record_counts_as_found_and_is_removed(root: Root) -> None:
    """Design § Error handling: corrupt record → removed, and the item counts as found."""
    path = root.store.path_for(ITEM)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert root.reset(ITEM, dry_run=True).removed == (RECORD,)
    outcome = root.reset(ITEM)
    assert outcome.removed == (RECORD,) and outcome.ok
    assert not path.exists()


def test_an_unreadable_session_record_counts_as_found_and_is_removed(root: Root) -> None:
    """Design § Error handling: corrupt session record → removed, found."""
    path = root.registry.path_for(ITEM)
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    outcome = root.reset(ITEM)
    assert outcome.removed == (SESSION,) and outcome.ok
    assert not path.exists()


def test_one_event_per_item_with_the_removed_pieces(root: Root) -> None:
    """R4: one session.reset event records the same list the output names."""
    root.session(ITEM, "closed")
    root.armed(ITEM)
    root.reset(ITEM, actor="octocat")
    root.reset(OTHER, actor="octocat")
    events = query_events(root.layout.event_log).events
    resets = [event for event in events if event["event"] == "session.reset"]
    assert [event["work_item"] for event in resets] == [ITEM.ref, OTHER.ref]
    assert resets[0]["removed"] == [SESSION, CONTROL, POLL]
    assert resets[0]["actor"] == "octocat" and resets[0]["found"] is True
    assert resets[1]["removed"] == [] and resets[1]["found"] is False


def test_reset_disarms_the_item(root: Root) -> None:
    """Security § Fail closed: start_requested is false after a reset."""
    root.armed(ITEM)
    assert root.control.start_requested(ITEM)
    root.reset(ITEM)
    assert not root.control.start_requested(ITEM)


def test_work_items_with_state_unions_and_deduplicates(root: Root) -> None:
    """Unit: work_items_with_state unions registry and portable records, once each."""
    root.session(ITEM, "closed")
    root.armed(ITEM)
    root.armed(OTHER)
    third = WorkItemRef.parse("github:octo/lib#3")
    root.session(third)
    assert work_items_with_state(root.registry, root.store) == [third, ITEM, OTHER]


def test_work_items_with_state_skips_sealed_and_empty_records(root: Root) -> None:
    """Unit: a sealed record holds nothing to reset and is not enumerated."""
    _legacy_control(root, ITEM)
    root.reset(ITEM)
    assert root.store.path_for(ITEM).exists()
    assert work_items_with_state(root.registry, root.store) == []


def test_slug_colliding_refs_never_affect_each_other(root: Root) -> None:
    """Security: slug-colliding refs never see, change or remove each other's state."""
    first = WorkItemRef.parse("github:octo-a/b#1")
    second = WorkItemRef.parse("github:octo/a-b#1")
    for ref in (first, second):
        root.session(ref, "closed")
        root.armed(ref)
    outcome = root.reset(second)
    assert outcome.removed == (SESSION, CONTROL, POLL)
    assert root.registry.find_by_work_item(first, include_closed=True) is not None
    assert root.control.get(first) is not None
    assert root.reset(first).removed == (SESSION, CONTROL, POLL)


def test_items_only_in_the_legacy_tree_are_enumerated_until_sealed(root: Root) -> None:
    """Unit: --all covers a v1 root's legacy-only items, and not again once sealed."""
    _legacy_control(root, ITEM)
    legacy_poll = legacy_layout(root.layout).poll_state
    legacy_poll.write_text(json.dumps({"items": {OTHER.ref: {"seenComments": ["x"]}}}))
    assert work_items_with_state(root.registry, root.store) == [ITEM, OTHER]
    assert root.reset(ITEM).removed == (CONTROL,)
    assert root.reset(OTHER).removed == (POLL,)
    assert work_items_with_state(root.registry, root.store) == []


def test_a_close_that_fails_after_removing_the_checkout_still_reports_it(root: Root) -> None:
    """R5.4: the removed checkout is an irreversible fact, reported even when the close
    failed later (CloseIncomplete carries checkout_removed)."""
    root.session(ITEM)
    failed = CloseIncomplete("x", checkout_removed=True)
    outcome = root.reset(ITEM, close=FakeClose(root.registry, error=failed))
    assert outcome.removed == (WORKSPACE, SESSION)
    assert outcome.errors == ("could not end the session: x",) and not outcome.ended


def test_only_the_declared_close_failure_can_report_a_removed_checkout(root: Root) -> None:
    """An error that merely has a ``checkout_removed`` attribute is not the contract."""

    class LooksAlike(Exception):
        checkout_removed = True

    root.session(ITEM)
    outcome = root.reset(ITEM, close=FakeClose(root.registry, error=LooksAlike("x")))
    assert outcome.removed == (SESSION,)


def test_the_teardown_and_the_reset_command_fail_a_close_with_the_one_declared_type() -> None:
    session = Session(work_item=ITEM, harness="claude", harness_session_id="s")
    still_running = HarnessStillRunning(session, ["loop-x"], checkout_removed=True)
    close_failed = SessionCloseError("closed, but tmux failed", checkouts=())
    assert isinstance(still_running, CloseIncomplete) and still_running.checkout_removed
    assert isinstance(close_failed, CloseIncomplete) and not close_failed.checkout_removed
    assert isinstance(close_failed, TheLoopError)


def test_a_closed_record_whose_harness_still_runs_is_ended_first(root: Root) -> None:
    """Crash safety: a close interrupted after the record closed leaves the agent running;
    the next reset sees it (still_running) and ends it before forgetting the record."""
    root.session(ITEM, "closed")
    close = FakeClose(root.registry, removes_checkout=False)
    outcome = root.reset(ITEM, close=close, still_running=lambda session: True)
    assert len(close.calls) == 1 and outcome.was_live and outcome.ended
    assert outcome.removed == (SESSION,)
    dry = root.reset(ITEM, dry_run=True, still_running=lambda session: True)
    assert not dry.found


def test_a_session_registered_during_the_reset_is_not_forgotten(root: Root) -> None:
    """State §6: a session that went live after the lookup is kept, and its item is not
    disarmed; the reset reports the item as failed."""
    root.session(ITEM, "closed")
    root.armed(ITEM)

    class RegistersMeanwhile(SessionRegistry):
        def forget(self, ref: Any, **kwargs: Any) -> bool:
            root.registry.register(
                Session(work_item=ITEM, harness="claude", harness_session_id="new"), force=True
            )
            return super().forget(ref, **kwargs)

    registry = RegistersMeanwhile(root.layout.local_dir)
    outcome = reset_work_item(ITEM, registry=registry, store=root.store)
    assert outcome.errors and "a live session was registered meanwhile" in outcome.errors[0]
    live = root.registry.find_by_work_item(ITEM)
    assert live is not None and live.harness_session_id == "new"
    assert root.control.start_requested(ITEM)


def test_a_log_that_cannot_be_appended_to_fails_the_item(root: Root) -> None:
    """R4: what it says it logs — an event that could not be written is an error."""
    root.armed(ITEM)
    root.layout.event_log.unlink(missing_ok=True)  # the setup's own events
    root.layout.event_log.mkdir(parents=True)
    outcome = root.reset(ITEM)
    assert outcome.removed == (CONTROL, POLL)
    assert outcome.errors == (
        f"could not append the session.reset event to {root.layout.event_log}",
    )


def test_unreadable_records_that_name_their_ref_are_enumerated(root: Root) -> None:
    """State §3/§4: an unreadable record of a known ref is found by --all and removed."""
    local = root.registry.path_for(ITEM)
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps({"version": 2, "workItem": ITEM.ref, "sessions": "oops"}))
    portable = root.store.path_for(OTHER)
    portable.parent.mkdir(parents=True)
    portable.write_text(json.dumps({"ref": OTHER.ref, "control": "not an object"}))
    assert work_items_with_state(root.registry, root.store) == [ITEM, OTHER]
    assert root.reset(ITEM).removed == (SESSION,)
    assert root.reset(OTHER).removed == (RECORD,)
    assert work_items_with_state(root.registry, root.store) == []


def test_items_only_in_the_older_root_poll_state_file_are_reset_and_sealed_over(
    root: Root,
) -> None:
    """Issue 11 point 12: ``<root>/poll-state.json`` is part of the legacy tree too."""
    older = root.layout.root / "poll-state.json"
    older.parent.mkdir(parents=True, exist_ok=True)
    older.write_text(json.dumps({"items": {OTHER.ref: {"seenComments": ["x"]}}}))
    before = older.read_bytes()
    assert work_items_with_state(root.registry, root.store) == [OTHER]
    assert root.reset(OTHER).removed == (POLL,)
    assert work_items_with_state(root.registry, root.store) == []
    assert root.store.read(OTHER).get("poll") is None
    assert json.loads(root.store.path_for(OTHER).read_text())["sealed"] is True
    assert older.read_bytes() == before
