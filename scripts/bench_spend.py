"""The spend meter's rows of ``make bench``: a transcript that grows by one turn costs
one turn's read.

A synthetic Claude Code transcript (``tests/helpers/transcripts.py``: the real line
shapes, a message of two blocks per turn, a tool result of some 20 KB) of 5 MB and of
50 MB is metered once from a fresh state (the whole file), then grows by one turn and is
metered again from the kept state, ``--runs`` times (one turn more each). Targets: the
incremental read reads the appended bytes (and the two tail checks) and nothing more,
and takes under 1 % of the full read's time at 50 MB.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SIZES_MB = (5, 50)
FULL_RUNS = 3
#: The incremental read's share of the full read's time it must stay under, at 50 MB.
TARGET_SHARE = 0.01


def grow(path: Path, size: int) -> int:
    """Append turns to ``path`` until it holds ``size`` bytes; the turns appended."""
    from tests.helpers.transcripts import append

    turn = turn_lines()
    turns = 0
    while not path.exists() or path.stat().st_size < size:
        append(path, turn * 20)
        turns += 20
    return turns


def turn_lines() -> list[str]:
    from tests.helpers.transcripts import one_turn, user_line

    return [*one_turn(padding="p" * 600), user_line("r" * 20_000)]


def measure(size_mb: int, runs: int, scratch: Path) -> dict[str, float]:
    """The full read's and the incremental reads' medians for a transcript of ``size_mb``."""
    from tests.helpers.transcripts import append
    from the_loop.spend.meter import MeterState, PriceTable, meter

    prices = PriceTable.load()
    path = scratch / f"transcript-{size_mb}mb.jsonl"
    grow(path, size_mb * 1_000_000)
    size = path.stat().st_size
    full_times: list[float] = []
    result = None
    for _ in range(FULL_RUNS):
        began = time.perf_counter()
        result = meter([path], MeterState(), prices)
        full_times.append(time.perf_counter() - began)
    assert result is not None
    state, full_bytes = result.state, result.bytes_read
    step_times: list[float] = []
    step_bytes: list[int] = []
    appended: list[int] = []
    for _ in range(runs):
        appended.append(append(path, turn_lines()))
        began = time.perf_counter()
        step = meter([path], state, prices)
        step_times.append(time.perf_counter() - began)
        step_bytes.append(step.bytes_read)
        state = step.state
    return {
        "size": size,
        "full": statistics.median(full_times),
        "full_bytes": full_bytes,
        "step": statistics.median(step_times),
        "step_max": max(step_times),
        "step_bytes": max(step_bytes),
        "appended": max(appended),
        "overread": max(read - added for read, added in zip(step_bytes, appended, strict=True)),
    }


def rows(runs: int = 5) -> tuple[list[str], list[tuple[str, str, bool]]]:
    sys.path.insert(0, str(REPO_ROOT))
    from the_loop.spend.meter import TAIL_BYTES

    with tempfile.TemporaryDirectory(prefix="the-loop-bench-spend-") as scratch:
        found = {size: measure(size, max(runs, 5), Path(scratch)) for size in SIZES_MB}
    lines = [
        "| transcript | full read | bytes read | one turn appended | its read (median, max) "
        "| bytes read | share of the full read |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, row in found.items():
        lines.append(
            f"| {row['size'] / 1e6:.1f} MB ({size} MB asked) | {row['full'] * 1000:.0f} ms "
            f"| {row['full_bytes']:,.0f} | {row['appended']:,.0f} B "
            f"| {row['step'] * 1000:.2f} ms, {row['step_max'] * 1000:.2f} ms "
            f"| {row['step_bytes']:,.0f} | {row['step'] / row['full'] * 100:.3f} % |"
        )
    largest = found[max(SIZES_MB)]
    share = largest["step"] / largest["full"]
    checks = [
        (
            f"one appended turn reads its bytes and at most {2 * TAIL_BYTES} more",
            f"{largest['overread']:,.0f} B more",
            all(row["overread"] <= 2 * TAIL_BYTES for row in found.values()),
        ),
        (
            f"at {max(SIZES_MB)} MB, an appended turn's read < 1 % of the full read's time",
            f"{share * 100:.3f} %",
            share < TARGET_SHARE,
        ),
    ]
    return lines, checks


if __name__ == "__main__":
    table, targets = rows()
    print("\n".join(table))
    for target, measured, ok in targets:
        print(f"| {target} | {measured} | {'PASS' if ok else 'MISS'} |")
