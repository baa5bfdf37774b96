"""The portable work-item store: sections, tombstones, the seal rule, the index, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from the_loop.fsio import DirectorySyncs
from the_loop.layout import LegacyLayout, StateLayout, legacy_layout
from the_loop.portable.listing import RecordListing
from the_loop.portable.store import (
    CHANNELS,
    CONTROL,
    GRAPH,
    INDEX_FILE,
    POLL,
    PULL_REQUESTS,
    SEALED,
    SECTIONS,
    ForeignRecordError,
    WorkItemStore,
)
from the_loop.ref import WorkItemRef

APP = "github:octo/app#15"
LIB = "github:octo/lib#7"
START = {
    "ref": APP,
    "command": "start",
    "source": "cli",
    "actor": "me",
    "requestedAt": "",
    "note": "",
}
LEDGER = {"seenComments": ["IC_1"], "commentAttempts": {}}


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout(tmp_path / "state")


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def store(layout: StateLayout, warnings: list[str]) -> WorkItemStore:
    return WorkItemStore(
        layout.portable_dir,
        legacy_layout(layout),
        locks_dir=layout.portable_locks_dir,
        on_warning=warnings.append,
    )


def on_disk(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write_legacy_control(legacy: LegacyLayout, ref: str, command: str = "start") -> Path:
    path = legacy.control_dir / f"{WorkItemRef.parse(ref).slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ref": ref, "command": command, "source": "comment"}))
    return path


def write_legacy_poll(legacy: LegacyLayout, items: dict[str, Any]) -> Path:
    legacy.poll_state.parent.mkdir(parents=True, exist_ok=True)
    legacy.poll_state.write_text(json.dumps({"items": items}))
    return legacy.poll_state


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    """Content, inode and mtime of every regular file under ``directory``."""
    found: dict[str, tuple[bytes, int, int]] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            info = path.stat()
            found[str(path.relative_to(directory))] = (
                path.read_bytes(),
                info.st_ino,
                info.st_mtime_ns,
            )
    return found


class CountingStore(WorkItemStore):
    """Counts index rebuilds through the public hook."""

    rebuilds = 0

    def rebuild_index(self, *, syncs: DirectorySyncs | None = None) -> None:
        self.rebuilds += 1
        super().rebuild_index(syncs=syncs)


# -- sections ----------------------------------------------------------------


def test_sections_are_written_independently_and_kept_in_file_order(store: WorkItemStore) -> None:
    store.write_section(APP, CHANNELS, {"slack": {"channel": "C0AB"}})
    store.write_section(APP, CONTROL, START)
    store.write_section(APP, POLL, LEDGER)

    record = on_disk(store.path_for(APP))
    assert list(record) == ["ref", "url", CONTROL, POLL, CHANNELS]
    assert record["url"] == "https://github.com/octo/app/issues/15"
    assert record[CONTROL] == START
    assert record[CHANNELS] == {"slack": {"channel": "C0AB"}}
    assert store.path_for(APP).name == "github-octo-app-15.json"


def test_replacing_one_section_leaves_the_others_exactly_as_on_disk(store: WorkItemStore) -> None:
    store.write_sections(APP, {CONTROL: START, POLL: LEDGER})
    store.write_section(APP, POLL, {"seenComments": ["IC_2"], "commentAttempts": {}})
    assert store.section(APP, CONTROL) == START
    assert store.section(APP, POLL) == {"seenComments": ["IC_2"], "commentAttempts": {}}


def test_a_ref_without_a_url_is_stored_without_one(store: WorkItemStore) -> None:
    # No provider but github parses; a ref built directly may still lack a URL.
    other = WorkItemRef("gitlab", "octo", "app", 3)
    store.write_section(other, POLL, LEDGER)
    assert list(on_disk(store.path_for(other))) == ["ref", POLL]


def test_writing_the_same_data_again_changes_nothing(store: WorkItemStore) -> None:
    store.write_section(APP, CONTROL, START)
    before = snapshot(store.root)
    result = store.write_section(APP, CONTROL, dict(START))
    assert result.action == "unchanged"
    assert snapshot(store.root) == before


def test_unknown_sections_and_non_objects_are_refused(store: WorkItemStore) -> None:
    with pytest.raises(ValueError, match="unknown section"):
        store.write_section(APP, "nodes", {})
    with pytest.raises(ValueError):
        store.write_section(APP, CONTROL, "start")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.write_section(APP, PULL_REQUESTS, {LIB: "seen"})
    with pytest.raises(ValueError, match="never written"):
        store.write_section(APP, GRAPH, {"model": "opus"})
    assert not store.root.exists()


def test_the_retired_graph_section_is_read_kept_and_only_cleared_by_drop(
    store: WorkItemStore,
) -> None:
    store.root.mkdir(parents=True)
    path = store.root / "github-octo-app-15.json"
    path.write_text(json.dumps({"ref": APP, "graph": {"model": "opus"}, "future": 1}))
    store.write_section(APP, CONTROL, START)
    assert list(on_disk(path)) == ["ref", "url", CONTROL, GRAPH, "future"]
    assert store.section(APP, GRAPH) == {"model": "opus"}

    store.write_section(APP, CONTROL, None)
    assert on_disk(path)[GRAPH] == {"model": "opus"}, "a retired frozen choice is not lost"
    assert store.drop(APP) is True
    assert on_disk(path) == {"ref": APP, "url": store.read(APP)["url"], "future": 1}
    assert store.drop(APP) is False


# -- tombstones, seal vs delete --------------------------------------------------


def test_clearing_the_last_section_deletes_the_file_when_no_legacy_tree_holds_the_item(
    store: WorkItemStore, layout: StateLayout
) -> None:
    write_legacy_control(legacy_layout(layout), "github:octo/other#1")
    store.write_sections(APP, {CONTROL: START, POLL: LEDGER})
    store.write_section(APP, CONTROL, None)
    assert on_disk(store.path_for(APP))[CONTROL] is None, "a tombstone while poll holds"

    result = store.write_section(APP, POLL, None)
    assert result.action == "deleted"
    assert result.removed == (POLL,)
    assert not store.path_for(APP).exists()
    assert not (store.root / INDEX_FILE).exists()


def test_a_tombstone_stops_the_legacy_fallback(store: WorkItemStore, layout: StateLayout) -> None:
    legacy = legacy_layout(layout)
    write_legacy_control(legacy, APP)
    store.write_section(APP, CHANNELS, {"slack": {"thread": "1.0"}})
    assert store.section(APP, CONTROL) == json.loads(
        (legacy.control_dir / "github-octo-app-15.json").read_text()
    )
    result = store.write_section(APP, CONTROL, None)
    assert result.removed == (CONTROL,), "the legacy record counted as held"
    assert store.section(APP, CONTROL) is None
    assert on_disk(store.path_for(APP))[CONTROL] is None


def test_clearing_an_item_the_legacy_tree_holds_seals_it_instead_of_deleting(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    write_legacy_control(legacy, APP)
    write_legacy_poll(legacy, {APP: {"seenComments": ["OLD"]}})
    before = snapshot(legacy.sessions_dir)

    result = store.write_sections(APP, dict.fromkeys(SECTIONS))
    assert result.action == "sealed"
    assert result.removed == (CONTROL, POLL)
    assert on_disk(store.path_for(APP)) == {
        "ref": APP,
        "url": "https://github.com/octo/app/issues/15",
        SEALED: True,
    }
    assert store.section(APP, CONTROL) is None
    assert store.section(APP, POLL) is None
    assert snapshot(legacy.sessions_dir) == before, "the legacy tree is never written"
    assert store.write_sections(APP, dict.fromkeys(SECTIONS)).action == "unchanged"


def test_a_write_to_a_sealed_record_keeps_the_legacy_tree_out(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    write_legacy_control(legacy, APP)
    write_legacy_poll(legacy, {APP: {"seenComments": ["OLD"]}})
    assert store.write_sections(APP, {CONTROL: None, POLL: None}).action == "sealed"

    store.write_section(APP, CHANNELS, {"slack": {"thread": "1.0"}})
    record = on_disk(store.path_for(APP))
    assert SEALED not in record
    assert record[CONTROL] is None and record[POLL] is None
    assert store.section(APP, POLL) is None

    assert store.write_section(APP, CHANNELS, None).action == "sealed"


def test_clearing_one_section_keeps_a_legacy_section_that_is_still_live(
    store: WorkItemStore, layout: StateLayout
) -> None:
    write_legacy_poll(legacy_layout(layout), {APP: {"seenComments": ["OLD"]}})
    store.write_section(APP, CONTROL, START)
    result = store.write_section(APP, CONTROL, None)
    assert result.action == "written"
    assert store.section(APP, POLL) == {"seenComments": ["OLD"]}
    assert store.legacy_holds(APP)


def test_the_seal_rule_applies_without_a_legacy_layout(tmp_path: Path) -> None:
    store = WorkItemStore(tmp_path / "portable")
    store.write_section(APP, CONTROL, START)
    assert store.write_section(APP, CONTROL, None).action == "deleted"
    assert not store.legacy_holds(APP)


# -- the legacy tree (v1 roots) ----------------------------------------------


def test_a_v1_root_answers_from_the_legacy_tree_and_the_next_write_goes_to_portable_only(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    write_legacy_control(legacy, APP, "pause")
    write_legacy_poll(legacy, {"github:github.com/octo/app#15": {"seenComments": ["A"]}})
    before = snapshot(legacy.sessions_dir)

    assert store.section(APP, CONTROL)["command"] == "pause"  # type: ignore[index]
    assert store.section(APP, POLL) == {"seenComments": ["A"]}, "any spelling of the ref"
    assert store.record_status(APP) == "absent"
    assert store.refs() == {}

    store.write_section(APP, POLL, {"seenComments": ["A", "B"]})
    assert snapshot(legacy.sessions_dir) == before
    assert list(on_disk(store.path_for(APP))) == ["ref", "url", POLL]
    assert store.section(APP, CONTROL)["command"] == "pause"  # type: ignore[index]


def test_a_legacy_control_file_of_a_colliding_ref_is_not_this_items(
    store: WorkItemStore, layout: StateLayout
) -> None:
    legacy = legacy_layout(layout)
    path = write_legacy_control(legacy, "github:octo-a/b#1")
    path.rename(legacy.control_dir / "github-octo-a-b-1.json")
    assert store.section("github:octo/a-b#1", CONTROL) is None
    assert store.section("github:octo-a/b#1", CONTROL) is not None
    assert not store.legacy_holds("github:octo/a-b#1")


# -- the index -----------------------------------------------------------------


def test_the_index_lists_records_sorted_by_ref_with_their_sections(
    store: WorkItemStore, layout: StateLayout
) -> None:
    write_legacy_control(legacy_layout(layout), "github:octo/zed#1")
    store.write_section("github:octo/zed#1", CONTROL, None)
    store.write_sections(APP, {POLL: LEDGER, CONTROL: START})
    store.write_pull_request_ledger(APP, LIB, LEDGER)
    store.write_section("github:octo/app#2", CHANNELS, {"slack": {}})

    index = on_disk(store.root / INDEX_FILE)
    assert index == {
        "workItems": [
            {
                "ref": APP,
                "url": "https://github.com/octo/app/issues/15",
                "file": "github-octo-app-15.json",
                "sections": [CONTROL, POLL, PULL_REQUESTS],
                "pullRequests": [LIB],
            },
            {
                "ref": "github:octo/app#2",
                "url": "https://github.com/octo/app/issues/2",
                "file": "github-octo-app-2.json",
                "sections": [CHANNELS],
            },
            {
                "ref": "github:octo/zed#1",
                "url": "https://github.com/octo/zed/issues/1",
                "file": "github-octo-zed-1.json",
                "sections": [],
                SEALED: True,
            },
        ]
    }


def test_refs_holding_names_the_records_whose_sections_hold_an_object(
    store: WorkItemStore, layout: StateLayout
) -> None:
    write_legacy_control(legacy_layout(layout), "github:octo/zed#1")
    store.write_section("github:octo/zed#1", CONTROL, None)  # sealed: holds nothing
    store.write_sections(APP, {POLL: LEDGER, CONTROL: START})
    store.write_section("github:octo/app#2", CHANNELS, {"slack": {}})
    store.write_section("github:octo/app#3", CHANNELS, {})  # an empty map holds nothing
    (store.root / "github-octo-app-4.json").write_text("{broken", encoding="utf-8")

    assert store.refs_holding((CONTROL,)) == {APP}
    assert store.refs_holding((CHANNELS, POLL)) == {APP, "github:octo/app#2"}
    assert store.refs_holding(()) == set()
    every = {summary.ref for summary in store.summaries() if summary.sections}
    assert store.refs_holding(SECTIONS) == every


def test_rebuilding_an_unchanged_directory_gives_an_identical_index(store: WorkItemStore) -> None:
    store.write_section(APP, CONTROL, START)
    store.write_section(LIB, POLL, LEDGER)
    before = snapshot(store.root)
    store.rebuild_index()
    assert snapshot(store.root) == before


def test_the_index_holds_one_entry_per_line(store: WorkItemStore) -> None:
    for number in (3, 1, 2):
        store.write_section(f"github:octo/app#{number}", CONTROL, START)
    lines = (store.root / INDEX_FILE).read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"workItems": [' and lines[-1] == "]}"
    refs = [json.loads(line.strip().rstrip(","))["ref"] for line in lines[1:-1]]
    assert refs == [f"github:octo/app#{number}" for number in (1, 2, 3)]


def test_an_index_of_another_layout_is_rewritten_in_this_one(store: WorkItemStore) -> None:
    store.write_section(APP, CONTROL, START)
    index = store.root / INDEX_FILE
    written = index.read_bytes()
    index.write_text(json.dumps(on_disk(index), indent=2), encoding="utf-8")  # same data
    store.rebuild_index()
    assert index.read_bytes() == written


def test_an_index_that_is_a_stranger_s_symlink_is_replaced_not_followed(
    store: WorkItemStore, tmp_path: Path
) -> None:
    store.write_section(APP, CONTROL, START)
    target = tmp_path / "elsewhere.json"
    target.write_text("theirs", encoding="utf-8")
    index = store.root / INDEX_FILE
    index.unlink()
    index.symlink_to(target)
    store.rebuild_index()
    assert not index.is_symlink() and on_disk(index)["workItems"][0]["ref"] == APP
    assert target.read_text(encoding="utf-8") == "theirs"


def test_the_index_goes_with_the_last_record(store: WorkItemStore) -> None:
    store.write_section(APP, CONTROL, START)
    store.write_section(LIB, CONTROL, START)
    store.drop(APP)
    assert [entry["ref"] for entry in on_disk(store.root / INDEX_FILE)["workItems"]] == [LIB]
    store.drop(LIB)
    assert sorted(os.listdir(store.root)) == []


def test_a_batch_of_many_writes_rebuilds_the_index_once(layout: StateLayout) -> None:
    store = CountingStore(layout.portable_dir, legacy_layout(layout))
    refs = [f"github:octo/app#{n}" for n in range(1, 21)]
    with store.batch():
        for ref in refs:
            store.write_sections(ref, {CONTROL: START, POLL: LEDGER})
        with store.batch():
            store.write_section(refs[0], CHANNELS, {"slack": {}})
        assert store.rebuilds == 0
        assert not (layout.portable_dir / INDEX_FILE).exists()
    assert store.rebuilds == 1
    listed = [entry["ref"] for entry in on_disk(layout.portable_dir / INDEX_FILE)["workItems"]]
    assert listed == sorted(refs)

    with store.batch():
        for ref in refs:
            store.drop(ref)
    assert store.rebuilds == 2
    assert os.listdir(layout.portable_dir) == []


def index_equals_a_rebuild(store: WorkItemStore) -> bool:
    index = store.root / INDEX_FILE
    written = index.read_bytes() if index.exists() else None
    store.rebuild_index()
    return (index.read_bytes() if index.exists() else None) == written


def test_writes_outside_a_batch_update_one_entry_once_the_index_is_trusted(
    layout: StateLayout,
) -> None:
    store = CountingStore(layout.portable_dir)
    for number in (3, 1, 2, 4):
        store.write_section(f"github:octo/app#{number}", CONTROL, START)
    store.write_section("github:octo/app#2", POLL, LEDGER)
    store.write_section("github:octo/app#3", CONTROL, None)
    assert store.rebuilds == 1, "only the first write, which found no stamp, rebuilt"
    assert index_equals_a_rebuild(store)


def test_a_record_added_or_removed_by_another_tool_is_healed_by_the_next_write(
    store: WorkItemStore,
) -> None:
    store.write_section(APP, CONTROL, START)
    store.write_section(LIB, CONTROL, START)
    other = store.root / "github-octo-other-3.json"
    other.write_text(json.dumps({"ref": "github:octo/other#3", "control": START}))
    store.path_for(LIB).unlink()
    store.write_section(APP, POLL, LEDGER)
    listed = [entry["ref"] for entry in on_disk(store.root / INDEX_FILE)["workItems"]]
    assert listed == [APP, "github:octo/other#3"]
    assert index_equals_a_rebuild(store)


def test_a_hand_edited_index_is_healed_by_the_next_write(store: WorkItemStore) -> None:
    store.write_section(APP, CONTROL, START)
    index = store.root / INDEX_FILE
    index.write_text('{"workItems": [\n  {"ref": "github:a/b#1"}\n]}\n', encoding="utf-8")
    store.write_section(LIB, CONTROL, START)
    assert [entry["ref"] for entry in on_disk(index)["workItems"]] == [APP, LIB]


def test_a_crash_between_the_record_and_the_index_is_healed_whatever_the_clock_says(
    store: WorkItemStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write_section(APP, CONTROL, START)
    folder = os.stat(store.root)

    class Crash(BaseException):
        pass

    def crash(*_args: object, **_kwargs: object) -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(RecordListing, "update_entry", crash)
        with pytest.raises(Crash):
            store.write_section(LIB, CONTROL, START)
    # The directory's time as if the crashed write fell in the same clock tick.
    os.utime(store.root, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    assert [entry["ref"] for entry in on_disk(store.root / INDEX_FILE)["workItems"]] == [APP]
    store.write_section(APP, POLL, LEDGER)
    assert [entry["ref"] for entry in on_disk(store.root / INDEX_FILE)["workItems"]] == [APP, LIB]


def test_a_batch_that_writes_nothing_leaves_the_index_alone(layout: StateLayout) -> None:
    store = CountingStore(layout.portable_dir)
    with store.batch():
        store.section(APP, CONTROL)
    assert store.rebuilds == 0


def test_directory_syncs_of_a_write_can_be_deferred_to_the_caller(store: WorkItemStore) -> None:
    class Recording(DirectorySyncs):
        added: list[Path]

        def __init__(self) -> None:
            super().__init__()
            self.added = []

        def add(self, directory: Path) -> None:
            self.added.append(directory)
            super().add(directory)

    syncs = Recording()
    store.write_section(APP, CONTROL, START, syncs=syncs)
    store.write_section(APP, CONTROL, None, syncs=syncs)
    assert syncs.added == [store.root, store.root]
    syncs.flush()


# -- pull request ledgers ------------------------------------------------------


def test_pull_request_ledgers_live_in_their_owners_record(store: WorkItemStore) -> None:
    store.write_pull_request_ledger(APP, LIB, LEDGER)
    store.write_pull_request_ledger(APP, "github:octo/lib#8", LEDGER)
    assert store.pull_request_ledger(APP, LIB) == LEDGER
    assert store.owner_of(LIB) == APP
    assert store.owner_of("github:octo/lib#9") is None
    assert not store.path_for(LIB).exists()

    store.write_pull_request_ledger(APP, LIB, None)
    assert store.pull_request_ledger(APP, LIB) is None
    assert store.owner_of(LIB) is None
    result = store.write_pull_request_ledger(APP, "github:octo/lib#8", None)
    assert result.action == "deleted", "an empty map holds nothing"


# -- bad input -----------------------------------------------------------------


def plant_bad_files(portable: Path) -> dict[str, tuple[bytes, int, int]]:
    portable.mkdir(parents=True, exist_ok=True)
    (portable / "github-octo-corrupt-1.json").write_text("{not json")
    (portable / "github-octo-list-1.json").write_text("[1, 2]")
    (portable / "github-octo-empty-1.json").write_text("")
    (portable / "github-octo-other-1.json").write_text(json.dumps({"ref": "github:octo/x#9"}))
    (portable / "github-octo-string-1.json").write_text(
        json.dumps({"ref": "github:octo/string#1", "control": "start"})
    )
    (portable / "github-octo-dir-1.json").mkdir()
    (portable / "notes.txt").write_text("mine")
    (portable / "README.json").write_text("{}")
    (portable / "x.json").write_text(json.dumps({"ref": "github:octo/x#1"}))
    (portable / ".github-o-r-1.json.abc.tmp").write_text("{half")
    elsewhere = portable.parent / "elsewhere.json"
    elsewhere.write_text(json.dumps({"ref": "github:octo/link#1", "control": {}}))
    (portable / "github-octo-link-1.json").symlink_to(elsewhere)
    return snapshot(portable)


def test_strangers_and_broken_files_are_never_listed_indexed_or_touched(
    store: WorkItemStore, warnings: list[str]
) -> None:
    before = plant_bad_files(store.root)
    assert store.refs() == {}
    assert len(warnings) == 5, warnings

    store.write_section(APP, CONTROL, START)
    store.write_section("github:octo/dir#1", CONTROL, START)
    assert store.path_for("github:octo/dir#1").name.startswith("github-octo-dir-1~")
    store.write_section("github:octo/other#1", POLL, LEDGER)
    assert store.path_for("github:octo/other#1").name.startswith("github-octo-other-1~")
    assert store.section("github:octo/link#1", CONTROL) is None, "a symlink is not followed"
    store.write_section("github:octo/link#1", POLL, LEDGER)
    assert store.path_for("github:octo/link#1").name.startswith("github-octo-link-1~")
    mine = {APP, "github:octo/dir#1", "github:octo/other#1", "github:octo/link#1"}
    assert set(store.refs()) == mine
    listed = {entry["ref"] for entry in on_disk(store.root / INDEX_FILE)["workItems"]}
    assert listed == mine
    for ref in mine:
        assert store.drop(ref) is True

    after = snapshot(store.root)
    assert after == before
    assert (store.root / "github-octo-dir-1.json").is_dir()


@pytest.mark.parametrize(
    "content", ["{not json", "[1, 2]", "", json.dumps({"ref": APP, "poll": "seen"})]
)
def test_an_unreadable_record_reads_as_nothing_and_clearing_it_removes_it(
    store: WorkItemStore, warnings: list[str], content: str
) -> None:
    store.root.mkdir(parents=True)
    path = store.root / "github-octo-app-15.json"
    path.write_text(content)

    assert store.read(APP) == {}
    assert store.section(APP, CONTROL) is None
    assert store.record_status(APP) == "unreadable"
    assert warnings

    result = store.write_sections(APP, dict.fromkeys(SECTIONS))
    assert result.replaced_unreadable and result.action == "deleted"
    assert not path.exists()


def test_writing_a_section_over_an_unreadable_record_replaces_it(store: WorkItemStore) -> None:
    store.root.mkdir(parents=True)
    (store.root / "github-octo-app-15.json").write_text("{not json")
    store.write_section(APP, CONTROL, START)
    assert store.read(APP)[CONTROL] == START
    assert store.record_status(APP) == "ok"


def test_a_file_at_the_resolved_name_storing_a_third_ref_is_never_changed(
    store: WorkItemStore,
) -> None:
    first, second = "github:octo-a/b#1", "github:octo/a-b#1"
    store.write_section(first, CONTROL, START)
    squatter = store.root / f"{WorkItemRef.parse(second).disambiguated_slug}.json"
    squatter.write_text(json.dumps({"ref": "github:octo/zzz#3"}))
    before = squatter.read_bytes()
    with pytest.raises(ForeignRecordError):
        store.write_section(second, CONTROL, START)
    assert squatter.read_bytes() == before
    assert store.record_status(second) == "unreadable"


# -- slug collisions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [("github:octo-a/b#1", "github:octo/a-b#1"), ("github:octo/a-b#1", "github:octo-a/b#1")],
)
def test_two_refs_sharing_a_slug_never_see_change_or_remove_each_other(
    store: WorkItemStore, first: str, second: str
) -> None:
    store.write_section(first, CONTROL, {**START, "ref": first})
    assert store.section(second, CONTROL) is None
    assert store.read(second) == {}

    store.write_section(second, POLL, LEDGER)
    assert store.path_for(first).name == "github-octo-a-b-1.json"
    assert store.path_for(second).name == f"{WorkItemRef.parse(second).disambiguated_slug}.json"
    assert store.section(first, POLL) is None
    assert store.section(second, CONTROL) is None
    assert set(store.refs()) == {first, second}

    assert store.write_section(second, CONTROL, None).action == "written"
    assert store.section(first, CONTROL) == {**START, "ref": first}
    assert store.drop(second) is True
    assert store.read(first)[CONTROL]["ref"] == first

    store.write_section(second, POLL, LEDGER)
    assert store.drop(first) is True
    assert store.section(second, POLL) == LEDGER
    assert set(store.refs()) == {second}
