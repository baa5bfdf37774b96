"""Crash safety: ``sessions reset --all`` killed with SIGKILL at each step boundary.

The child process runs the real CLI with one public method wrapped so that the
process kills itself right after that step completes — the same as a kill
arriving at that boundary. After every kill the state must be consistent
(never an armed item whose live session the registry forgot) and a second
reset must finish the job with exit 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import wait_until
from tests.reset_world import World
from the_loop.portable.store import POLL
from the_loop.ref import WorkItemRef

FIRST = WorkItemRef.parse("github:octo/app#15")
SECOND = WorkItemRef.parse("github:octo/app#21")
REPO = Path(__file__).resolve().parents[1]
RESET_ALL = ("sessions", "reset", "--all")

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.sessions.registry import SessionRegistry
    from the_loop.portable.store import WorkItemStore

    owner, method = {
        "close": (Dispatcher, "close_session"),
        "forget": (SessionRegistry, "forget"),
        "sections": (WorkItemStore, "write_sections"),
    }[sys.argv[1]]
    original = getattr(owner, method)

    def then_die(self, *args, **kwargs):
        original(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(owner, method, then_die)
    from the_loop.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


@pytest.fixture
def world(tmp_path: Path, tmux_socket: str) -> World:
    world = World(tmp_path, tmux_socket)
    for ref in (FIRST, SECOND):
        assert world.run("sessions", "start", "--work-item", ref.ref, "--no-comment") == 0
        world.store.write_section(ref, POLL, {"seenComments": ["c"], "commentAttempts": {}})
    tmux = world.tmux()
    for ref in (FIRST, SECOND):
        assert wait_until(lambda ref=ref: "ready" in tmux.capture(world.target(ref)))
    return world


def _consistent(world: World) -> None:
    registry, control, tmux = world.registry, world.control, world.tmux()
    for ref in (FIRST, SECOND):
        remembered = registry.find_by_work_item(ref, include_closed=True) is not None
        running = tmux.liveness(world.target(ref)) == "live"
        armed = control.start_requested(ref)
        assert not (armed and running and not remembered), f"{ref}: armed, running, forgotten"
        assert not (running and not remembered), f"{ref}: a live agent nobody remembers"


@pytest.mark.slow
@pytest.mark.parametrize("boundary", ["close", "forget", "sections"])
def test_a_reset_killed_at_a_step_boundary_leaves_consistent_state_and_a_rerun_finishes(
    world: World, boundary: str
) -> None:
    """Crash in the middle (quality.md): SIGKILL after close, after forget, after the
    section write of the first item; the state stays consistent; reset again → exit 0."""
    log_before = world.layout.event_log.read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, boundary, "--config", str(world.config_path), *RESET_ALL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    _consistent(world)
    assert world.layout.event_log.read_bytes().startswith(log_before)
    assert world.run("sessions", "reset", "--all") == 0
    _consistent(world)
    registry, store, tmux = world.registry, world.store, world.tmux()
    for ref in (FIRST, SECOND):
        assert registry.find_by_work_item(ref, include_closed=True) is None
        assert not store.path_for(ref).exists()
        assert tmux.liveness(world.target(ref)) in ("dead", "absent")
        assert not world.worktree(ref).exists()
    assert not world.layout.portable_index.exists()
    assert world.run("sessions", "reset", "--all") == 1
    assert os.path.exists(world.layout.event_log)
