"""The local API (issue 30): ``/api/v1/work-items`` over a state root of 1,000 and 10,000
work items, read by a client on loopback from ``the-loop serve`` in its own process.

The p95 of a full answer (the server reads every record and joins them) and of an
unchanged list asked with ``If-None-Match`` (its 304), each over ``runs * 8`` requests
after two warm-ups, as the client sees them.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import PYTHON, generate

#: The targets issue 30 sets: (items, the full answer's p95, the 304's p95), seconds.
TARGETS = ((1_000, 0.050, 0.005), (10_000, 0.200, 0.005))


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _serve(root_config: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    argv = [PYTHON, "-m", "the_loop", "--config", str(root_config), "serve", "--port", "0"]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert server.stderr is not None
    line = server.stderr.readline().decode()
    url = line.split("listening on ", 1)[1].split(" ", 1)[0]
    token_path = line.rsplit("the token is in ", 1)[1].strip()
    return server, url, Path(token_path).read_text().strip()


def _get(url: str, token: str, etag: str | None = None) -> tuple[int, str | None, float]:
    host, port = url.removeprefix("http://").split(":")
    headers = {"Authorization": f"Bearer {token}"}
    if etag:
        headers["If-None-Match"] = etag
    began = time.perf_counter()
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("GET", "/api/v1/work-items", headers=headers)
    answer = connection.getresponse()
    answer.read()
    took = time.perf_counter() - began
    connection.close()
    return answer.status, answer.getheader("ETag"), took


def _touch_one(root_dir: Path, index: int) -> None:
    """Replace one portable record as a store does (a new file renamed over it)."""
    records = sorted((root_dir / "portable").glob("*.json"))
    record = records[index % len(records)]
    if record.name == "index.json":
        record = records[(index + 1) % len(records)]
    data = json.loads(record.read_text())
    data.setdefault("control", {})["note"] = f"bench {index}"
    temp = record.with_name(f".{record.name}.bench.tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temp, record)


def measure(size: int, runs: int, workdir: Path) -> tuple[float, float, float, int]:
    """The p95 of a full answer, of its 304, and of the answer after one record changed,
    at ``size`` items; the items answered."""
    root = generate(workdir / f"api-{size}", size)
    server, url, token = _serve(root.config)
    try:
        status, etag, _ = _get(url, token)
        _get(url, token)
        full = [_get(url, token)[2] for _ in range(runs * 8)]
        unchanged = [_get(url, token, etag) for _ in range(runs * 8)]
        changed: list[float] = []
        for index in range(runs * 4):
            _touch_one(root.path, index)
            changed.append(_get(url, token)[2])
        assert status == 200 and all(code == 304 for code, _, _ in unchanged)
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request(
            "GET", "/api/v1/work-items", headers={"Authorization": f"Bearer {token}"}
        )
        count = len(json.loads(connection.getresponse().read())["items"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    return _p95(full), _p95([took for _, _, took in unchanged]), _p95(changed), count


def rows(runs: int) -> tuple[list[str], list[tuple[str, str, bool]]]:
    lines = [
        "| items | work items answered | full p95 | 304 p95 | after one record changed, p95 |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    found: list[tuple[str, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="the-loop-bench-api-") as directory:
        for size, full_target, unchanged_target in TARGETS:
            full, unchanged, changed, count = measure(size, runs, Path(directory))
            lines.append(
                f"| {size:,} | {count:,} | {full * 1000:.1f} ms | {unchanged * 1000:.1f} ms "
                f"| {changed * 1000:.1f} ms |"
            )
            found.append(
                (
                    f"full p95 ≤ {full_target * 1000:.0f} ms at {size:,}",
                    f"{full * 1000:.1f} ms",
                    full <= full_target,
                )
            )
            found.append(
                (
                    f"304 p95 ≤ {unchanged_target * 1000:.0f} ms at {size:,}",
                    f"{unchanged * 1000:.1f} ms",
                    unchanged <= unchanged_target,
                )
            )
    return lines, found


if __name__ == "__main__":
    table, targets = rows(int(os.environ.get("RUNS", "3")))
    print("\n".join(table))
    for target, measured, ok in targets:
        print(f"{target}: {measured} {'PASS' if ok else 'MISS'}")
