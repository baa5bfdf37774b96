"""Read snapshots of the stores, the one-read lookups, and the fast ref parse.

A snapshot lets a read-only phase (a listing, a dry run) list and parse each
record file once; a lock taken inside it ends it, so a writer always sees the
disk and what it wrote is seen afterwards.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.store import CONTROL, POLL, WorkItemStore
from the_loop.records.directory import RecordDirectory, disambiguated_name, plain_name
from the_loop.ref import WorkItemRef, _parse_strict
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/repo#15")
OTHER = WorkItemRef.parse("github:octo/repo#21")


def _registry(tmp_path: Path) -> SessionRegistry:
    return SessionRegistry(tmp_path / "state" / "local")


def _store(tmp_path: Path) -> WorkItemStore:
    layout = StateLayout(tmp_path / "state")
    return WorkItemStore(layout.portable_dir, legacy_layout(layout))


def _session(ref: WorkItemRef) -> Session:
    return Session(work_item=ref, harness="claude", harness_session_id="s-1", cwd="/nowhere")


def test_inside_a_snapshot_each_record_file_is_loaded_once(tmp_path: Path):
    directory = RecordDirectory(tmp_path / "records", tmp_path / "locks")
    directory.directory.mkdir()
    path = directory.path(plain_name(ITEM))
    path.write_text("{}", encoding="utf-8")
    loads: list[str] = []

    def loader(loaded: str) -> str:
        loads.append(loaded)
        return Path(loaded).read_text(encoding="utf-8")

    with directory.snapshot():
        assert [directory.load(path.name, loader) for _ in range(3)] == ["{}"] * 3
        assert directory.record_names() == directory.record_names() == [path.name]
    assert loads == [str(path)]
    directory.load(path.name, loader)
    directory.load(path.name, loader)
    assert loads == [str(path)] * 3


STRANGER = "<stranger>"


class Loads:
    """A loader for :meth:`RecordDirectory.locate` that notes every file it reads: a
    file's content is the ref it stores ("" for an unreadable one), None when absent."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, path: str) -> str | None:
        self.names.append(Path(path).name)
        if not os.path.lexists(path):
            return None
        return Path(path).read_text(encoding="utf-8") if os.path.isfile(path) else STRANGER


def _stored(text: str | None) -> str | None:
    return text if text and text != STRANGER else None


def _is_stranger(text: str | None) -> bool:
    return text == STRANGER


def _directory_with(tmp_path: Path, plain: str | None, other: str | None) -> RecordDirectory:
    """A record directory whose plain and disambiguated files for ITEM hold the given
    text ("<dir>" makes a directory)."""
    directory = RecordDirectory(tmp_path / "records", tmp_path / "locks")
    directory.directory.mkdir(parents=True)
    for name, text in ((plain_name(ITEM), plain), (disambiguated_name(ITEM), other)):
        if text == "<dir>":
            directory.path(name).mkdir()
        elif text is not None:
            directory.path(name).write_text(text, encoding="utf-8")
    return directory


def _locate(directory: RecordDirectory, loads: Loads | None = None) -> tuple[str, str | None]:
    return directory.locate(ITEM, loads or Loads(), _stored, _is_stranger)


def test_locate_takes_the_plain_file_that_stores_the_ref_reading_it_once(tmp_path: Path):
    loads = Loads()
    assert _locate(_directory_with(tmp_path, ITEM.ref, None), loads) == (plain_name(ITEM), ITEM.ref)
    assert loads.names == [plain_name(ITEM)]


def test_locate_steps_past_another_ref_s_plain_file_reading_each_file_once(tmp_path: Path):
    loads = Loads()
    directory = _directory_with(tmp_path, OTHER.ref, ITEM.ref)
    assert _locate(directory, loads) == (disambiguated_name(ITEM), ITEM.ref)
    assert sorted(loads.names) == sorted([plain_name(ITEM), disambiguated_name(ITEM)])


def test_locate_steps_around_a_stranger_s_directory_at_the_plain_name(tmp_path: Path):
    assert _locate(_directory_with(tmp_path, "<dir>", None)) == (disambiguated_name(ITEM), None)


def test_locate_keeps_an_unreadable_plain_file_unless_a_disambiguated_one_exists(
    tmp_path: Path,
):
    assert _locate(_directory_with(tmp_path / "a", "", None)) == (plain_name(ITEM), "")
    assert _locate(_directory_with(tmp_path / "b", "", ITEM.ref)) == (
        disambiguated_name(ITEM),
        ITEM.ref,
    )


def test_locate_names_the_plain_file_of_an_absent_record(tmp_path: Path):
    assert _locate(_directory_with(tmp_path, None, None)) == (plain_name(ITEM), None)


def test_locate_leaves_a_plain_file_of_another_ref_to_the_caller_when_no_other_exists(
    tmp_path: Path,
):
    # The disambiguated name is where ITEM's record would go; the caller sees it absent.
    assert _locate(_directory_with(tmp_path, OTHER.ref, None)) == (disambiguated_name(ITEM), None)


def test_a_snapshot_sees_the_directory_as_first_read_in_it(tmp_path: Path):
    registry = _registry(tmp_path)
    registry.register(_session(ITEM))
    with registry.snapshot():
        assert [session.ref for session in registry.list_sessions()] == [ITEM.ref]
        registry.root.joinpath(f"{OTHER.slug}.json").write_text(
            (registry.root / f"{ITEM.slug}.json").read_text().replace("#15", "#21")
        )
        assert [session.ref for session in registry.list_sessions()] == [ITEM.ref]
    assert [session.ref for session in registry.list_sessions()] == [ITEM.ref, OTHER.ref]


def test_a_pause_inside_a_snapshot_is_seen_by_every_later_read(tmp_path: Path):
    registry = _registry(tmp_path)
    registry.register(_session(ITEM))
    with registry.snapshot():
        assert registry.load(ITEM)[1] is not None
        assert registry.pause(ITEM) is not None
        status, record = registry.load(ITEM)
        assert status == "ok" and record is not None and record.is_paused
        assert [session.status for session in registry.list_sessions()] == ["paused"]


def test_a_section_written_inside_a_snapshot_is_seen_by_every_later_read(tmp_path: Path):
    store = _store(tmp_path)
    store.write_section(ITEM, CONTROL, {"ref": ITEM.ref, "command": "start"})
    with store.snapshot():
        assert store.section(ITEM, CONTROL) == {"ref": ITEM.ref, "command": "start"}
        store.write_section(ITEM, CONTROL, {"ref": ITEM.ref, "command": "stop"})
        assert store.section(ITEM, CONTROL) == {"ref": ITEM.ref, "command": "stop"}
        store.write_section(ITEM, CONTROL, None)
        status, sections = store.load(ITEM)
        assert status == "absent" and not any(sections.values())
        assert store.summaries() == []


def test_registry_load_gives_the_status_and_the_record_from_one_read(tmp_path: Path):
    registry = _registry(tmp_path)
    assert registry.load(ITEM) == ("absent", None)
    registry.register(_session(ITEM))
    status, record = registry.load(ITEM)
    assert (status, record) == ("ok", registry.find_by_work_item(ITEM, include_closed=True))
    registry.path_for(OTHER).write_text("{not json", encoding="utf-8")
    assert registry.load(OTHER) == ("unreadable", None)
    assert registry.load(OTHER)[0] == registry.record_status(OTHER)


def test_a_record_of_another_ref_under_the_name_loads_as_absent(tmp_path: Path):
    registry = _registry(tmp_path)
    registry.register(_session(OTHER))
    (registry.root / f"{OTHER.slug}.json").rename(registry.root / f"{ITEM.slug}.json")
    assert registry.load(ITEM) == ("absent", None)
    assert registry.record_status(ITEM) == "absent"


def test_store_load_gives_every_section_as_section_reads_it(tmp_path: Path):
    layout = StateLayout(tmp_path / "state")
    store = _store(tmp_path)
    legacy = legacy_layout(layout)
    legacy.control_dir.mkdir(parents=True)
    legacy.control_dir.joinpath(f"{ITEM.slug}.json").write_text(
        json.dumps({"ref": ITEM.ref, "command": "start"}), encoding="utf-8"
    )
    store.write_section(ITEM, POLL, {"seenComments": ["IC_1"], "commentAttempts": {}})
    status, sections = store.load(ITEM)
    assert status == "ok"
    assert sections == {name: store.section(ITEM, name) for name in sections}
    assert sections[CONTROL] == {"ref": ITEM.ref, "command": "start"}
    store.path_for(OTHER).write_text("[]", encoding="utf-8")
    assert store.load(OTHER) == ("unreadable", {})
    assert store.record_status(OTHER) == "unreadable"


_REF_CHARACTERS = string.ascii_letters + string.digits + "._-:/#0 \t~!"


@settings(max_examples=500)
@given(
    st.one_of(
        st.text(alphabet=_REF_CHARACTERS, min_size=1, max_size=40),
        st.builds(
            "{}:{}/{}#{}".format,
            st.sampled_from(["github", "gitlab", "git-x", "Github", "9x"]),
            st.text(alphabet=string.ascii_letters + "._-", min_size=1, max_size=8),
            st.text(alphabet=string.ascii_letters + "._-", min_size=1, max_size=8),
            st.text(alphabet=string.digits, min_size=1, max_size=20),
        ),
    )
)
def test_the_fast_parse_of_the_common_spelling_agrees_with_every_strict_rule(text: str):
    try:
        expected: WorkItemRef | str = _parse_strict(WorkItemRef, text)
    except ValueError as error:
        expected = str(error)
    try:
        parsed: WorkItemRef | str = WorkItemRef.parse(text)
    except ValueError as error:
        parsed = str(error)
    assert parsed == expected
    if isinstance(parsed, WorkItemRef):
        assert isinstance(expected, WorkItemRef)
        assert (parsed.ref, parsed.slug, parsed.url) == (expected.ref, expected.slug, expected.url)
