"""A FIFO where an agent's hook log or transcript belongs (someone else's file, or a
hostile one) never hangs a reader: the daemon's tending, the listing and the spend meter
read the agent's files without blocking, and take a FIFO for no file at all."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from the_loop.adapters.spend_meter import _count_hooks  # pyright: ignore[reportPrivateUsage]
from the_loop.agent.hooklog import read_hook_log
from the_loop.agent.transcript import read_transcript


def _returns(call: Callable[[], Any]) -> list[Any]:
    """What ``call`` returned, in a thread given 5 s (empty: it hung)."""
    got: list[Any] = []
    thread = threading.Thread(target=lambda: got.append(call()), daemon=True)
    thread.start()
    thread.join(5)
    return got


def test_a_fifo_for_a_hook_log_or_a_transcript_is_read_as_none(tmp_path: Path) -> None:
    fifo = tmp_path / "agent.jsonl"
    os.mkfifo(fifo)
    assert _returns(lambda: read_hook_log(fifo)) == [[]]
    assert _returns(lambda: read_hook_log(fifo, since=1.0)) == [[]]
    assert _returns(lambda: read_transcript(fifo)) == [None]
    kept: dict[str, Any] = {}
    assert _returns(lambda: _count_hooks(fifo, kept)) == [None]
    assert kept == {}, "nothing counted from it"
