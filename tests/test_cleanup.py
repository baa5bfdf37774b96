"""The cleanup domain (fakes for the process callables) and one real tmux/git cleanup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.adapters.release import clean_up
from the_loop.cleanup import CleanupOutcome, cleanup_work_item, tmux_names
from the_loop.config.file import Config
from the_loop.dispatch.disposal import CheckoutDisposal
from the_loop.dispatch.factory import build_dispatcher
from the_loop.dispatch.tmux import tmux_session_name
from the_loop.errors import TheLoopError
from the_loop.eventlog.query import query_events
from the_loop.portable.control import CLEANUP, STOP, ControlStore
from the_loop.portable.store import CHANNELS, PULL_REQUESTS
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

REF = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")
ITEM_TARGET = "loop-github-octo-app-15"
PR_TARGET = "loop-github-octo-lib-7"


class Stores(World):
    """Real stores in ``tmp_path`` (the shared test world) and what their log says."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path, source="test")
        self.events_path = self.layout.event_log

    def tmux_name(self, ref: WorkItemRef) -> str:
        """The name the dispatcher gives ``ref``: ``loop-<its record file's stem>``."""
        return tmux_session_name(self.registry.path_for(ref).stem)

    def event_names(self) -> list[str]:
        if not self.events_path.exists():
            return []
        return [event["event"] for event in query_events(self.events_path).events]

    def cleaned_events(self) -> list[dict[str, Any]]:
        events = query_events(self.events_path).events
        return [event for event in events if event["event"] == "session.cleaned"]


@pytest.fixture
def stores(tmp_path: Path) -> Stores:
    return Stores(tmp_path)


def register_with_pr(stores: Stores) -> None:
    stores.registry.register(
        Session(REF, "command", "item-id", cwd="/work/app", tmux_target=ITEM_TARGET)
    )
    pr_endpoint = Session(PR, "command", "pr-id", cwd="/work/lib", tmux_target=PR_TARGET)
    stores.registry.save_endpoint(REF, pr_endpoint)


class FakeProcesses:
    """Records what the cleanup asked for; ``fail`` names the tmux sessions that raise."""

    def __init__(self, checkouts: list[str] | None = None, fail: tuple[str, ...] = ()) -> None:
        self.ended: list[str] = []
        self.removed_for: list[WorkItemRef] = []
        self.checkouts = checkouts if checkouts is not None else ["/root/.worktrees/x"]
        self.fail = fail

    def end_session(self, name: str) -> bool:
        self.ended.append(name)
        if name in self.fail:
            raise TheLoopError(f"tmux would not end {name}")
        return True

    def remove_checkout(self, ref: WorkItemRef) -> list[CheckoutDisposal]:
        self.removed_for.append(ref)
        return [CheckoutDisposal(path, removed=True) for path in self.checkouts]


def test_cleanup_ends_pr_sessions_first_then_removes_the_checkout_record_and_arms_nothing(
    stores: Stores,
) -> None:
    register_with_pr(stores)
    stores.store.write_section(REF, CHANNELS, {"slack": {"channel": "C1", "thread": "1.0"}})
    stores.store.write_section(REF, PULL_REQUESTS, {PR.ref: {"seenComments": ["c1"]}})
    fakes = FakeProcesses()

    outcome = cleanup_work_item(
        REF,
        registry=stores.registry,
        end_session=fakes.end_session,
        remove_checkout=fakes.remove_checkout,
        actor="alice",
        source="cli",
        events=stores.events,
        control=stores.control,
        tmux_name=stores.tmux_name,
    )

    assert fakes.ended == [PR_TARGET, ITEM_TARGET]
    assert fakes.removed_for == [REF]
    assert outcome == CleanupOutcome(
        ref=REF.ref,
        tmux_killed=(PR_TARGET, ITEM_TARGET),
        checkouts=(CheckoutDisposal("/root/.worktrees/x", removed=True),),
        record_removed=True,
        control_recorded=True,
    )
    assert outcome.ok
    assert stores.registry.find_by_work_item(REF, include_closed=True) is None
    assert not stores.registry.path_for(REF).exists()
    control = stores.control.get(REF)
    assert control is not None
    assert (control.command, control.source, control.actor) == (CLEANUP, "cli", "alice")
    assert not stores.control.start_requested(REF)
    assert stores.store.section(REF, CHANNELS) == {"slack": {"channel": "C1", "thread": "1.0"}}
    assert stores.store.section(REF, PULL_REQUESTS) == {PR.ref: {"seenComments": ["c1"]}}
    [event] = stores.cleaned_events()
    assert event["work_item"] == REF.ref
    assert event["actor"] == "alice"
    assert event["tmux_killed"] == [PR_TARGET, ITEM_TARGET]
    assert event["record_removed"] is True
    assert event["checkout_removed"] is True
    assert event["errors"] == []


def test_the_record_is_closed_before_it_is_forgotten(stores: Stores) -> None:
    register_with_pr(stores)
    cleanup_work_item(REF, registry=stores.registry)
    names = stores.event_names()
    assert "session.closed" in names
    assert not stores.registry.path_for(REF).exists()


def test_with_no_record_the_tmux_session_is_located_from_the_ref_alone(stores: Stores) -> None:
    fakes = FakeProcesses(checkouts=[])
    outcome = cleanup_work_item(
        REF,
        registry=stores.registry,
        end_session=fakes.end_session,
        control=stores.control,
        tmux_name=stores.tmux_name,
    )
    assert fakes.ended == [ITEM_TARGET]
    assert outcome.tmux_killed == (ITEM_TARGET,)
    assert outcome.record_removed is False
    assert outcome.checkouts_removed == ()
    assert outcome.control_recorded is True


def test_a_colliding_ref_is_located_under_its_disambiguated_tmux_name(stores: Stores) -> None:
    first = WorkItemRef.parse("github:octo-a/b#1")
    second = WorkItemRef.parse("github:octo/a-b#1")
    assert first.slug == second.slug
    stores.registry.register(Session(first, "command", "first-id"))
    expected = f"loop-{second.disambiguated_slug}"

    fakes = FakeProcesses(checkouts=[])
    outcome = cleanup_work_item(
        second, registry=stores.registry, end_session=fakes.end_session, tmux_name=stores.tmux_name
    )

    assert fakes.ended == [expected]
    assert outcome.tmux_killed == (expected,)
    assert stores.registry.find_by_work_item(first) is not None


def test_every_failure_is_collected_and_the_other_steps_go_on(stores: Stores) -> None:
    register_with_pr(stores)

    def broken_checkout(ref: WorkItemRef) -> list[CheckoutDisposal]:
        raise OSError(f"cannot remove the checkout of {ref.ref}")

    fakes = FakeProcesses(fail=(PR_TARGET,))
    outcome = cleanup_work_item(
        REF,
        registry=stores.registry,
        end_session=fakes.end_session,
        remove_checkout=broken_checkout,
        control=stores.control,
        events=stores.events,
        tmux_name=stores.tmux_name,
    )

    assert fakes.ended == [PR_TARGET, ITEM_TARGET]
    assert outcome.tmux_killed == (ITEM_TARGET,)
    assert outcome.checkouts_removed == ()
    assert outcome.record_removed is True
    assert outcome.control_recorded is True
    assert len(outcome.errors) == 2
    assert PR_TARGET in outcome.errors[0]
    assert "cannot remove the checkout" in outcome.errors[1]
    assert not outcome.ok
    [event] = stores.cleaned_events()
    assert event["level"] == "error"
    assert len(event["errors"]) == 2


def test_a_failure_to_record_control_is_reported_not_raised(stores: Stores, tmp_path: Path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the portable directory should be\n")
    control = ControlStore(blocked / "portable")
    outcome = cleanup_work_item(REF, registry=stores.registry, control=control)
    assert outcome.control_recorded is False
    assert len(outcome.errors) == 1
    assert outcome.errors[0].startswith("control: ")


def test_an_unreadable_record_is_removed_too(stores: Stores) -> None:
    path = stores.registry.path_for(REF)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    outcome = cleanup_work_item(REF, registry=stores.registry)
    assert outcome.record_removed is True
    assert not path.exists()


def test_a_dry_run_changes_nothing_and_emits_nothing(stores: Stores) -> None:
    register_with_pr(stores)
    stores.control.record(REF, STOP, source="comment", actor="bob")
    before_record = stores.registry.path_for(REF).read_bytes()
    before_portable = stores.store.path_for(REF).read_bytes()
    before_log = stores.events_path.read_bytes()

    def must_not_run(*_: object) -> Any:
        raise AssertionError("a dry run must not end or remove anything")

    outcome = cleanup_work_item(
        REF,
        registry=stores.registry,
        end_session=must_not_run,
        remove_checkout=must_not_run,
        dry_run=True,
        control=stores.control,
        events=stores.events,
        find_checkouts=lambda ref: [CheckoutDisposal(f"/root/{ref.slug}", removed=True)],
        tmux_name=stores.tmux_name,
    )

    assert outcome.dry_run is True
    assert outcome.tmux_killed == (PR_TARGET, ITEM_TARGET)
    assert outcome.checkouts_removed == ("/root/github-octo-app-15",)
    assert outcome.record_removed is True
    assert outcome.control_recorded is True
    assert stores.registry.path_for(REF).read_bytes() == before_record
    assert stores.store.path_for(REF).read_bytes() == before_portable
    assert stores.events_path.read_bytes() == before_log


def test_an_unknown_source_is_refused_before_anything_is_touched(stores: Stores) -> None:
    register_with_pr(stores)
    with pytest.raises(ValueError, match="source"):
        cleanup_work_item(REF, registry=stores.registry, source="webhook")
    assert stores.registry.find_by_work_item(REF) is not None


def test_the_outcome_reports_every_field_as_json() -> None:
    kept = CheckoutDisposal("/k", removed=False, uncommitted_files=2, unpushed_commits=1)
    removed = CheckoutDisposal("/c", removed=True)
    outcome = CleanupOutcome(
        ref=REF.ref, tmux_killed=(ITEM_TARGET,), checkouts=(removed, kept), errors=("x",)
    )
    assert json.loads(json.dumps(outcome.to_dict())) == {
        "ref": REF.ref,
        "tmuxKilled": [ITEM_TARGET],
        "checkoutsRemoved": ["/c"],
        "checkoutsKept": ["/k"],
        "checkouts": [removed.to_dict(), kept.to_dict()],
        "recordRemoved": False,
        "controlRecorded": False,
        "errors": ["x"],
        "dryRun": False,
    }


def test_tmux_names_list_pr_targets_then_the_item_then_the_derived_name_once() -> None:
    record = Session(REF, "command", "id", tmux_target="loop-custom").with_endpoint(
        Session(PR, "command", "pr", tmux_target=PR_TARGET)
    )
    assert tmux_names(record, derived=ITEM_TARGET) == [PR_TARGET, "loop-custom", ITEM_TARGET]
    assert tmux_names(record, derived="loop-custom") == [PR_TARGET, "loop-custom"]
    assert tmux_names(None, derived=ITEM_TARGET) == [ITEM_TARGET]
    assert tmux_names(None) == []


def test_without_a_tmux_naming_only_the_sessions_the_record_names_are_ended(
    stores: Stores,
) -> None:
    register_with_pr(stores)
    fakes = FakeProcesses(checkouts=[])
    outcome = cleanup_work_item(REF, registry=stores.registry, end_session=fakes.end_session)
    assert fakes.ended == [PR_TARGET, ITEM_TARGET]
    stores.registry.register(Session(REF, "command", "no-tmux-id"))
    fakes.ended.clear()
    cleanup_work_item(REF, registry=stores.registry, end_session=fakes.end_session)
    assert fakes.ended == []
    assert outcome.record_removed is True


def test_the_cleanup_command_cleans_up_a_work_item_with_no_record_at_all(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    stores: Stores,
) -> None:
    """Real tmux and git: tmux session and worktree are found from the ref alone."""
    remote = make_remote(tmp_path)
    root = tmp_path / "workspaces"
    agent = ["bash", "-c", 'echo "agent $0"; sleep 300', "{session_id}"]
    config = Config(
        {
            "routing": {
                "defaultHarness": "command",
                "harnesses": {"command": {"argv": agent}},
                "workspace": {"root": str(root), "repositories": {"octo/app": str(remote)}},
                "tmux": {"socket": tmux_socket},
                "dispatchTimeoutSeconds": 60,
            }
        }
    )
    dispatcher = build_dispatcher(
        config, registry=stores.registry, control_store=stores.control, events=stores.events
    )
    spawned = dispatcher.spawn(REF, actor="alice")
    assert spawned.checkout is not None
    stores.store.write_section(REF, CHANNELS, {"slack": {"channel": "C1", "thread": "1.0"}})
    assert wait_until(lambda: "agent" in dispatcher.tmux.capture(ITEM_TARGET))
    assert stores.registry.forget(REF) is True

    outcome = clean_up(dispatcher, REF, actor="alice")

    assert outcome.errors == ()
    assert outcome.tmux_killed == (ITEM_TARGET,)
    assert outcome.checkouts_removed == (str(spawned.checkout),)
    assert outcome.record_removed is False
    assert outcome.control_recorded is True
    assert dispatcher.tmux.liveness(ITEM_TARGET) == "absent"
    assert not spawned.checkout.exists()
    control = stores.control.get(REF)
    assert control is not None and control.command == CLEANUP
    assert stores.store.section(REF, CHANNELS) == {"slack": {"channel": "C1", "thread": "1.0"}}
    assert "session.cleaned" in stores.event_names()
