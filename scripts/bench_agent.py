"""The agent room's rows of ``make bench``: what one of Claude Code's hooks costs it, and
how long a start takes to reach the model.

- **A hook's run.** Each hook the-loop installs runs ``python -I -m the_loop.agent.hook
  <log>`` as its own process, with the hook's JSON on stdin, and Claude Code waits for
  it: its whole run, from the fork to the exit, is what the agent pays for every tool
  call. Measured as the agent runs it: a new process each time, the payload of a
  ``PreToolUse`` hook, the line appended to a hook log. Target: p95 ≤ 50 ms.
- **Start to first model request.** ``the-loop sessions start`` of an item whose
  checkout Claude Code already trusts, with the real pinned Claude Code (``make agent``)
  in a private HOME, against the loopback fake of the Messages API of ``tests/``: the
  time from the command's start to the fake's first ``POST /v1/messages``. Target:
  ≤ 15 s.
"""

from __future__ import annotations

import json
import os
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


STARTS = 5
TARGET_START_SECONDS = 15.0
REPO_ROOT = Path(__file__).resolve().parent.parent


def start_runs(runs: int = STARTS) -> list[float]:
    """Seconds from ``sessions start`` to the first model request, one fresh root each."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.fake_anthropic import running_fake_anthropic
    from tests.helpers.claude_agent import agent_env, claude_binary, git_repo, make_agent_home

    times: list[float] = []
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="the-loop-bench-start-") as scratch:
            base = Path(scratch)
            checkout = git_repo(base / "checkout")
            home = make_agent_home(base / "home", trusted=[checkout])
            socket = f"the-loop-bench-{os.getpid()}-{run}"
            config = base / "cli-config.yaml"
            config.write_text(
                "routing:\n"
                "  defaultHarness: claude\n"
                f"  spawnWorkdir: {json.dumps(str(checkout))}\n"
                f"  harnesses:\n    claude:\n      binary: {json.dumps(str(claude_binary()))}\n"
                f"  tmux:\n    socket: {socket}\n"
                f"state:\n  root: {json.dumps(str(base / 'state'))}\n",
                encoding="utf-8",
            )
            with running_fake_anthropic() as fake:
                env = agent_env(home, fake.url)
                env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
                argv = [sys.executable, "-m", "the_loop", "--config", str(config)]
                argv += ["sessions", "start", "--work-item", "github:octo/app#1", "--no-comment"]
                began = time.monotonic()
                try:
                    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
                    if done.returncode != 0:
                        raise SystemExit(f"bench: sessions start failed: {done.stderr.strip()}")
                    fake.wait_for(lambda request: request.is_messages, timeout=60)
                    times.append(time.monotonic() - began)
                finally:
                    subprocess.run(
                        ["tmux", "-L", socket, "kill-server"], capture_output=True, check=False
                    )
    return times


def rows(runs: int = RUNS) -> tuple[list[str], list[tuple[str, str, bool]]]:
    starts = sorted(start_runs())
    times = sorted(hook_runs(max(runs, RUNS)))
    p95 = times[int(len(times) * 0.95) - 1]
    lines = [
        "| what | runs | median | p95 | max |",
        "| --- | --- | --- | --- | --- |",
        f"| one hook's whole run (`python -I -m the_loop.agent.hook`) | {len(times)} | "
        f"{statistics.median(times) * 1000:.1f} ms | {p95 * 1000:.1f} ms | "
        f"{times[-1] * 1000:.1f} ms |",
        f"| `sessions start` to the first model request (trusted checkout, real Claude Code) "
        f"| {len(starts)} | {statistics.median(starts):.2f} s | — | {starts[-1]:.2f} s |",
    ]
    found = [
        ("a hook's run p95 ≤ 50 ms", f"{p95 * 1000:.1f} ms", p95 <= TARGET_P95_SECONDS),
        ("start to first model request ≤ 15 s", f"{starts[-1]:.2f} s (max)", starts[-1] <= 15.0),
    ]
    return lines, found


if __name__ == "__main__":
    table, checks = rows()
    print("\n".join(table))
    for target, measured, ok in checks:
        print(f"| {target} | {measured} | {'PASS' if ok else 'MISS'} |")
