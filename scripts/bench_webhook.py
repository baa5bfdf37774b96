"""The webhook receiver's rows of ``make bench``: how fast it answers 202 under load.

``the-loop webhook`` runs as its own process on a loopback port over a temporary state
root. 50 senders (one ``asyncio`` client process, so no sender waits on another's thread)
each send signed ``issue_comment`` deliveries of about 7 KiB one after another, a new
connection each, as GitHub does; each answer's time runs from the connect to the last
byte of the 202. Every delivery is written and fsynced to the inbox before its answer, so
this is the receiver's durable path. Target: p99 ≤ 100 ms.

Then comment-to-pane latency (``scripts/bench_pane.py``): through this receiver with real
tmux and a stand-in agent (target: p95 ≤ 2 s), beside the poller's at a short interval.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BIN = Path(sys.executable).parent
THE_LOOP = str(BIN / "the-loop")
SECRET = "bench-secret"
SENDERS = 50
PER_SENDER = 40
TARGET_P99_MS = 100.0


def payload(number: int) -> bytes:
    """An ``issue_comment`` delivery of the size GitHub sends (issue, comment, repository)."""
    user = {"login": "alice", "id": 1, "type": "User", "site_admin": False,
            "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4"}  # fmt: skip
    repository = {"id": 7, "full_name": "octo/app", "private": False, "owner": user,
                  "description": "x" * 200, "default_branch": "main"}  # fmt: skip
    document = {
        "action": "created",
        "issue": {"number": number, "title": "Fix the widget", "state": "open", "user": user,
                  "labels": [{"name": "the-loop"}], "body": "Steps to reproduce. " * 60},
        "comment": {"id": 1000 + number, "user": user, "body": "Please also cover it. " * 80,
                    "created_at": "2026-12-01T09:00:00Z", "updated_at": "2026-12-01T09:00:00Z"},
        "repository": repository,
        "sender": user,
    }  # fmt: skip
    return json.dumps(document).encode()


def delivery(body: bytes) -> bytes:
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    head = (
        "POST /gh-webhook HTTP/1.1\r\nHost: bench\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
        "Content-Type: application/json\r\nX-GitHub-Event: issue_comment\r\n"
        f"X-GitHub-Delivery: {uuid.uuid4()}\r\nX-Hub-Signature-256: sha256={digest}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def send(port: int, data: bytes) -> float:
    """Seconds from connect to the whole answer; raises unless it is a 202."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    answer = await reader.read()
    elapsed = time.perf_counter() - started
    writer.close()
    if not answer.startswith(b"HTTP/1.1 202 "):
        raise SystemExit(f"bench: the receiver answered {answer[:80]!r}")
    return elapsed


async def senders(port: int, count: int, each: int) -> tuple[list[float], float]:
    bodies = [delivery(payload(n)) for n in range(count * each)]

    async def one_sender(first: int) -> list[float]:
        return [await send(port, bodies[first + n]) for n in range(each)]

    started = time.perf_counter()
    results = await asyncio.gather(*(one_sender(s * each) for s in range(count)))
    return [t for times in results for t in times], time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_receiver(home: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    config = home / "cli-config.yaml"
    config.write_text(
        json.dumps({"state": {"root": str(home / "state")}, "webhook": {"port": port}}), "utf-8"
    )
    # No GitHub token (``bench_poll`` sets one in this process): no feeder runs, so the
    # deliveries wait in the inbox, to be counted, and nothing but the answers is timed.
    hidden = ("GITHUB_TOKEN", "GH_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env["THE_LOOP_GH_WEBHOOK_SECRET"] = SECRET
    argv = [THE_LOOP, "--config", str(config), "webhook"]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("bench: the receiver did not start")


def stored(home: Path) -> int:
    """How many deliveries the inbox holds (as the next release will read them)."""
    from the_loop.webhook.inbox import Inbox

    local = home / "state" / "local"
    return len(Inbox(local / "webhook-inbox", lock_path=home / "inbox.lock").pending())


def percentile(times: list[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def measure(runs: int) -> dict[str, float]:
    """p50, p99 and max (ms) of the 202s over ``runs`` rounds, and deliveries a second."""
    home = Path(tempfile.mkdtemp(prefix="the-loop-bench-webhook-"))
    process, port = start_receiver(home)
    try:
        asyncio.run(senders(port, SENDERS, 4))  # warm-up, not measured
        times: list[float] = []
        rates: list[float] = []
        for _ in range(runs):
            round_times, wall = asyncio.run(senders(port, SENDERS, PER_SENDER))
            times += round_times
            rates.append(len(round_times) / wall)
        expected = SENDERS * 4 + runs * SENDERS * PER_SENDER
        if stored(home) != expected:
            raise SystemExit(f"bench: the inbox holds {stored(home)} of {expected} deliveries")
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "deliveries": float(len(times)),
        "p50": percentile(times, 0.50) * 1000,
        "p99": percentile(times, 0.99) * 1000,
        "max": max(times) * 1000,
        "rate": statistics.median(rates),
    }


def fsync_floor(directory: Path, count: int = 200) -> tuple[float, float]:
    """p50 and p99 (ms) of one small append and fsync on this disk, as the inbox does."""
    from the_loop.fsio import append_lines

    times: list[float] = []
    for number in range(count):
        started = time.perf_counter()
        append_lines(directory / "fsync-probe.jsonl", f"{number}\n".encode(), sync=True)
        times.append(time.perf_counter() - started)
    return percentile(times, 0.50) * 1000, percentile(times, 0.99) * 1000


def rows(runs: int = 5, pane: bool = True) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """The markdown rows and the (target, measured, passed) checks of the receiver: its
    202s, then (``pane``) comment to pane through it and through the poller."""
    found = measure(max(1, runs))
    with tempfile.TemporaryDirectory(prefix="the-loop-bench-fsync-") as scratch:
        floor_p50, floor_p99 = fsync_floor(Path(scratch))
    lines = [
        "| senders | deliveries | 202 p50 ms | 202 p99 ms | max ms | deliveries/s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {SENDERS} | {found['deliveries']:,.0f} | {found['p50']:.1f} | {found['p99']:.1f} | "
        f"{found['max']:.1f} | {found['rate']:.0f} |",
        "",
        f"The disk alone: one small append and fsync takes {floor_p50:.2f} ms (p50), "
        f"{floor_p99:.2f} ms (p99).",
    ]
    checks = [
        (
            f"webhook 202 under {SENDERS} concurrent senders: p99 ≤ {TARGET_P99_MS:.0f} ms",
            f"{found['p99']:.1f} ms (p50 {found['p50']:.1f} ms)",
            found["p99"] <= TARGET_P99_MS,
        )
    ]
    if pane:
        import bench_pane

        pane_lines, pane_checks = bench_pane.rows()
        lines += ["", *pane_lines]
        checks += pane_checks
    return lines, checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="measured rounds")
    parser.add_argument("--no-pane", action="store_true", help="the 202s only")
    args = parser.parse_args()
    lines, checks = rows(args.runs, pane=not args.no_pane)
    print("\n".join(lines))
    for target, measured, passed in checks:
        print(f"{target}: {measured}: {'PASS' if passed else 'MISS'}")
    return 0 if all(passed for _, _, passed in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
