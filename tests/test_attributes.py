"""The attribute rule as data: ATTRIBUTES matches what every writer really produces.

Each test drives the real writers of one per-work-item file, collects the top-level
keys of every file they wrote (after every single write), and compares them with
``state.ATTRIBUTES`` in both directions (state.md §7).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from the_loop.attributes import (
    ALLOWED_KINDS,
    ATTRIBUTE_FILES,
    ATTRIBUTE_KINDS,
    ATTRIBUTES,
    MACHINE_FILE,
    MACHINE_HANDLE,
    OPERATOR_FILE,
    REPOSITORY_FILE,
)
from the_loop.layout import LegacyLayout
from the_loop.portable.channels import ChannelState
from the_loop.portable.control import ControlStore
from the_loop.portable.poll import PollState
from the_loop.portable.store import SECTIONS, WorkItemStore
from the_loop.ref import WorkItemRef, is_record_file_name
from the_loop.repofile.file import STATE_FILE, STATE_KEYS, WorkItemState, WorkItemStateFile
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/app#15")
SAME_REPO_PR = WorkItemRef.parse("github:octo/app#16")
OTHER_REPO_PR = WorkItemRef.parse("github:octo/lib#7")


def any_cursor(current: str) -> bool:
    """Accept every move of a channel cursor (the registry writes what it is given)."""
    del current
    return True


def declared(file: str) -> set[str]:
    return {attribute.key for attribute in ATTRIBUTES if attribute.file == file}


class KeyCollector:
    """Top-level keys of every matching file in a directory, sampled after each write."""

    def __init__(self, directory: Path, matches: Callable[[str], bool] = is_record_file_name):
        self.directory = directory
        self.matches = matches
        self.keys: set[str] = set()

    def sample(self) -> None:
        for path in sorted(self.directory.glob("*.json")):
            if self.matches(path.name):
                self.keys |= set(json.loads(path.read_text(encoding="utf-8")))

    def after(self, *writes: Callable[[], object]) -> set[str]:
        for write in writes:
            write()
            self.sample()
        return self.keys


def test_every_key_the_repository_file_writer_produces_is_declared_and_nothing_more(
    tmp_path: Path,
) -> None:
    state_file = WorkItemStateFile(tmp_path / "checkout", ITEM)
    state = WorkItemState(
        work_item=ITEM.ref,
        current_node="implement",
        nodes={"implement": {"status": "running"}},
        decisions={"design": "approved"},
        forced=["design"],
        parked=["docs"],
        completions={"requirements": {"at": "2026-11-29T10:00:00Z"}},
        skips=["benchmarks"],
        opt_ins=["security-review"],
        surface="cli",
        session_per_pr="cross-repository",
        model="opus",
        effort="high",
    )
    collector = KeyCollector(state_file.directory, lambda name: name == STATE_FILE)
    keys = collector.after(
        lambda: state_file.save(state),
        lambda: state_file.link_pr(SAME_REPO_PR),
        lambda: state_file.link_pr(OTHER_REPO_PR, linked_by="event"),
        lambda: state_file.set_pr_state(SAME_REPO_PR, "merged"),
        lambda: state_file.update(lambda current: None),
    )
    assert keys == declared(REPOSITORY_FILE)
    assert set(STATE_KEYS) == declared(REPOSITORY_FILE)


def test_every_key_the_operator_file_writers_produce_is_declared_and_nothing_more(
    tmp_path: Path,
) -> None:
    root = tmp_path / "state"
    legacy = LegacyLayout(root)
    legacy.control_dir.mkdir(parents=True)
    sealed_item = WorkItemRef.parse("github:octo/old#3")
    (legacy.control_dir / f"{sealed_item.slug}.json").write_text(
        json.dumps({"ref": sealed_item.ref, "command": "start"}), encoding="utf-8"
    )
    store = WorkItemStore(root / "portable", legacy)
    registry = SessionRegistry(root / "local")
    control = ControlStore(store.root, legacy, store=store)
    polls = PollState(store, registry=registry)
    channels = ChannelState(store, registry)
    collector = KeyCollector(store.root)
    section_writes = [(lambda name=name: store.write_section(ITEM, name, {})) for name in SECTIONS]
    keys = collector.after(
        *section_writes,
        lambda: control.record(ITEM, "start", source="cli", actor="octocat"),
        lambda: polls.baseline_comments(ITEM, ["IC_1"]),
        lambda: polls.own(OTHER_REPO_PR, ITEM),
        lambda: polls.note_comment_attempt(OTHER_REPO_PR, "PRC_9"),
        lambda: channels.bind(ITEM, "slack", conversation="C0AB", thread="1726.001"),
        lambda: control.record(sealed_item, "stop", source="cli"),
        lambda: control.clear(sealed_item),
    )
    assert json.loads(store.path_for(sealed_item).read_text(encoding="utf-8"))["sealed"] is True
    assert keys == declared(OPERATOR_FILE)


def test_every_key_the_machine_file_writers_produce_is_declared_and_nothing_more(
    tmp_path: Path,
) -> None:
    registry = SessionRegistry(tmp_path / "local")
    store = WorkItemStore(tmp_path / "portable")
    channels = ChannelState(store, registry)
    session = Session(ITEM, "claude", "0f1c", cwd=str(tmp_path), model="opus", effort="high")
    collector = KeyCollector(registry.root)
    keys = collector.after(
        lambda: registry.register(session),
        lambda: registry.link_pull_request(ITEM, OTHER_REPO_PR),
        lambda: registry.touch(ITEM, "d-1", endpoint_ref=OTHER_REPO_PR),
        lambda: registry.advance_channel_cursor(
            ITEM, "slack", "1726.001", "1726.045", accept=any_cursor
        ),
        lambda: channels.advance(ITEM, "slack", "1726.001", "1726.050"),
        lambda: registry.pause(ITEM),
        lambda: registry.close(ITEM),
    )
    assert keys == declared(MACHINE_FILE)


def test_every_kind_sits_in_a_file_the_rule_allows_it_in() -> None:
    misplaced = [
        (attribute.file, attribute.key, attribute.kind)
        for attribute in ATTRIBUTES
        if attribute.kind not in ALLOWED_KINDS[attribute.file]
    ]
    assert misplaced == []


def test_no_machine_handle_is_declared_in_a_tracked_file() -> None:
    tracked = {item.name for item in ATTRIBUTE_FILES if item.tracked}
    assert tracked == {REPOSITORY_FILE, OPERATOR_FILE}
    assert [
        attribute.key
        for attribute in ATTRIBUTES
        if attribute.kind == MACHINE_HANDLE and attribute.file in tracked
    ] == []
    assert all(MACHINE_HANDLE not in ALLOWED_KINDS[name] for name in tracked)


def test_the_declarations_are_consistent_with_each_other() -> None:
    files = [item.name for item in ATTRIBUTE_FILES]
    assert sorted(files) == sorted(ALLOWED_KINDS) == sorted({a.file for a in ATTRIBUTES})
    assert {kind for kinds in ALLOWED_KINDS.values() for kind in kinds} == set(ATTRIBUTE_KINDS)
    pairs = [(attribute.file, attribute.key) for attribute in ATTRIBUTES]
    assert len(pairs) == len(set(pairs))
    assert all(attribute.holds for attribute in ATTRIBUTES)


@pytest.mark.parametrize("kind", sorted(ATTRIBUTE_KINDS))
def test_every_kind_is_used_by_at_least_one_key(kind: str) -> None:
    assert any(attribute.kind == kind for attribute in ATTRIBUTES)
