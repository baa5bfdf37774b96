"""The one atomic write and the one lock."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from the_loop.fsio import (
    MAX_JSON_DEPTH,
    DirectorySyncs,
    is_temp_name,
    locked,
    read_bytes,
    read_json,
    read_object,
    remove_file,
    write_json,
)


def test_write_json_replaces_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "d" / "record.json"
    write_json(target, {"a": 1})
    write_json(target, {"a": 2})
    assert read_json(target) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp_file(tmp_path: Path) -> None:
    tmp_path = tmp_path / "d"
    target = tmp_path / "record.json"
    write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        write_json(target, {"a": object()})
    assert read_json(target) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_temp_names_are_recognised(tmp_path: Path) -> None:
    assert is_temp_name(".github-o-r-1.json.abc123.tmp")
    assert not is_temp_name("github-o-r-1.json")


def test_remove_file_says_whether_it_removed_something(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    write_json(target, {})
    assert remove_file(target) is True
    assert remove_file(target) is False


def test_removing_a_directory_propagates_the_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").mkdir()
    with pytest.raises(OSError):
        remove_file(tmp_path / "x.json")


def test_deferred_syncs_are_flushed_once_per_directory(tmp_path: Path) -> None:
    tmp_path = tmp_path / "d"
    syncs = DirectorySyncs()
    for index in range(3):
        write_json(tmp_path / f"{index}.json", {"i": index}, syncs=syncs)
    remove_file(tmp_path / "0.json", syncs=syncs)
    syncs.flush()
    syncs.flush()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.json", "2.json"]


def _increment(path: str, lock: str, times: int) -> None:
    for _ in range(times):
        with locked(Path(lock)):
            value = json.loads(Path(path).read_text())["n"]
            write_json(Path(path), {"n": value + 1})


def test_the_lock_serialises_read_modify_write_across_processes(tmp_path: Path) -> None:
    counter = tmp_path / "counter.json"
    write_json(counter, {"n": 0})
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_increment, args=(str(counter), str(tmp_path / "c.lock"), 50))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert read_json(counter) == {"n": 200}


def test_the_lock_file_is_created_and_kept(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "x.lock"
    with locked(lock):
        assert lock.exists()
    assert lock.exists()
    assert os.stat(lock).st_size == 0


def test_read_bytes_reads_a_regular_file_and_nothing_else(tmp_path: Path) -> None:
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}\n")
    (tmp_path / "link.json").symlink_to(regular)
    (tmp_path / "directory.json").mkdir()
    os.mkfifo(tmp_path / "fifo.json")
    assert read_bytes(regular) == b"{}\n"
    for name in ("absent.json", "link.json", "directory.json", "fifo.json"):
        assert read_bytes(tmp_path / name) is None, name


def test_read_object_names_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "ok.json").write_text('{"a": 1}')
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "deep.json").write_text("[" * 200_000)
    (tmp_path / "link.json").symlink_to(tmp_path / "ok.json")
    assert read_object(tmp_path / "ok.json") == ("ok", {"a": 1}, "")
    assert read_object(tmp_path / "absent.json") == ("absent", None, "")
    assert read_object(tmp_path / "link.json")[0] == "stranger"
    assert read_object(tmp_path / "bad.json")[0] == "unreadable"
    assert read_object(tmp_path / "deep.json") == (
        "unreadable",
        None,
        f"it is not valid JSON (nested too deeply to read: deeper than {MAX_JSON_DEPTH} levels)",
    )
