"""Upstream (the-loopy-one 20.10.2) reads the state file our spec lane writes, with its
``currentNode`` as we wrote it (issue 31).

Upstream's code is run, never copied: each read is a subprocess of the interpreter in
``.venv-upstream/`` (``make install-upstream``, part of ``make install``), in isolated
mode, so the ``the_loop`` it imports is upstream's package and not ours. It reads the file
two ways: its state loader, ``the_loop.graph.state.WorkItemState.load``, and its "where is
this work item", ``the_loop.core.graphs.check`` (what its ``graph status`` prints).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemState, WorkItemStateFile, upstream_spec_id
from the_loop.spec import lane

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_VENV = ROOT / ".venv-upstream"
UPSTREAM_PYTHON = UPSTREAM_VENV / "bin" / "python"
UPSTREAM_VERSION = "20.10.2"
INSTALL = "run `make install-upstream` (part of `make install`) to install it"

ITEM = WorkItemRef.parse("github:octo/app#15")
T = [f"2026-03-{day:02d}T10:00:00Z" for day in range(1, 12)]
LINK = "https://github.com/octo/app/issues/15#issuecomment-{}"

# Runs in upstream's interpreter: argv is the checkout, our file's directory, the ref.
READER = """
import importlib.metadata, json, sys
from pathlib import Path
import the_loop
from the_loop.core.graphs import check
from the_loop.graph.state import WorkItemState
checkout, directory, ref = sys.argv[1:]
loaded = WorkItemState.load(Path(directory), Path(directory).name)
report = check(checkout, ref)
print(json.dumps({
    "version": importlib.metadata.version("the-loopy-one"),
    "package": the_loop.__file__,
    "loaded": loaded.current_node,
    "workItem": loaded.work_item,
    "nodes": sorted(loaded.nodes),
    "decisions": loaded.decisions,
    "pointer": report["pointer"],
    "currentNode": report["currentNode"],
    "stateFound": report["stateFound"],
    "statePath": report["statePath"],
}))
"""

Step = tuple[str, str, Callable[[WorkItemState], WorkItemState]]
"""A transition of our lane: its id, the ``currentNode`` it leaves, the transition."""


def done(phase: str, n: int, pointer: str) -> Step:
    return (f"done-{phase}", pointer, lambda s: lane.done(s, phase, at=T[n]))


def decided(verb: str, phase: str, n: int, pointer: str) -> Step:
    who: dict[str, Any] = {"by": "octocat", "at": T[n], "link": LINK.format(n)}
    if verb == "approve":
        return (f"approve-{phase}", pointer, lambda s: lane.approve(s, phase, **who))
    if verb == "changes":
        return (f"changes-{phase}", pointer, lambda s: lane.changes(s, phase, **who, what="more"))
    return (f"skip-{phase}", pointer, lambda s: lane.skip(s, phase, **who))


START: Step = ("start", "requirements", lambda s: lane.start(s, at=T[0]))
THROUGH_DESIGN = [
    START,
    done("requirements", 1, "requirements"),
    decided("approve", "requirements", 2, "design"),
    done("design", 3, "design"),
    decided("changes", "design", 4, "design"),
    done("design", 5, "design"),
    decided("approve", "design", 6, "tasks"),
]
THROUGH = [*THROUGH_DESIGN, done("tasks", 7, "implementation"), done("implementation", 8, "done")]
# Where our lane writes a `skips` entry: the current phase skipped, and a pending one. Our
# `skips` is upstream's shape, an object keyed by node id, which its loader iterates.
SKIPPED = [
    [*THROUGH_DESIGN, decided("skip", "tasks", 7, "implementation")],
    [*THROUGH_DESIGN, decided("skip", "tasks", 7, "implementation"), THROUGH[-1]],
    [START, decided("skip", "design", 1, "requirements")],
]


def upstream_python() -> Path:
    if not UPSTREAM_PYTHON.is_file():
        pytest.fail(f"upstream is not installed: {UPSTREAM_PYTHON} is missing; {INSTALL}")
    return UPSTREAM_PYTHON


def walked(tmp_path: Path, steps: Sequence[Step]) -> WorkItemStateFile:
    """A git checkout whose state file our lane has walked through ``steps``, in
    upstream's directory for the item (``docs/specs/issue-15/``)."""
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    file = WorkItemStateFile(checkout, ITEM, spec_id=upstream_spec_id(ITEM))
    for name, pointer, transition in steps:
        assert file.update(transition).current_node == pointer, name
    return file


def read_by_upstream(file: WorkItemStateFile) -> dict[str, Any]:
    before = file.path.read_bytes()
    arguments = [str(file.checkout), str(file.directory), ITEM.ref]
    ran = subprocess.run(
        [str(upstream_python()), "-I", "-c", READER, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, f"upstream's reader failed on {file.path}:\n{ran.stderr}"
    assert file.path.read_bytes() == before, "upstream's read changed our file"
    read: dict[str, Any] = json.loads(ran.stdout)
    return read


def test_the_upstream_installed_is_the_pinned_release_apart_from_ours(tmp_path: Path) -> None:
    read = read_by_upstream(walked(tmp_path, [START]))
    assert read["version"] == UPSTREAM_VERSION, INSTALL
    assert Path(read["package"]).is_relative_to(UPSTREAM_VENV), read["package"]


def _walks(walks: Sequence[Sequence[Step]]) -> list[Any]:
    return [pytest.param(walk, id="-".join(step[0] for step in walk[-2:])) for walk in walks]


@pytest.mark.parametrize("walk", _walks([THROUGH[:count] for count in range(1, len(THROUGH) + 1)]))
def test_upstream_reads_our_current_node_at_each_point_of_the_lane(
    tmp_path: Path, walk: Sequence[Step]
) -> None:
    file = walked(tmp_path, walk)
    written: dict[str, Any] = json.loads(file.path.read_text(encoding="utf-8"))
    read = read_by_upstream(file)
    pointer = written["currentNode"]
    assert (read["loaded"], read["pointer"], read["currentNode"]) == (pointer,) * 3
    assert (read["stateFound"], read["statePath"]) == (True, str(file.path))
    assert read["workItem"] == ITEM.ref
    assert read["nodes"] == sorted(written["nodes"])
    assert read["decisions"] == written["decisions"]


@pytest.mark.parametrize("walk", _walks(SKIPPED))
def test_upstream_reads_our_current_node_after_a_skip(tmp_path: Path, walk: Sequence[Step]) -> None:
    file = walked(tmp_path, walk)
    pointer = json.loads(file.path.read_text(encoding="utf-8"))["currentNode"]
    read = read_by_upstream(file)
    assert (read["loaded"], read["pointer"], read["currentNode"]) == (pointer,) * 3
