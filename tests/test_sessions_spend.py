"""``sessions spend`` (issue 29): one item per work item with what its agents spent, all
its sessions together, and its budget; the totals in the summary; ``--since`` subtracts
what each agent session had spent by then, as its ``session.spend`` events say; bad
input is one line and exit 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.portable.poll import PollState

ITEM, OTHER = "github:octo/app#15", "github:octo/app#21"


def spend(usd: float, turns: int, hours: float = 0.0, output: int = 0) -> dict[str, Any]:
    tokens = {"input": 0, "output": output, "cacheRead": 0, "cacheWrite": 0}
    return {"usd": usd, "turns": turns, "hours": hours, "tokens": tokens}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = World(tmp_path)
    made.configure({"routing": {"budget": {"usd": 2}}})
    for ref, session in ((ITEM, "s-1"), (OTHER, "s-2")):
        argv = ["sessions", "register", "--work-item", ref, "--harness", "command"]
        assert made.run(*argv, "--harness-session-id", session) == 0
    ledger = PollState(made.stores.store, registry=made.stores.registry)

    def keep(ref: str, sessions: dict[str, Any], total: dict[str, Any]) -> None:
        def change(value: dict[str, Any]) -> None:
            value["spend"] = {"sessions": sessions, "total": total}

        ledger.change(ref, change)

    keep(ITEM, {"a": spend(1.0, 3, output=100), "b": spend(1.5, 2)}, spend(2.5, 5, output=100))
    keep(OTHER, {"c": spend(0.25, 1)}, spend(0.25, 1))
    log = made.layout.event_log
    log.parent.mkdir(parents=True, exist_ok=True)
    stamps = ("2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", "2026-12-01T13:00:00Z")
    figures = (spend(0.4, 1), spend(0.6, 2), spend(0.9, 3))
    lines = [
        {"ts": ts, "work_item": ITEM, "session_id": "a", "spend": spent}
        for ts, spent in zip(stamps, figures, strict=True)
    ]
    with log.open("a", encoding="utf-8") as out:
        for line in lines:
            envelope = {"source": "test", "level": "info", "pid": 1, "event": "session.spend"}
            out.write(json.dumps({**envelope, **line}) + "\n")
    yield made


def test_each_work_item_its_spend_and_budget_and_the_totals(world: World) -> None:
    code, out, _ = world.run_cli(["sessions", "spend", "--format", "json"])
    assert code == 0
    document = json.loads(out)
    items = {item["workItem"]: item for item in document["items"]}
    assert items[ITEM]["spend"] == spend(2.5, 5, output=100)
    over = {"usd": 2.0, "hours": None, "turns": None, "state": "over-budget"}
    assert items[ITEM]["budget"] == over
    assert items[OTHER]["budget"]["state"] == "within"
    assert document["summary"]["spend"]["usd"] == 2.75 and document["summary"]["items"] == 2
    code, out, _ = world.run_cli(["sessions", "spend", "--work-item", OTHER, "--format", "json"])
    assert [i["workItem"] for i in json.loads(out)["items"]] == [OTHER]
    code, out, _ = world.run_cli(["sessions", "spend"])
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["WORK", "ITEM", "USD", "TURNS"] and len(rows) == 2


def test_since_subtracts_what_each_session_had_spent_by_then(world: World) -> None:
    argv = ["sessions", "spend", "--work-item", ITEM, "--format", "json"]
    code, out, _ = world.run_cli([*argv, "--since", "2026-12-01T12:00:00Z"])
    assert code == 0
    [item] = json.loads(out)["items"]
    # a: 1.0 now, 0.6 by noon; b: no event before noon, all of it counts
    assert round(item["spend"]["usd"], 6) == 0.4 + 1.5 and item["spend"]["turns"] == 1 + 2


def test_a_bad_since_is_one_line_and_exit_2(world: World) -> None:
    code, out, err = world.run_cli(["sessions", "spend", "--since", "yesterday-ish"])
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
