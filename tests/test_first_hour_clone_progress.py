"""The first `sessions start` shows git's progress while it clones, on a terminal only
(issue 18, item 21): a real start in a subprocess, its stderr a pseudo-terminal, against a
local bare repository reached through git's own transport (``file://``)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.helpers.world import World

ITEM = "github:octo/app#15"
AGENT = ["bash", "-c", "echo agent ready; exec sleep 600"]
#: What git says while it clones with ``--progress`` (and never without it, on a pipe).
PROGRESS = ("Cloning into", "Receiving objects")


@pytest.fixture
def world(tmp_path: Path, tmux_socket: str) -> World:  # noqa: F811 - the imported fixture
    remote = make_remote(tmp_path, "app")
    routing = {
        "defaultHarness": "command",
        "harnesses": {"command": {"argv": AGENT}},
        "workspace": {
            "root": str(tmp_path / "workspaces"),
            "repositories": {"octo/app": remote.as_uri()},
        },
        "tmux": {"socket": tmux_socket},
    }
    return World(tmp_path / "world", {"routing": routing})


def start_argv(world: World) -> list[str]:
    return [
        *(sys.executable, "-m", "the_loop", "--config", str(world.config_path)),
        *("sessions", "start", "--work-item", ITEM, "--no-comment"),
    ]


def run_with_stderr_on_a_terminal(argv: list[str]) -> tuple[int, str, str]:
    """Run ``argv`` with its stderr a pseudo-terminal; ``(exit code, stdout, the terminal's
    text)``. Reads until the process has exited and the terminal has nothing more."""
    leader, follower = os.openpty()
    with subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower
    ) as process:
        os.close(follower)
        seen = bytearray()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            readable, _, _ = select.select([leader], [], [], 0.2)
            if not readable:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            seen.extend(chunk)
        assert process.stdout is not None
        out = process.stdout.read().decode()
        code = process.wait(timeout=60)
    os.close(leader)
    return code, out, seen.decode(errors="replace")


def test_the_first_start_on_a_terminal_shows_gits_progress_while_it_clones(world: World) -> None:
    code, out, terminal = run_with_stderr_on_a_terminal(start_argv(world))
    assert code == 0, terminal
    assert out.startswith(f"{ITEM}: started command session")
    for words in PROGRESS:
        assert words in terminal, terminal


def test_the_first_start_without_a_terminal_clones_quietly(world: World) -> None:
    started = subprocess.run(
        start_argv(world),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith(f"{ITEM}: started command session")
    assert not [words for words in PROGRESS if words in started.stderr], started.stderr
