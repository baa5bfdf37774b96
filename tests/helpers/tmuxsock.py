"""A private tmux server per test, always killed at teardown, and a polling wait."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def private_socket_name() -> str:
    """A socket name no other test (or user) shares."""
    return f"loop-test-{os.getpid()}-{uuid.uuid4().hex[:10]}"


def kill_server(socket: str, binary: str = "tmux") -> None:
    """``tmux -L <socket> kill-server``, ignoring every failure (no server, no tmux)."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [binary, "-L", socket, "kill-server"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )


def remove_socket_file(socket: str) -> None:
    """Delete the socket file tmux leaves behind in ``$TMUX_TMPDIR/tmux-<uid>/``."""
    directory = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    with contextlib.suppress(OSError):
        (directory / socket).unlink()


@contextlib.contextmanager
def private_tmux_socket() -> Iterator[str]:
    """A unique tmux socket name; its server is killed and its socket file removed after."""
    socket = private_socket_name()
    try:
        yield socket
    finally:
        kill_server(socket)
        remove_socket_file(socket)


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    """A unique tmux socket name; its server is killed when the test ends."""
    with private_tmux_socket() as socket:
        yield socket


def wait_until(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05
) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes; return its last value.

    A wait for an asynchronous state, not a timing assertion: assert on the result.
    """
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(interval)
