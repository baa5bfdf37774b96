"""`the-loop check` (issue 31) over 1,000 work items, each with a session record whose
checkout holds its repository file (a lane at design, its requirements gate passed):
the whole run in its own process, and each item's lane read and reported in process.

The issue's target: p95 ≤ 20 ms per item, and no GitHub request (the command builds no
GitHub client; the run is given no token and a GitHub address nothing listens on).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import PYTHON  # the listing benchmark's interpreter

ITEMS = 1_000
#: The target of issue 31, seconds per item.
PER_ITEM = 0.020


def _root(path: Path) -> tuple[Path, list[Path]]:
    """A state root of ``ITEMS`` session records, each checkout holding a lane."""
    from the_loop.adapters.stores import stores_at
    from the_loop.layout import StateLayout
    from the_loop.ref import WorkItemRef
    from the_loop.repofile.file import WorkItemStateFile
    from the_loop.sessions.session import Session
    from the_loop.spec import lane

    layout = StateLayout(path / "state")
    stores = stores_at(layout, source="bench", on_warning=lambda _said: None)
    checkouts: list[Path] = []
    for number in range(ITEMS):
        ref = WorkItemRef.parse(f"github:octo/app#{10_000 + number}")
        checkout = path / "checkouts" / ref.slug
        checkout.mkdir(parents=True)
        link = f"https://github.com/octo/app/issues/{10_000 + number}#issuecomment-1"
        state = lane.start(WorkItemStateFile(checkout, ref).load(), at="2026-12-06T10:00:00Z")
        state = lane.done(state, "requirements", at="2026-12-06T11:00:00Z")
        state = lane.approve(
            state, "requirements", by="alice", at="2026-12-06T12:00:00Z", link=link
        )
        WorkItemStateFile(checkout, ref).save(state)
        stores.registry.register(Session(ref, "command", f"s-{number}", cwd=str(checkout)))
        checkouts.append(checkout)
    config = path / "cli-config.yaml"
    config.write_text(
        json.dumps(
            {
                "state": {"root": str(layout.root)},
                "integrations": {"github": {"apiUrl": "http://127.0.0.1:9"}},
            }
        )
    )
    return config, checkouts


def measure(runs: int) -> tuple[float, float, int]:
    """The whole run's median seconds, the in-process p95 per item, the items reported."""
    from the_loop.sessions.registry import SessionRegistry
    from the_loop.spec.checkouts import spec_checkouts
    from the_loop.spec.status import lane_status

    with tempfile.TemporaryDirectory(prefix="the-loop-bench-check-") as directory:
        config, _ = _root(Path(directory))
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
        argv = [PYTHON, "-m", "the_loop", "--config", str(config), "check", "--format", "json"]
        wholes: list[float] = []
        count = 0
        for _ in range(runs + 1):
            began = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, env=env, check=True)
            wholes.append(time.perf_counter() - began)
            count = len(json.loads(done.stdout)["items"])
        registry = SessionRegistry(Path(directory) / "state" / "local")
        each: list[float] = []
        for session in registry.list_sessions():  # found in its checkout, read, reported
            began = time.perf_counter()
            [checkout] = spec_checkouts([session])
            lane_status(checkout).to_dict()
            each.append(time.perf_counter() - began)
    p95 = sorted(each)[round(0.95 * (len(each) - 1))]
    return statistics.median(wholes[1:]), p95, count


def rows(runs: int) -> tuple[list[str], list[tuple[str, str, bool]]]:
    whole, p95, count = measure(runs)
    lines = [
        "| items | reported | whole run (median) | per item, whole run "
        "| per item p95, in process |",
        "| ---: | ---: | ---: | ---: | ---: |",
        f"| {ITEMS:,} | {count:,} | {whole * 1000:.0f} ms | {whole / ITEMS * 1000:.2f} ms "
        f"| {p95 * 1000:.2f} ms |",
    ]
    found = [
        (f"p95 ≤ {PER_ITEM * 1000:.0f} ms per item", f"{p95 * 1000:.2f} ms", p95 <= PER_ITEM),
        (
            f"whole run ≤ {PER_ITEM * 1000:.0f} ms per item",
            f"{whole / ITEMS * 1000:.2f} ms",
            whole / ITEMS <= PER_ITEM,
        ),
        (f"every item reported ({ITEMS:,})", f"{count:,}", count == ITEMS),
    ]
    return lines, found


if __name__ == "__main__":
    table, targets = rows(int(os.environ.get("RUNS", "3")))
    print("\n".join(table))
    for target, measured, ok in targets:
        print(f"{target}: {measured} {'PASS' if ok else 'MISS'}")
