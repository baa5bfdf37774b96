"""Three processes move one work item's lane at once: `the-loop done` through the CLI and
a person's decisions through the repository file, 300 random operations each. Every
change is one locked read-modify-write, so nothing one of them did is lost. Only the
requirements are ever approved here, so the lane keeps reaching gates to decide through
all 900 operations instead of finishing early."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import random
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import git
from tests.helpers.world import World
from the_loop.cli import main
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.spec import lane
from the_loop.spec.lane import LaneError, read_lane

ITEM = WorkItemRef.parse("github:octo/app#15")
SPEC = "docs/specs/github-octo-app-15"
ARTIFACTS = {
    "requirements.md": "## Problem\n\n## Requirements\n\n## Acceptance criteria\n",
    "design.md": "## Design\n\n## Testing plan\n",
    "tasks.md": "## Tasks\n",
}
OPERATIONS = 300
_CONTEXT = multiprocessing.get_context("spawn")


def _operate(checkout: str, config: str, worker: int, go: Event, results: str) -> None:
    """``OPERATIONS`` random operations; what took effect is written to ``results``."""
    os.chdir(checkout)
    chance = random.Random(worker)
    state_file = WorkItemStateFile(Path(checkout), ITEM)
    applied: list[dict[str, Any]] = []
    go.wait()
    for number in range(OPERATIONS):
        mark = f"p{worker}-{number}"
        roll = chance.random()
        if roll < 0.55:
            phase = chance.choice(lane.PHASES)
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                code = main(["--config", config, "done", phase])
            assert code in (0, 2), code
            if code == 0:
                applied.append({"op": "done", "phase": phase})
            continue
        if roll < 0.95:
            op, decide = "changes", _changes(mark)
        elif roll < 0.98:
            op, decide = "approve", _approve(mark)
        else:
            op, decide = "skip", _skip(chance.choice(("tasks", "implementation")), mark)
        try:
            state_file.update(decide)
        except LaneError:
            continue
        applied.append({"op": op, "mark": mark})
    Path(results).write_text(json.dumps(applied), encoding="utf-8")


def _current(state: Any) -> str:
    return str(state.current_node)


def _changes(mark: str) -> Any:
    def change(state: Any) -> Any:
        return lane.changes(state, _current(state), by="o", at="t", link=mark, what=mark)

    return change


def _approve(mark: str) -> Any:
    def change(state: Any) -> Any:
        if _current(state) != "requirements":
            raise LaneError("only the requirements are approved, in this test")
        return lane.approve(state, _current(state), by="o", at="t", link=mark)

    return change


def _skip(phase: str, mark: str) -> Any:
    """A skip of a phase ahead only, so that no skip takes the place of a decision."""

    def change(state: Any) -> Any:
        if phase == state.current_node:
            raise LaneError("not the current phase, in this test")
        return lane.skip(state, phase, by="o", at="t", link=mark)

    return change


@pytest.mark.slow
def test_three_processes_moving_one_lane_lose_nothing(tmp_path: Path) -> None:
    world = World(tmp_path / "home")
    checkout = tmp_path / "app"
    (checkout / SPEC).mkdir(parents=True)
    for name, text in ARTIFACTS.items():
        (checkout / SPEC / name).write_text(text, encoding="utf-8")
    git(checkout, "init", "--quiet")
    git(checkout, "add", ".")
    git(checkout, "commit", "--quiet", "-m", "artifacts")
    register = ["sessions", "register", "--work-item", ITEM.ref, "--harness", "command"]
    assert world.run_cli([*register, "--harness-session-id", "s", "--cwd", str(checkout)])[0] == 0
    state_file = WorkItemStateFile(checkout, ITEM)
    state_file.update(lambda state: lane.start(state, at="t0"))

    go = _CONTEXT.Event()
    results = [tmp_path / f"applied-{worker}.json" for worker in range(3)]
    processes = [
        _CONTEXT.Process(
            target=_operate,
            args=(str(checkout), str(world.config_path), worker, go, str(results[worker])),
        )
        for worker in range(3)
    ]
    for process in processes:
        process.start()
    go.set()
    for process in processes:
        process.join(timeout=300)
        assert process.exitcode == 0
    applied = [entry for path in results for entry in json.loads(path.read_text("utf-8"))]

    state = state_file.load()
    assert isinstance(state.current_node, str)
    decided = [entry for entries in state.decisions.values() for entry in entries]
    marks = {
        op: sorted(entry["mark"] for entry in applied if entry["op"] == op)
        for op in ("changes", "approve", "skip")
    }
    assert sorted(d["link"] for d in decided if d["outcome"] == "changes") == marks["changes"]
    assert sorted(d["link"] for d in decided if d["outcome"] == "approved") == marks["approve"]
    assert sorted(skip["link"] for skip in state.skips.values()) == marks["skip"]
    assert len(marks["changes"]) > 50, f"the processes took turns deciding: {len(marks['changes'])}"
    dones = {phase: sum(1 for e in applied if e.get("phase") == phase) for phase in lane.PHASES}
    read = read_lane(state)
    for phase in lane.GATED:
        waiting = 1 if read.node(phase).status == "waiting" else 0
        assert dones[phase] == len(state.decisions.get(phase, [])) + waiting, phase
    for phase in ("tasks", "implementation"):
        assert dones[phase] == (1 if read.node(phase).by == "agent" else 0), phase
    events = world.layout.event_log.read_text(encoding="utf-8").splitlines()
    done_events = [line for line in events if '"spec.phase_done"' in line]
    assert len(done_events) == sum(dones.values())
