"""The upgrade report: retired locations found, whether each is still read, nothing deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.layout import StateLayout
from the_loop.portable.store import WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemState, WorkItemStateFile
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session
from the_loop.upgrade import (
    GRAPH_SECTION,
    GRAPH_STATE_FILE,
    LEGACY_CONTROL,
    LEGACY_POLL_STATE,
    LEGACY_SESSION_RECORD,
    LEGACY_TREE,
    PULL_REQUEST_RECORD,
    RETIRED_KINDS,
    RetiredLocation,
    UpgradeReport,
    default_checkouts,
    find_retired,
    workspace_checkouts,
)

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER = WorkItemRef.parse("github:octo/app#21")
PR = WorkItemRef.parse("github:octo/lib#7")


class Machine(World):
    """One state root with its stores, as the command layer opens them."""

    def report(self, *checkouts: Path) -> UpgradeReport:
        return find_retired(
            layout=self.layout, registry=self.registry, store=self.store, checkouts=checkouts
        )

    def kinds(self, *checkouts: Path) -> list[tuple[str, bool]]:
        return [(item.kind, item.read) for item in self.report(*checkouts).locations]


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_a_machine_with_only_current_state_is_clean(machine: Machine, tmp_path: Path) -> None:
    machine.registry.register(Session(ITEM, "claude", "s1", cwd=str(tmp_path)))
    machine.control.record(ITEM, "start", source="cli")
    machine.store.write_pull_request_ledger(ITEM, PR, {"seenComments": []})
    report = machine.report()
    assert report.clean
    assert report.to_dict() == {"clean": True, "retired": [], "checkouts": [], "unscanned": []}


def test_a_legacy_control_record_is_read_until_its_section_is_written(machine: Machine) -> None:
    write(machine.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "start"})
    assert machine.kinds() == [(LEGACY_CONTROL, True)]
    machine.control.record(ITEM, "stop", source="cli")
    [location] = machine.report().locations
    assert (location.kind, location.read, location.ref) == (LEGACY_CONTROL, False, ITEM.ref)
    assert location.replaced_by == "the control section of portable/<slug>.json"


def test_a_legacy_control_record_of_a_sealed_item_is_no_longer_read(machine: Machine) -> None:
    write(machine.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "start"})
    machine.control.clear(ITEM)
    assert json.loads(machine.store.path_for(ITEM).read_text(encoding="utf-8"))["sealed"] is True
    assert machine.kinds() == [(LEGACY_CONTROL, False)]


def test_a_legacy_control_file_naming_no_work_item_is_listed_as_not_read(
    machine: Machine,
) -> None:
    write(machine.legacy.control_dir / "github-octo-app-15.json", {"command": "start"})
    [location] = machine.report().locations
    assert (location.kind, location.read, location.detail) == (
        LEGACY_CONTROL,
        False,
        "names no work item",
    )


def test_the_legacy_poll_state_file_says_how_many_items_still_fall_back_to_it(
    machine: Machine,
) -> None:
    items = {ITEM.ref: {"seenComments": ["IC_1"]}, OTHER.ref: {"seenComments": []}}
    write(machine.legacy.poll_state, {"items": items})
    [location] = machine.report().locations
    assert (location.kind, location.read) == (LEGACY_POLL_STATE, True)
    assert "2 of 2 items" in location.detail
    machine.store.write_section(ITEM, "poll", {"seenComments": ["IC_1"]})
    machine.store.write_section(OTHER, "poll", None)
    [location] = machine.report().locations
    assert (location.kind, location.read) == (LEGACY_POLL_STATE, False)


def test_an_old_session_record_in_the_legacy_tree_is_no_longer_read(machine: Machine) -> None:
    write(machine.legacy.sessions_dir / f"{ITEM.slug}.json", {"workItem": {"ref": ITEM.ref}})
    write(machine.legacy.sessions_dir / "notes.txt", "a stranger's file")
    assert machine.kinds() == [(LEGACY_SESSION_RECORD, False)]


def test_a_legacy_tree_that_is_the_configured_registry_directory_is_not_retired(
    tmp_path: Path,
) -> None:
    root = tmp_path / "state"
    layout = StateLayout(root).with_overrides(local_dir=root / "sessions")
    write(root / "sessions" / f"{ITEM.slug}.json", {"workItem": ITEM.ref})
    report = find_retired(
        layout=layout,
        registry=SessionRegistry(layout.local_dir),
        store=WorkItemStore(layout.portable_dir),
    )
    assert report.clean


def test_an_empty_legacy_tree_is_listed_once(machine: Machine) -> None:
    machine.legacy.control_dir.mkdir(parents=True)
    assert machine.kinds() == [(LEGACY_TREE, False)]


def test_a_pull_requests_own_poll_ledger_is_no_longer_read_once_an_owner_holds_it(
    machine: Machine,
) -> None:
    machine.store.write_section(PR, "poll", {"seenComments": ["PRC_1"]})
    assert machine.report().clean  # no owner known: it is a work item of its own
    machine.store.write_pull_request_ledger(ITEM, PR, {"seenComments": []})
    [location] = machine.report().locations
    assert (location.kind, location.read, location.ref) == (PULL_REQUEST_RECORD, False, PR.ref)
    assert location.path == str(machine.store.path_for(PR))
    assert "belongs to github:octo/app#15" in location.detail


def test_a_pull_request_linked_only_in_the_registry_is_found_too(
    machine: Machine, tmp_path: Path
) -> None:
    machine.registry.register(Session(ITEM, "claude", "s1", cwd=str(tmp_path)))
    machine.registry.link_pull_request(ITEM, PR)
    machine.store.write_section(PR, "poll", {"seenComments": []})
    assert machine.kinds() == [(PULL_REQUEST_RECORD, False)]


def test_a_pull_requests_record_without_a_poll_ledger_is_not_retired(machine: Machine) -> None:
    machine.store.write_pull_request_ledger(ITEM, PR, {"seenComments": []})
    machine.control.record(PR, "start", source="cli")
    assert machine.report().clean


def graph_record(machine: Machine, ref: WorkItemRef, graph: dict[str, Any]) -> None:
    write(machine.store.path_for(ref), {"ref": ref.ref, "graph": graph})


def test_a_graph_section_is_read_for_the_choices_no_repository_file_sets(
    machine: Machine,
) -> None:
    graph_record(machine, ITEM, {"sessionPerPr": "always", "model": "opus"})
    [location] = machine.report().locations
    assert (location.kind, location.read) == (GRAPH_SECTION, True)
    assert location.detail == "still supplies sessionPerPr, model"


def test_a_graph_section_shadowed_by_the_repository_file_is_no_longer_read(
    machine: Machine, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    graph_record(machine, ITEM, {"frozenGraph": {"sessionPerPr": "always", "model": "opus"}})
    machine.registry.register(Session(ITEM, "claude", "s1", cwd=str(checkout)))
    state = WorkItemState(work_item=ITEM.ref, session_per_pr="never", model="sonnet")
    WorkItemStateFile(checkout, ITEM).save(state)
    assert machine.kinds() == [(GRAPH_SECTION, False)]


def test_a_graph_state_file_is_read_until_the_current_file_is_written(
    machine: Machine, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"
    state_file = WorkItemStateFile(checkout, ITEM)
    write(state_file.legacy_path, {"workItem": ITEM.ref, "session": {"id": "0f1c"}})
    [location] = machine.report(checkout).locations
    assert (location.kind, location.read, location.ref) == (GRAPH_STATE_FILE, True, ITEM.ref)
    assert "session block is ignored" in location.detail
    state_file.save(state_file.load())
    assert machine.kinds(checkout) == [(GRAPH_STATE_FILE, False)]
    assert machine.report(checkout).checkouts == (str(checkout),)


def test_an_unreadable_graph_state_file_is_still_listed(machine: Machine, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    legacy = WorkItemStateFile(checkout, ITEM).legacy_path
    legacy.parent.mkdir(parents=True)
    legacy.write_text("{oops", encoding="utf-8")
    [location] = machine.report(checkout).locations
    assert location.kind == GRAPH_STATE_FILE and "not valid JSON" in location.detail


def test_the_report_deletes_and_rewrites_nothing(machine: Machine, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    write(WorkItemStateFile(checkout, ITEM).legacy_path, {"workItem": ITEM.ref, "session": {}})
    write(machine.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "start"})
    write(machine.legacy.poll_state, {"items": {ITEM.ref: {"seenComments": []}}})
    graph_record(machine, OTHER, {"sessionPerPr": "always"})
    machine.store.write_pull_request_ledger(OTHER, PR, {"seenComments": []})
    machine.store.write_section(PR, "poll", {"seenComments": []})
    before = snapshot(tmp_path)
    report = machine.report(checkout)
    assert len(report.locations) == 5
    assert snapshot(tmp_path) == before


def test_every_location_reports_its_replacement_and_every_kind_has_one() -> None:
    for kind, (what, replaced_by) in RETIRED_KINDS.items():
        assert what and replaced_by
        location = RetiredLocation(kind, "/x", False)
        assert location.to_dict()["replacedBy"] == replaced_by
        assert location.to_dict()["workItem"] is None


def test_checkouts_under_the_workspace_root_are_found_without_entering_them(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    worktree = root / ".worktrees" / "github.com" / "octo" / "app" / ITEM.slug
    clone = root / ".work-items" / ITEM.slug / "github.com" / "octo" / "app"
    shared = root / "github.com" / "octo" / "app"
    for checkout in (worktree, clone, shared):
        (checkout / ".git").mkdir(parents=True)
        (checkout / "sub" / "deeper" / ".git").mkdir(parents=True)
    (root / ".locks" / "x" / ".git").mkdir(parents=True)
    (root / "link").symlink_to(shared)
    found = workspace_checkouts(root)
    assert sorted(found) == sorted([worktree, clone, shared])


def test_the_workspace_walk_stops_at_its_limit_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for index in range(20):
        (root / f"d{index:02d}" / ".git").mkdir(parents=True)
    warnings: list[str] = []
    found = workspace_checkouts(root, limit=5, on_warning=warnings.append)
    assert len(found) == 4
    assert len(warnings) == 1 and "after 5" in warnings[0]


def test_the_default_checkouts_are_every_session_cwd_and_every_workspace_checkout(
    machine: Machine, tmp_path: Path
) -> None:
    own, pr_cwd = tmp_path / "own", tmp_path / "pr"
    own.mkdir()
    pr_cwd.mkdir()
    machine.registry.register(Session(ITEM, "claude", "s1", cwd=str(own)))
    machine.registry.save_endpoint(ITEM, Session(PR, "claude", "s2", cwd=str(pr_cwd)))
    (tmp_path / "ws" / "github.com" / "octo" / "app" / ".git").mkdir(parents=True)
    found = default_checkouts(machine.registry, tmp_path / "ws")
    assert found == [own, pr_cwd, tmp_path / "ws" / "github.com" / "octo" / "app"]
