"""The poll cycle's rows of ``make bench``, against the loopback fake GitHub of ``tests/``.

Each cycle is ``the-loop poll --once`` run in this process (the fake serves from a
thread of it). Measured: an idle cycle's requests and the files it changes under
``portable/``; the requests of a cycle with one new comment among 50 watched items;
and the idle cycle's time at 500 and at 3,000 watched items.

The items are created a minute apart, as on a real repository (where thousands of
items never all change within the poller's two-minute overlap), and the first two
cycles (the full read that builds the kept listing, then the first read of what
changed) are not measured: the idle cycle is the one after them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.fake_github import FakeGitHub, serve  # noqa: E402
from the_loop.cli import main as cli_main  # noqa: E402

TOKEN = "ghp_bench-token"
REPO = "octo/app"
ITEM_SPACING_SECONDS = 60


@contextlib.contextmanager
def fake_with_items(count: int, comments: bool) -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "bench"})) as fake:
        for number in range(1, count + 1):
            fake.add_issue(REPO, number, title=f"item {number}", labels=("the-loop",))
            if comments:
                fake.add_comment(REPO, number, f"note on {number}", login="alice")
            fake.advance(ITEM_SPACING_SECONDS)
        yield fake


def write_config(home: Path, fake: FakeGitHub) -> Path:
    config = {
        "state": {"root": str(home / "state")},
        "routing": {"authorizedUsers": ["alice"]},
        "polling": {"repositories": [REPO], "labels": ["the-loop"]},
        "integrations": {"github": {"apiUrl": fake.url}},
    }
    path = home / "cli-config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def poll_once(config: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli_main(["--config", str(config), "poll", "--once", "--format", "json"])
    if code != 0:
        raise SystemExit(f"bench: poll --once exited {code}")
    return json.loads(out.getvalue())["summary"]


def portable_files(home: Path) -> dict[str, tuple[int, int]]:
    root = home / "state" / "portable"
    found = (p for p in root.rglob("*") if p.is_file()) if root.exists() else iter(())
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in found}


def idle(count: int, runs: int) -> tuple[dict[str, Any], int, float]:
    """Requests of an idle cycle, files it changed under portable/, median seconds."""
    with tempfile.TemporaryDirectory() as tmp, fake_with_items(count, comments=False) as fake:
        config = write_config(Path(tmp), fake)
        poll_once(config)
        poll_once(config)
        before = portable_files(Path(tmp))
        times: list[float] = []
        report: dict[str, Any] = {}
        for _ in range(runs):
            started = time.perf_counter()
            report = poll_once(config)
            times.append(time.perf_counter() - started)
        changed = sum(1 for k, v in portable_files(Path(tmp)).items() if before.get(k) != v)
        return report, changed, statistics.median(times)


def one_new_comment(count: int = 50) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, fake_with_items(count, comments=True) as fake:
        config = write_config(Path(tmp), fake)
        poll_once(config)  # first sight of every item: each thread baselined
        poll_once(config)
        fake.advance(60)
        fake.add_comment(REPO, count // 2, "one new comment", login="alice")
        return poll_once(config)


#: The pull-request bench: watched pull requests, and the work items with a live
#: session here, each linked to one of them.
PULLS, LIVE = 50, 10


@contextlib.contextmanager
def fake_with_pulls() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "bench"})) as fake:
        for number in range(1, PULLS + 1):
            fake.add_pull(
                REPO, number, title=f"pull {number}", head=f"feature-{number}", login="bot"
            )
            fake.set_labels(REPO, number, ("the-loop",))
            fake.advance(ITEM_SPACING_SECONDS)
        for number in range(101, 101 + LIVE):
            fake.add_issue(REPO, number, title=f"item {number}", labels=("the-loop",))
            fake.advance(ITEM_SPACING_SECONDS)
        yield fake


def cli(config: Path, *argv: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli_main(["--config", str(config), *argv])
    if code != 0:
        raise SystemExit(f"bench: {' '.join(argv)} exited {code}")


def pulls() -> tuple[dict[str, Any], dict[str, Any]]:
    """The idle cycle and the cycle one review of 20 inline comments arrives in, with
    :data:`PULLS` watched pull requests of which :data:`LIVE` belong to live sessions,
    every one of them pushed to in the cycle before (so the listing's overlap shows
    them all again: only the reviewed one's reviews are to be read)."""
    with tempfile.TemporaryDirectory() as tmp, fake_with_pulls() as fake:
        home = Path(tmp)
        config = write_config(home, fake)
        for offset in range(LIVE):
            item = f"github:{REPO}#{101 + offset}"
            cli(
                config,
                "sessions",
                "register",
                "--work-item",
                item,
                "--harness",
                "command",
                "--harness-session-id",
                f"bench-{offset}",
                "--cwd",
                str(home),
            )
            cli(
                config,
                "sessions",
                "link-pr",
                "--work-item",
                item,
                "--pull-request",
                str(1 + offset),
            )
        poll_once(config)
        poll_once(config)
        fake.advance(600)
        poll_once(config)
        idle_report = poll_once(config)
        for offset in range(LIVE):  # every live one moves, inside the next read's overlap
            fake.advance(5)
            fake.push(REPO, 1 + offset)
        poll_once(config)
        fake.advance(30)
        comments = [
            {"path": f"src/m{n}.py", "line": n + 1, "body": f"nit {n}", "diff_hunk": "@@ -1 +1 @@"}
            for n in range(20)
        ]
        fake.add_review(REPO, 5, login="alice", state="CHANGES_REQUESTED", comments=comments)
        return idle_report, poll_once(config)


def rows(runs: int = 5) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """The markdown rows and the (target, measured, passed) checks of the poll cycle."""
    os.environ["GITHUB_TOKEN"] = TOKEN
    idle_small, changed, small_s = idle(500, runs)
    idle_big, changed_big, big_s = idle(3000, runs)
    news = one_new_comment()
    pulls_idle, review = pulls()
    lines = [
        "| watched items | poll cycle | requests | answered 304 | median s |",
        "| ---: | --- | ---: | ---: | ---: |",
        f"| 500 | idle | {idle_small['requests']} | {idle_small['not_modified']} | {small_s:.3f} |",
        f"| 3,000 | idle | {idle_big['requests']} | {idle_big['not_modified']} | {big_s:.3f} |",
        f"| 50 | one new comment | {news['requests']} | {news['not_modified']} | – |",
        f"| {PULLS} PRs, {LIVE} live | idle | {pulls_idle['requests']} | "
        f"{pulls_idle['not_modified']} | – |",
        f"| {PULLS} PRs, {LIVE} live | one review of 20 comments | {review['requests']} | "
        f"{review['not_modified']} | – |",
    ]
    idle_requests = all(r["requests"] == r["not_modified"] for r in (idle_small, idle_big))
    found = [
        (
            "idle cycle: every request a 304",
            f"{idle_small['not_modified']} of {idle_small['requests']}, "
            f"{idle_big['not_modified']} of {idle_big['requests']}",
            idle_requests,
        ),
        (
            "idle cycle: files changed under portable/ = 0",
            f"{changed + changed_big}",
            changed + changed_big == 0,
        ),
        (
            "one new comment among 50 watched ≤ 4 requests",
            f"{news['requests']}",
            news["requests"] <= 4 and news["delivered"] + news["seen"] >= 1,
        ),
        ("idle cycle at 3,000 ≤ 3× at 500", f"{big_s / small_s:.2f}×", big_s <= 3 * small_s),
        (
            f"idle cycle, {PULLS} PRs of which {LIVE} live: all 304, ≤ 2 + {LIVE} requests",
            f"{pulls_idle['not_modified']} of {pulls_idle['requests']}",
            pulls_idle["requests"] == pulls_idle["not_modified"]
            and pulls_idle["requests"] <= 2 + LIVE,
        ),
        (
            "one review of 20 inline comments: ≤ 6 requests beyond the idle cycle's",
            f"{review['requests'] - pulls_idle['requests']} "
            f"({review['requests']} in all; {review['reviews']} review queued)",
            review["requests"] - pulls_idle["requests"] <= 6 and review["reviews"] == 1,
        ),
    ]
    return lines, found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="idle cycles measured (median)")
    table, results = rows(parser.parse_args().runs)
    print("\n".join(table))
    for target, measured, passed in results:
        print(f"| {target} | {measured} | {'PASS' if passed else 'MISS'} |")


if __name__ == "__main__":
    main()
