"""This machine's identity: made once under a lock, stable, kept in ``local/``, refused
when its file is not one; ``state paths`` shows it and the name, and never makes it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.helpers.world import World
from the_loop.errors import TheLoopError
from the_loop.sessions.machine import MACHINE_FILE, machine_id, read_machine_id


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "local" / MACHINE_FILE, tmp_path / "locks" / "machine.lock"


def test_the_id_is_made_once_and_kept(tmp_path: Path) -> None:
    path, lock = _paths(tmp_path)
    assert read_machine_id(path) is None
    first = machine_id(path, lock)
    assert len(first) == 32 and int(first, 16) >= 0
    assert machine_id(path, lock) == first == read_machine_id(path)
    assert json.loads(path.read_text("utf-8")) == {"version": 1, "id": first}


def test_processes_making_it_at_once_agree_on_one(tmp_path: Path) -> None:
    path, lock = _paths(tmp_path)
    path.parent.mkdir(parents=True)
    found: list[str] = []
    threads = [
        threading.Thread(target=lambda: found.append(machine_id(path, lock))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 1 and len(found) == 8


@pytest.mark.parametrize("text", ["not json", '{"id": "short"}', '["a"]', '{"id": 7}'])
def test_a_file_that_is_not_an_id_is_refused_and_kept(tmp_path: Path, text: str) -> None:
    path, lock = _paths(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TheLoopError, match=str(path)):
        machine_id(path, lock)
    assert path.read_text("utf-8") == text  # never replaced: a new id is a new machine


def test_a_link_in_its_place_is_never_followed(tmp_path: Path) -> None:
    path, _lock = _paths(tmp_path)
    path.parent.mkdir(parents=True)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"id": "0" * 32}), encoding="utf-8")
    os.symlink(outside, path)
    with pytest.raises(TheLoopError):
        read_machine_id(path)


def test_state_paths_shows_the_name_and_the_id_without_making_it(tmp_path: Path) -> None:
    world = World(tmp_path, {"routing": {"machineName": "build-box"}})
    code, out, _ = world.run_cli(["state", "paths", "--format", "json"])
    assert code == 0
    assert json.loads(out)["summary"]["machine"] == {"name": "build-box", "id": None}
    assert not (world.layout.local_dir / MACHINE_FILE).exists()
    made = machine_id(
        world.layout.local_dir / MACHINE_FILE, world.layout.local_locks_dir / "m.lock"
    )
    code, out, _ = world.run_cli(["state", "paths"])
    assert code == 0 and f"machine:    build-box ({made})" in out
    assert not list(world.layout.portable_dir.rglob(MACHINE_FILE))  # it never travels
