"""Issue 12, refs: records written before refs were lowercased stay one item.

An older release (or upstream the-loopy-one 20.10.2) kept the owner and repository as
typed: ``local/github-Octo-App-15.json`` storing ``github:Octo/App#15``. Such a record
is found, listed, changed and removed by any spelling of the item, is written back under
its own name, and is never shadowed by a second file under the lowercase name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from the_loop.portable.index import current_stamp
from the_loop.portable.store import WorkItemStore
from the_loop.repofile.file import WorkItemStateFile
from the_loop.sessions import Session, SessionRegistry, WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
LEGACY_REF = "github:Octo/App#15"
LEGACY_NAME = "github-Octo-App-15.json"
SPELLINGS = [
    "github:octo/app#15",
    "github:Octo/App#15",
    "OCTO/app#15",
    "https://github.com/Octo/App/issues/15#issuecomment-1",
    "https://GitHub.com/octo/APP/pull/15?x=1",
]


def as_older_release_wrote_it(directory: Path) -> Path:
    """Rename ``<dir>/github-octo-app-15.json`` to its mixed-case name, with the ref as
    typed inside; the path of the legacy file."""
    canonical = directory / "github-octo-app-15.json"
    text = canonical.read_text(encoding="utf-8")
    text = text.replace("github:octo/app#15", LEGACY_REF).replace("/octo/app/", "/Octo/App/")
    legacy = directory / LEGACY_NAME
    legacy.write_text(text, encoding="utf-8")
    canonical.unlink()
    return legacy


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def registry(tmp_path: Path, warnings: list[str]) -> SessionRegistry:
    return SessionRegistry(tmp_path / "local", on_warning=warnings.append)


@pytest.fixture
def legacy_session(registry: SessionRegistry) -> Path:
    registry.register(Session(ITEM, "command", "s-1", cwd="/abs", tmux_target="loop-x"))
    legacy = as_older_release_wrote_it(registry.root)
    assert LEGACY_REF in legacy.read_text(encoding="utf-8")
    return legacy


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_mixed_case_session_record_is_found_by_every_spelling_of_its_item(
    registry: SessionRegistry, legacy_session: Path, spelling: str
) -> None:
    found = registry.find_by_work_item(spelling)
    assert found is not None
    assert (found.ref, found.harness_session_id) == ("github:octo/app#15", "s-1")
    assert registry.path_for(spelling) == legacy_session
    assert registry.record_status(spelling) == "ok"


def test_a_mixed_case_session_record_is_listed_once_under_the_lowercase_ref(
    registry: SessionRegistry, legacy_session: Path, warnings: list[str]
) -> None:
    assert [record.ref for record in registry.list_sessions()] == ["github:octo/app#15"]
    assert registry.refs() == {"github:octo/app#15": legacy_session}
    assert warnings == []


def test_the_next_write_of_a_mixed_case_session_record_keeps_its_file_and_makes_no_second(
    registry: SessionRegistry, legacy_session: Path
) -> None:
    assert registry.close("https://github.com/Octo/App/issues/15") is True
    assert sorted(path.name for path in registry.root.iterdir()) == [LEGACY_NAME]
    document = json.loads(legacy_session.read_text(encoding="utf-8"))
    assert document["workItem"] == "github:octo/app#15"  # stored canonically from now on
    closed = registry.find_by_work_item("github:octo/app#15", include_closed=True)
    assert closed is not None
    assert closed.status == "closed"
    registry.register(Session(ITEM, "command", "s-2", cwd="/abs", tmux_target="loop-x"))
    assert sorted(path.name for path in registry.root.iterdir()) == [LEGACY_NAME]


def test_a_mixed_case_session_record_is_removed_by_any_spelling(
    registry: SessionRegistry, legacy_session: Path
) -> None:
    assert registry.forget("Octo/App#15") is True
    assert not legacy_session.exists()
    assert registry.list_sessions() == []


def test_when_both_spellings_hold_a_session_record_the_lowercase_file_is_used_and_the_other_kept(
    registry: SessionRegistry, legacy_session: Path, warnings: list[str]
) -> None:
    # Only possible when an older release wrote the lowercase file too: make it so.
    canonical = registry.root / "github-octo-app-15.json"
    legacy_text = legacy_session.read_text(encoding="utf-8")
    canonical.write_text(legacy_text.replace(LEGACY_REF, ITEM.ref).replace("s-1", "s-new"))
    legacy_session.write_text(legacy_text, encoding="utf-8")
    [listed] = registry.list_sessions()
    assert listed.harness_session_id == "s-new"
    found = registry.find_by_work_item("Octo/App#15")
    assert found is not None
    assert found.harness_session_id == "s-new"
    assert any(str(legacy_session) in warning and "left alone" in warning for warning in warnings)
    assert legacy_session.read_text(encoding="utf-8") == legacy_text


@pytest.fixture
def store(tmp_path: Path, warnings: list[str]) -> WorkItemStore:
    return WorkItemStore(tmp_path / "portable", on_warning=warnings.append)


@pytest.fixture
def legacy_record(store: WorkItemStore) -> Path:
    store.write_section(ITEM, "control", {"command": "stop", "at": "2026-01-01T00:00:00Z"})
    legacy = as_older_release_wrote_it(store.root)
    document = json.loads(legacy.read_text(encoding="utf-8"))
    assert document["ref"] == LEGACY_REF
    assert document["url"] == "https://github.com/Octo/App/issues/15"
    return legacy


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_mixed_case_portable_record_is_found_by_every_spelling_of_its_item(
    store: WorkItemStore, legacy_record: Path, spelling: str
) -> None:
    assert store.section(spelling, "control") == {
        "command": "stop",
        "at": "2026-01-01T00:00:00Z",
    }
    assert store.path_for(spelling) == legacy_record
    assert store.record_status(spelling) == "ok"


def test_a_mixed_case_portable_record_is_listed_once_and_indexed_under_its_own_file(
    store: WorkItemStore, legacy_record: Path, warnings: list[str]
) -> None:
    assert store.refs() == {"github:octo/app#15": legacy_record}
    store.rebuild_index()
    entries = json.loads(store.index_path.read_text(encoding="utf-8"))["workItems"]
    assert [entry["ref"] for entry in entries] == ["github:octo/app#15"]
    assert LEGACY_NAME in store.index_path.read_text(encoding="utf-8")
    assert warnings == []


def test_the_next_write_of_a_mixed_case_portable_record_keeps_its_file_and_makes_no_second(
    store: WorkItemStore, legacy_record: Path
) -> None:
    store.rebuild_index()
    result = store.write_section("Octo/App#15", "poll", {"lastSeenCommentId": "7"})
    assert result.file == LEGACY_NAME
    names = sorted(path.name for path in store.root.iterdir() if path.suffix == ".json")
    assert names == [LEGACY_NAME, "index.json"]
    document = json.loads(legacy_record.read_text(encoding="utf-8"))
    assert (document["ref"], document["url"]) == (
        "github:octo/app#15",
        "https://github.com/octo/app/issues/15",
    )
    assert document["control"]["command"] == "stop"  # nothing of the old record lost
    [entry] = json.loads(store.index_path.read_text(encoding="utf-8"))["workItems"]
    assert entry["ref"] == "github:octo/app#15"
    assert LEGACY_NAME in store.index_path.read_text(encoding="utf-8")


def test_a_mixed_case_portable_record_is_removed_by_any_spelling(
    store: WorkItemStore, legacy_record: Path
) -> None:
    assert store.drop("https://github.com/octo/app/issues/15") is True
    assert not legacy_record.exists()
    assert store.refs() == {}


def test_when_both_spellings_hold_a_portable_record_the_lowercase_file_is_used_and_the_other_kept(
    store: WorkItemStore, legacy_record: Path, warnings: list[str]
) -> None:
    # Only possible when an older release wrote the lowercase file too: make it so.
    legacy_text = legacy_record.read_text(encoding="utf-8")
    canonical = store.root / "github-octo-app-15.json"
    canonical.write_text(legacy_text.replace(LEGACY_REF, ITEM.ref).replace('"stop"', '"pause"'))
    assert store.refs() == {"github:octo/app#15": canonical}
    assert any(str(legacy_record) in warning and "left alone" in warning for warning in warnings)
    store.write_section("Octo/App#15", "poll", {"lastSeenCommentId": "7"})
    assert (store.section(ITEM, "control") or {})["command"] == "pause"
    assert legacy_record.read_text(encoding="utf-8") == legacy_text


def test_an_index_an_older_release_kept_with_a_mixed_case_ref_is_rebuilt_not_spliced_twice(
    store: WorkItemStore, legacy_record: Path
) -> None:
    # As that release left it: its index names the item as typed, and its stamp says the
    # index matches the records, so a splice of the lowercase ref would add a second row.
    store.rebuild_index()
    index = store.index_path
    index.write_text(index.read_text(encoding="utf-8").replace(ITEM.ref, LEGACY_REF), "utf-8")
    stamp = current_stamp(store.root, index)
    (store.locks_dir / "index.stamp").write_text(json.dumps(stamp) + "\n", encoding="utf-8")
    store.write_section("Octo/App#15", "poll", {"lastSeenCommentId": "7"})
    rows = json.loads(index.read_text(encoding="utf-8"))["workItems"]
    assert [row["ref"] for row in rows] == ["github:octo/app#15"]


def test_a_work_item_state_file_an_older_release_wrote_under_a_mixed_case_slug_is_used(
    tmp_path: Path,
) -> None:
    legacy = tmp_path / "docs" / "specs" / "github-Octo-App-15" / "work-item-state.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(
        json.dumps({"version": 2, "workItem": LEGACY_REF, "currentNode": "tasks"}), "utf-8"
    )
    state_file = WorkItemStateFile(
        tmp_path, WorkItemRef.parse("https://github.com/Octo/App/issues/15")
    )
    assert state_file.path == legacy
    assert state_file.load().current_node == "tasks"
    state_file.update(lambda state: setattr(state, "model", "opus"))
    assert sorted(path.name for path in (tmp_path / "docs" / "specs").iterdir()) == [
        "github-Octo-App-15"
    ]
    assert json.loads(legacy.read_text(encoding="utf-8"))["model"] == "opus"


def test_a_mixed_case_spec_directory_naming_another_item_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "docs" / "specs" / "github-Octo-App-15" / "work-item-state.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"version": 2, "workItem": "github:octo/other#15"}), "utf-8")
    state_file = WorkItemStateFile(tmp_path, ITEM)
    assert (
        state_file.path
        == tmp_path / "docs" / "specs" / "github-octo-app-15" / "work-item-state.json"
    )


def test_a_run_of_new_records_lists_the_directory_once_and_still_finds_a_legacy_one(
    store: WorkItemStore, legacy_record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's own writes (lowercase names) keep the mixed-case listing current, so
    new records do not each list ``portable/`` again; a legacy record stays found."""
    import the_loop.records.directory as records

    listed: list[str] = []
    listdir = records.os.listdir

    def counting(path: object) -> list[str]:
        listed.append(str(path))
        return listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(records.os, "listdir", counting)
    for number in range(100, 140):
        store.write_section(f"github:octo/app#{number}", "control", {"command": "stop"})
    directory = str(legacy_record.parent)
    assert listed.count(directory) <= 1, f"listed {listed.count(directory)} times"
    assert store.path_for("github:octo/app#15") == legacy_record
    # One an older release writes meanwhile (outside the store's lock) is still found.
    text = legacy_record.read_text(encoding="utf-8").replace("#15", "#16")
    (legacy_record.parent / "github-Octo-App-16.json").write_text(text, encoding="utf-8")
    expected = legacy_record.parent / "github-Octo-App-16.json"
    assert store.path_for("github:octo/app#16") == expected
