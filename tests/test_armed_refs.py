"""`ArmedRefs` finds the armed items of a real store on disk, re-reading only what changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from the_loop.portable.armed import ArmedRefs
from the_loop.portable.control import ControlStore
from the_loop.portable.store import CONTROL, POLL, WorkItemStore


class Root:
    """A store, its control records and an armed-refs cache under ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.store = WorkItemStore(tmp_path / "portable", locks_dir=tmp_path / "locks" / "portable")
        self.control = ControlStore(self.store.root, store=self.store)
        self.cache = tmp_path / "local" / "poll-armed.json"
        self.warnings: list[str] = []
        self.reads: list[str] = []

    def armed(self) -> list[str]:
        """One cycle's answer, from a fresh instance (as each poll cycle makes one)."""
        return [ref.ref for ref in self.finder()()]

    def finder(self) -> ArmedRefs:
        lock = self.tmp_path / "armed.lock"
        return ArmedRefs(self.store, self.cache, lock, self.warnings.append)

    def count_reads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Record the ref of every section read from here on."""
        read = self.store.section

        def counted(ref: Any, name: str) -> Any:
            self.reads.append(str(getattr(ref, "ref", ref)))
            return read(ref, name)

        monkeypatch.setattr(self.store, "section", counted)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path)


def test_the_commands_that_arm_an_item_are_start_resume_contribute_and_do(root: Root) -> None:
    for number, command in enumerate(
        ("start", "resume", "contribute", "do", "stop", "pause", "cleanup", "execute"), 1
    ):
        root.control.record(f"github:octo/app#{number}", command)
    root.store.write_section("github:octo/app#9", POLL, {"seenComments": []})
    assert root.armed() == [f"github:octo/app#{n}" for n in (1, 2, 3, 4)]
    assert root.warnings == []


def test_an_unchanged_store_is_answered_without_reading_a_record_or_writing_the_cache(
    root: Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(1, 30):
        root.control.record(f"github:octo/app#{number}", "start" if number % 2 else "stop")
    first = root.armed()
    written = root.cache.stat().st_mtime_ns
    root.count_reads(monkeypatch)
    assert root.armed() == first
    assert root.reads == []
    assert root.cache.stat().st_mtime_ns == written


def test_a_changed_record_is_the_only_one_read_again(
    root: Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(1, 30):
        root.control.record(f"github:octo/app#{number}", "start")
    root.armed()
    root.control.record("github:octo/app#7", "stop")  # same sections: the index is unchanged
    root.store.write_section("github:octo/app#8", POLL, {"seenComments": ["1"]})
    root.count_reads(monkeypatch)
    found = root.armed()
    assert "github:octo/app#7" not in found and "github:octo/app#8" in found
    assert sorted(root.reads) == ["github:octo/app#7", "github:octo/app#8"]


def test_a_record_deleted_or_stopped_is_no_longer_armed(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    root.control.record("github:octo/app#2", "start")
    assert root.armed() == ["github:octo/app#1", "github:octo/app#2"]
    root.store.drop("github:octo/app#1")
    root.control.record("github:octo/app#2", "pause")
    assert root.armed() == []


def test_a_record_put_in_by_another_tool_is_found_after_one_warning(
    root: Root, tmp_path: Path
) -> None:
    root.control.record("github:octo/app#1", "start")
    assert root.armed() == ["github:octo/app#1"]
    other = WorkItemStore(tmp_path / "elsewhere", locks_dir=tmp_path / "elsewhere-locks")
    ControlStore(other.root, store=other).record("github:octo/app#2", "start")
    shutil.copy(other.path_for("github:octo/app#2"), root.store.root)
    assert root.armed() == ["github:octo/app#1", "github:octo/app#2"]
    assert len(root.warnings) == 1 and "did not match the records" in root.warnings[0]
    assert root.armed() == ["github:octo/app#1", "github:octo/app#2"]
    assert len(root.warnings) == 1, "healed: the next cycle trusts the index again"


def test_a_deleted_index_does_not_hide_armed_items(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    root.armed()
    root.store.index_path.unlink()
    assert root.armed() == ["github:octo/app#1"]
    assert len(root.warnings) == 1


def test_a_missing_stamp_alone_rebuilds_quietly(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    (root.tmp_path / "locks" / "portable" / "index.stamp").unlink()
    assert root.armed() == ["github:octo/app#1"]
    assert root.warnings == [], "the index was right: nothing to warn about"


def test_an_index_that_cannot_be_rebuilt_falls_back_to_reading_every_record(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    root.control.record("github:octo/app#2", "stop")
    root.store.index_path.unlink()
    root.store.index_path.mkdir()  # a directory where the index goes
    (root.tmp_path / "locks" / "portable" / "index.stamp").unlink()
    assert root.armed() == ["github:octo/app#1"]
    assert len(root.warnings) == 1 and "reading every record" in root.warnings[0]


def test_a_hand_edited_index_that_lies_about_control_is_healed_first(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    root.armed()
    index = root.store.index_path
    index.write_text(index.read_text(encoding="utf-8").replace('"control"', '"poll"'))
    assert root.armed() == ["github:octo/app#1"]
    assert len(root.warnings) == 1


def test_a_cache_that_is_not_ours_is_ignored_and_replaced(root: Root) -> None:
    root.control.record("github:octo/app#1", "start")
    root.armed()
    root.cache.write_text('{"version": 1, "index": null, "candidates": [["x", "../../etc", 1, 2]]}')
    assert root.armed() == ["github:octo/app#1"]
    assert "../../etc" not in root.cache.read_text(encoding="utf-8")


def test_an_empty_state_root_has_no_armed_item_and_says_nothing(root: Root) -> None:
    assert root.armed() == []
    assert root.warnings == []
    assert not (root.tmp_path / "portable").exists() or not root.store.index_path.exists()


def test_one_instance_answers_once_per_cycle(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    root.control.record("github:octo/app#1", "start")
    root.store.write_section("github:octo/app#1", CONTROL, {"command": "do"})
    finder = root.finder()
    assert [r.ref for r in finder()] == ["github:octo/app#1"]
    root.count_reads(monkeypatch)
    root.control.record("github:octo/app#1", "stop")
    assert [r.ref for r in finder()] == ["github:octo/app#1"], "one answer per cycle"
    assert root.reads == []
