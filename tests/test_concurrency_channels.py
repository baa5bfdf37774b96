"""Channel read cursors only move forward, even with concurrent writers."""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path
from typing import Any

import pytest

from the_loop.portable.channels import ChannelError, ChannelState
from the_loop.portable.store import WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/app#15")


def _advance_many(root: str, seed: int) -> None:
    state = ChannelState(
        WorkItemStore(Path(root) / "portable"), SessionRegistry(Path(root) / "local")
    )
    values = list(range(1, 301))
    random.Random(seed).shuffle(values)
    for value in values:
        state.advance(ITEM, "slack", "1726.001", f"{value}.000")


@pytest.mark.slow
def test_concurrent_advances_never_move_a_cursor_backwards(tmp_path: Path) -> None:
    root = tmp_path / "state"
    registry = SessionRegistry(root / "local")
    registry.register(Session(work_item=ITEM, harness="claude", harness_session_id="s"))
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_advance_many, args=(str(root), n)) for n in range(8)]
    state = ChannelState(WorkItemStore(root / "portable"), registry)
    for worker in workers:
        worker.start()
    seen: list[float] = []
    while any(worker.is_alive() for worker in workers):
        cursor = state.cursor(ITEM, "slack", "1726.001")
        if cursor:
            seen.append(float(cursor))
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert seen == sorted(seen), "a cursor moved backwards"
    assert state.cursor(ITEM, "slack", "1726.001") == "300.000"


def _bind(root: str, number: int, results: Any) -> None:
    state = ChannelState(
        WorkItemStore(Path(root) / "portable"), SessionRegistry(Path(root) / "local")
    )
    try:
        state.bind(f"github:octo/app#{number}", "slack", conversation="C1", thread="1726.001")
    except ChannelError:
        results.put("refused")
    else:
        results.put("bound")


@pytest.mark.slow
def test_concurrent_binds_of_one_thread_let_exactly_one_item_claim_it(tmp_path: Path) -> None:
    root = tmp_path / "state"
    store = WorkItemStore(root / "portable")
    for number in range(100, 140):  # other records make the holder scan take a while
        store.write_section(f"github:octo/app#{number}", "control", None)
        store.write_section(
            f"github:octo/lib#{number}", "channels", {"slack": {"channel": "C9", "thread": "x"}}
        )
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [context.Process(target=_bind, args=(str(root), n, results)) for n in range(1, 9)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    outcomes = sorted(results.get(timeout=5) for _ in workers)
    assert outcomes == ["bound"] + ["refused"] * 7
