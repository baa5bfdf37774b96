"""Concurrent writers on one session record, across real processes.

Each check would fail without the record lock: unlocked read-modify-writes
drop each other's deliveries and write stale statuses back.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from the_loop.errors import EXIT_USAGE
from the_loop.sessions import RegistryError, Session, SessionRegistry, WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
TOUCHERS = 4
TOUCHES = 200
TOGGLES = 40
REGISTRANTS = 8
# Large enough that every delivery id stays in the list: a lost update shows as a missing id.
BOUND = TOUCHERS * TOUCHES + 10

pytestmark = pytest.mark.slow

_CONTEXT = multiprocessing.get_context("spawn")


def _registry(root: str) -> SessionRegistry:
    return SessionRegistry(Path(root), max_recent_deliveries=BOUND)


def _touch_many(root: str, worker: int, start: Event) -> None:
    registry = _registry(root)
    start.wait()
    for number in range(TOUCHES):
        if registry.touch(ITEM, f"w{worker}-d{number}") is None:
            raise SystemExit(3)


def _pause_and_resume(root: str, start: Event) -> None:
    """Toggle, then end on a pause; each call must change something, or a touch undid one."""
    registry = _registry(root)
    start.wait()
    for _ in range(TOGGLES):
        if registry.pause(ITEM) is None:
            raise SystemExit(4)
        if registry.resume(ITEM) is None:
            raise SystemExit(5)
    if registry.pause(ITEM) is None:
        raise SystemExit(6)


def _register(root: str, worker: int, start: Event) -> None:
    registry = _registry(root)
    start.wait()
    try:
        registry.register(Session(ITEM, "claude", f"sess-{worker}"))
    except RegistryError as refused:
        raise SystemExit(refused.exit_code) from refused


def _read_while_running(path: Path, processes: Sequence[BaseProcess]) -> int:
    """Parse the record until every process is done; every read must be a whole v2 record."""
    reads = 0
    while any(process.is_alive() for process in processes):
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["version"] == 2 and ITEM.ref in document["sessions"]
        reads += 1
    return reads


def test_a_pause_is_never_undone_and_no_delivery_is_lost_under_concurrent_touches(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".the-loop" / "local"
    registry = _registry(str(root))
    registry.register(Session(ITEM, "claude", "sess-1", cwd="/abs/checkout"))
    start = _CONTEXT.Event()
    processes = [
        _CONTEXT.Process(target=_touch_many, args=(str(root), worker, start))
        for worker in range(TOUCHERS)
    ]
    processes.append(_CONTEXT.Process(target=_pause_and_resume, args=(str(root), start)))
    for process in processes:
        process.start()
    start.set()
    reads = _read_while_running(registry.path_for(ITEM), processes)
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0] * (TOUCHERS + 1)
    record = registry.find_by_work_item(ITEM)
    assert record is not None and record.status == "paused"
    expected = {f"w{worker}-d{n}" for worker in range(TOUCHERS) for n in range(TOUCHES)}
    assert len(record.recent_deliveries) == len(expected)
    assert set(record.recent_deliveries) == expected
    assert record.last_event_at is not None
    assert reads > 0


def test_exactly_one_of_many_concurrent_registrations_wins(tmp_path: Path) -> None:
    root = tmp_path / ".the-loop" / "local"
    start = _CONTEXT.Event()
    processes = [
        _CONTEXT.Process(target=_register, args=(str(root), worker, start))
        for worker in range(REGISTRANTS)
    ]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=60)
    codes = [process.exitcode for process in processes]
    assert codes.count(0) == 1 and codes.count(EXIT_USAGE) == REGISTRANTS - 1
    winner = codes.index(0)
    record = _registry(str(root)).find_by_work_item(ITEM)
    assert record is not None and record.harness_session_id == f"sess-{winner}"
