"""Concurrent writers of one portable record lose nothing, and readers never see half a file."""

from __future__ import annotations

import json
import multiprocessing
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from the_loop.portable.store import CHANNELS, CONTROL, POLL, WorkItemStore

APP = "github:octo/app#15"
WRITES = 200
#: Each writer owns one section, or one key of the ``pullRequests`` map.
ROLES = (CONTROL, POLL, CHANNELS, "github:octo/lib#1", "github:octo/lib#2")


def _increment(section: dict[str, Any] | None) -> dict[str, Any]:
    return {"count": int((section or {}).get("count", 0)) + 1}


def _increment_channel(section: dict[str, Any] | None) -> dict[str, Any]:
    return {"slack": _increment((section or {}).get("slack"))}


def write_many(portable: str, locks: str, role: str, start: Event) -> None:
    """Child process: ``WRITES`` read-modify-writes of this writer's own part of the record."""
    store = WorkItemStore(Path(portable), locks_dir=Path(locks))
    start.wait()
    for _ in range(WRITES):
        if role.startswith("github:"):
            store.update_pull_request_ledger(APP, role, _increment)
        else:
            store.update_section(APP, role, _increment_channel if role == CHANNELS else _increment)


def read_until_stopped(
    path: str, start: Event, stop: Event, reads: Synchronized[int], invalid: Synchronized[int]
) -> None:
    """Child process: parse the record again and again; count what was not valid JSON."""
    start.wait()
    while not stop.is_set():
        try:
            json.loads(Path(path).read_bytes())
        except (OSError, ValueError):
            invalid.value += 1
        reads.value += 1


@pytest.mark.slow
def test_concurrent_writers_of_different_sections_lose_no_update(tmp_path: Path) -> None:
    """Quality: ≥ 4 processes × 200 writes to one record, zero lost updates, always valid JSON."""
    portable, locks = tmp_path / "portable", tmp_path / "locks" / "portable"
    store = WorkItemStore(portable, locks_dir=locks)
    store.write_section(APP, CONTROL, {"count": 0})
    context = multiprocessing.get_context("spawn")
    start, stop = context.Event(), context.Event()
    reads, invalid = context.Value("i", 0), context.Value("i", 0)
    writers = [
        context.Process(target=write_many, args=(str(portable), str(locks), role, start))
        for role in ROLES
    ]
    reader = context.Process(
        target=read_until_stopped, args=(str(store.path_for(APP)), start, stop, reads, invalid)
    )
    for process in [*writers, reader]:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=120)
    stop.set()
    reader.join(timeout=30)

    assert [process.exitcode for process in [*writers, reader]] == [0] * (len(ROLES) + 1)
    record = store.read(APP)
    assert record[CONTROL] == {"count": WRITES}
    assert record[POLL] == {"count": WRITES}
    assert record[CHANNELS] == {"slack": {"count": WRITES}}
    assert record["pullRequests"] == {
        "github:octo/lib#1": {"count": WRITES},
        "github:octo/lib#2": {"count": WRITES},
    }
    assert reads.value > 0
    assert invalid.value == 0
    index = json.loads((portable / "index.json").read_text())
    assert index["workItems"][0]["pullRequests"] == ["github:octo/lib#1", "github:octo/lib#2"]


def write_own_items(portable: str, locks: str, writer: int, start: Event) -> None:
    """Child process: create, rewrite and delete records of its own refs, one write each."""
    store = WorkItemStore(Path(portable), locks_dir=Path(locks))
    start.wait()
    refs = [f"github:octo/app-{writer}#{number}" for number in range(1, 61)]
    for ref in refs:
        store.write_section(ref, CONTROL, {"count": 1})
    for ref in refs[::3]:
        store.write_section(ref, POLL, {"count": 2})
    for ref in refs[1::3]:
        store.write_section(ref, CONTROL, None)


@pytest.mark.slow
def test_after_concurrent_writers_of_different_records_the_index_equals_a_rebuild(
    tmp_path: Path,
) -> None:
    portable, locks = tmp_path / "portable", tmp_path / "locks" / "portable"
    store = WorkItemStore(portable, locks_dir=locks)
    store.write_section(APP, CONTROL, {"count": 0})
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [
        context.Process(target=write_own_items, args=(str(portable), str(locks), number, start))
        for number in range(4)
    ]
    for process in writers:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=120)

    assert [process.exitcode for process in writers] == [0] * len(writers)
    written = (portable / "index.json").read_bytes()
    store.rebuild_index()
    assert (portable / "index.json").read_bytes() == written
    assert len(json.loads(written)["workItems"]) == 1 + 4 * 40
