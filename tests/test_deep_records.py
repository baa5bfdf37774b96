"""Deeply nested records, and one bad item in ``reset --all`` (issue 11, point 5).

A record nested deeper than ``MAX_NESTING`` is unreadable — reported, and for a
reset found and removed — and nothing in the stores recurses over what a file
holds. Whatever goes wrong for one item of a reset becomes that item's error (a
bug named by its exception type) while the other items are still reset.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import the_loop.reset
from tests.test_reset_integration import Machine
from the_loop.eventlog.log import read_events
from the_loop.portable.store import POLL, WorkItemStore
from the_loop.ref import WorkItemRef

FIRST = WorkItemRef.parse("github:octo/repo#1")
DEEP = WorkItemRef.parse("github:octo/repo#2")
LAST = WorkItemRef.parse("github:octo/repo#3")
#: The documented limit (docs/cli/state.md); ``the_loop.records.tree.MAX_NESTING``.
MAX_NESTING = 64


def nested(levels: int) -> str:
    """JSON text of ``levels`` objects, each holding the next under ``"a"``."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def place_deep_record(machine: Machine, ref: WorkItemRef, section_levels: int) -> Path:
    """A portable record whose ``poll`` section nests ``section_levels`` objects deep."""
    path = machine.store.path_for(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"ref": "{ref.ref}", "poll": {nested(section_levels)}}}')
    return path


def resets(machine: Machine) -> dict[str, dict[str, Any]]:
    events = read_events(machine.layout.event_log).events
    return {e["work_item"]: e for e in events if e["event"] == "session.reset"}


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def test_reset_all_removes_a_600_deep_record_resets_the_others_and_prints_the_summary(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    for ref in (FIRST, DEEP, LAST):
        machine.session(ref)
    machine.armed(FIRST)
    machine.armed(LAST)
    deep = place_deep_record(machine, DEEP, 600)

    assert machine.run("--all", "--dry-run") == 0
    dry = capsys.readouterr().out.splitlines()
    assert f"{DEEP.ref}: would remove session, record" in dry
    assert dry[-1] == "would reset 3 work items (dry run — nothing was changed)"

    assert machine.run("--all") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{FIRST.ref}: reset — removed session, control, poll",
        f"{DEEP.ref}: reset — removed session, record",
        f"{LAST.ref}: reset — removed session, control, poll",
        "reset 3 work items",
    ]
    assert f"nests deeper than {MAX_NESTING} levels" in captured.err
    assert "Traceback" not in captured.err
    assert not deep.exists()
    assert sorted(resets(machine)) == [FIRST.ref, DEEP.ref, LAST.ref]
    assert resets(machine)[DEEP.ref]["removed"] == ["session", "record"]


def test_a_record_nested_to_the_limit_is_read_and_one_level_deeper_is_unreadable(
    machine: Machine,
) -> None:
    # The record is level 1, so its poll section may nest MAX_NESTING - 1 deep.
    place_deep_record(machine, FIRST, MAX_NESTING - 1)
    place_deep_record(machine, LAST, MAX_NESTING)
    warnings: list[str] = []
    store = WorkItemStore(machine.layout.portable_dir, on_warning=warnings.append)
    assert store.record_status(FIRST) == "ok"
    assert store.section(FIRST, POLL) is not None
    assert store.record_status(LAST) == "unreadable"
    assert store.section(LAST, POLL) is None
    assert warnings == [
        f"{LAST.ref}: ignoring unreadable record {store.path_for(LAST)}: "
        f"it nests deeper than {MAX_NESTING} levels"
    ]
    assert store.unreadable_refs() == {LAST.ref}


def test_a_section_nested_past_the_limit_is_refused_before_anything_is_written(
    machine: Machine,
) -> None:
    machine.armed(FIRST)
    before = machine.snapshot()
    too_deep = json.loads(nested(MAX_NESTING))
    with pytest.raises(ValueError, match="nests deeper than a record may"):
        machine.store.write_section(FIRST, POLL, too_deep)
    assert machine.snapshot() == before


def test_a_session_record_nested_past_the_limit_is_unreadable_and_reset_removes_it(
    machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.session(DEEP)
    path = machine.layout.local_dir / f"{DEEP.slug}.json"
    record = json.loads(path.read_text())
    record["channels"] = {"slack": json.loads(nested(200))}
    path.write_text(json.dumps(record))
    assert machine.registry.unreadable_refs() == {DEEP.ref}
    assert machine.run("--all") == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{DEEP.ref}: reset — removed session"
    assert not path.exists()


def test_an_unexpected_exception_for_one_item_is_its_error_and_the_others_are_still_reset(
    machine: Machine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in one item's write is reported as that item's error, named by its type,
    with its session.reset event; the items after it are reset; exit 1."""
    for ref in (FIRST, DEEP, LAST):
        machine.armed(ref)
    real = WorkItemStore.write_sections

    def broken(self: WorkItemStore, ref: Any, changes: Any, **options: Any) -> Any:
        if WorkItemRef.parse(str(ref)) == DEEP:
            raise RuntimeError("a bug in the store")
        return real(self, ref, changes, **options)

    monkeypatch.setattr(WorkItemStore, "write_sections", broken)
    assert machine.run("--all") == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "reset 2 work items, 1 failed"
    assert (
        f"{DEEP.ref}: error: could not clear the work-item record: unexpected RuntimeError "
        "(a bug; please report it): a bug in the store"
    ) in captured.err.splitlines()
    assert "Traceback" not in captured.err
    assert not machine.store.path_for(LAST).exists()
    assert "RuntimeError" in resets(machine)[DEEP.ref]["error"]


def test_an_exception_escaping_one_items_reset_is_its_error_and_the_others_go_on(
    machine: Machine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for ref in (FIRST, DEEP, LAST):
        machine.armed(ref)
    real = the_loop.reset.reset_work_item

    def broken(item: WorkItemRef, **options: Any) -> Any:
        if item == DEEP:
            raise KeyError("sessions")
        return real(item, **options)

    monkeypatch.setattr(the_loop.reset, "reset_work_item", broken)
    assert machine.run("--all") == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "reset 2 work items, 1 failed"
    assert f"{DEEP.ref}: error: not reset: unexpected KeyError" in captured.err
    assert machine.store.path_for(DEEP).exists(), "nothing is claimed for the failed item"
    assert not machine.store.path_for(LAST).exists()
