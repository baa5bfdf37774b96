"""The agent room's rows of ``make bench``: what one of Claude Code's hooks costs it.

Each hook the-loop installs runs ``python -I -m the_loop.agent.hook <log>`` as its own
process, with the hook's JSON on stdin, and Claude Code waits for it: its whole run, from
the fork to the exit, is what the agent pays for every tool call. Measured here as the
agent runs it: a new process each time, the payload of a ``PreToolUse`` hook, the line
appended to a hook log. Target: p95 ≤ 50 ms.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 60
TARGET_P95_SECONDS = 0.050
PAYLOAD = {
    "session_id": "4b1e0f4c-5f0e-4a55-9d8f-0d6b7e2f6a10",
    "transcript_path": "/home/me/.claude/projects/-work-app/4b1e0f4c.jsonl",
    "cwd": "/work/app",
    "hook_event_name": "PreToolUse",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": {"command": "pytest -q tests/", "description": "Run the tests"},
}


def hook_runs(runs: int = RUNS) -> list[float]:
    """Seconds for each whole run of the hook entry (one warm-up first, untimed)."""
    data = json.dumps(PAYLOAD).encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="the-loop-bench-hook-") as scratch:
        log = Path(scratch) / "agent.jsonl"
        argv = [sys.executable, "-I", "-m", "the_loop.agent.hook", str(log)]
        subprocess.run(argv, input=data, check=True, capture_output=True)
        times: list[float] = []
        for _ in range(runs):
            began = time.perf_counter()
            subprocess.run(argv, input=data, check=True, capture_output=True)
            times.append(time.perf_counter() - began)
        lines = log.read_text(encoding="utf-8").splitlines()
        if len(lines) != runs + 1 or json.loads(lines[-1])["tool"] != "Bash":
            raise SystemExit("bench: the hook did not append one line per run")
    return times


def rows(runs: int = RUNS) -> tuple[list[str], list[tuple[str, str, bool]]]:
    times = sorted(hook_runs(max(runs, RUNS)))
    p95 = times[int(len(times) * 0.95) - 1]
    lines = [
        "| what | runs | median | p95 | max |",
        "| --- | --- | --- | --- | --- |",
        f"| one hook's whole run (`python -I -m the_loop.agent.hook`) | {len(times)} | "
        f"{statistics.median(times) * 1000:.1f} ms | {p95 * 1000:.1f} ms | "
        f"{times[-1] * 1000:.1f} ms |",
    ]
    found = [
        ("a hook's run p95 ≤ 50 ms", f"{p95 * 1000:.1f} ms", p95 <= TARGET_P95_SECONDS),
    ]
    return lines, found


if __name__ == "__main__":
    table, checks = rows()
    print("\n".join(table))
    for target, measured, ok in checks:
        print(f"| {target} | {measured} | {'PASS' if ok else 'MISS'} |")
