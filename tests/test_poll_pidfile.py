"""The poller's lock lives on its pidfile's inode (issue 18, items 6 and 7): a pidfile
removed under a running daemon is taken again, so a second poller is refused and
`poll status` still sees the daemon; one replaced by another poller's ends the daemon,
saying so; and a pidfile that is not a regular file is named with what it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.dispatch.daemons import PollerLock, poller_holder
from the_loop.errors import TheLoopError


def daemon_of(loop_world: PollWorld) -> subprocess.Popen[bytes]:
    """``the-loop poll`` in a real subprocess, a cycle every 0.2 s, once it holds the lock."""
    document = json.loads(loop_world.config_path.read_text(encoding="utf-8"))
    document["polling"]["intervalSeconds"] = 0.2
    loop_world.configure(document)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(loop_world.config_path), "poll"]
    daemon = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pidfile = loop_world.layout.poll_pidfile
    assert wait_until(lambda: poller_holder(pidfile) == daemon.pid, timeout=30)
    return daemon


def stopped(daemon: subprocess.Popen[bytes]) -> None:
    if daemon.poll() is None:
        daemon.kill()
    daemon.wait(timeout=30)


def test_a_pidfile_removed_under_the_daemon_is_taken_again_and_a_second_poller_refused(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    daemon = daemon_of(world)
    pidfile = world.layout.poll_pidfile
    try:
        pidfile.unlink()
        assert wait_until(lambda: poller_holder(pidfile) == daemon.pid, timeout=30)
        code, _, err = world.run_cli(["poll", "--once"])
        assert code == 1 and f"another poller holds {pidfile} (pid {daemon.pid})" in err
        code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
        status = json.loads(out)["items"][0]
        assert (code, status["running"], status["pid"]) == (0, True, daemon.pid)
        assert wait_until(lambda: bool(world.events_named("poll.pidfile_restored")), timeout=30)
        code, _, _ = world.run_cli(["poll", "stop"])
        assert code == 0
        assert daemon.wait(timeout=30) == 0
        assert b"was removed or replaced; this poller holds it again" in daemon.communicate()[1]
    finally:
        stopped(daemon)


def test_a_pidfile_another_poller_took_ends_the_daemon_saying_so(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    daemon = daemon_of(world)
    pidfile = world.layout.poll_pidfile
    other = PollerLock(pidfile)
    try:
        pidfile.unlink()
        other.acquire()  # a second poller, started while the path was free
        assert daemon.wait(timeout=30) == 1
        err = daemon.communicate()[1].decode()
        assert f"{pidfile} was replaced under this poller: another poller holds" in err
        assert f"(pid {os.getpid()})" in err
        assert poller_holder(pidfile) == os.getpid(), "the daemon left the other's lock alone"
    finally:
        other.release()
        stopped(daemon)


@pytest.mark.parametrize("kind", ["a FIFO", "a directory", "a symbolic link"])
def test_a_pidfile_that_is_not_a_regular_file_is_named_with_what_it_is(
    tmp_path: Path, kind: str
) -> None:
    pidfile = tmp_path / "poll.pid"
    if kind == "a FIFO":
        os.mkfifo(pidfile)
    elif kind == "a directory":
        pidfile.mkdir()
    else:
        (tmp_path / "elsewhere").write_text("123\n", encoding="utf-8")
        pidfile.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TheLoopError) as refused:
        PollerLock(pidfile).acquire()
    assert str(refused.value) == (
        f"{pidfile} is {kind}, not a regular file: remove it to run the poller"
    )
    if kind == "a symbolic link":
        assert (tmp_path / "elsewhere").read_text(encoding="utf-8") == "123\n"


def test_poll_once_with_a_fifo_at_the_pidfile_exits_1_naming_it(
    world: PollWorld,  # noqa: F811 - the imported fixture
) -> None:
    world.layout.poll_pidfile.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(world.layout.poll_pidfile)
    code, _, err = world.run_cli(["poll", "--once"])
    assert code == 1
    assert f"{world.layout.poll_pidfile} is a FIFO, not a regular file" in err


def test_poll_stop_never_signals_when_the_locked_pidfile_names_no_pid(
    world: PollWorld,  # noqa: F811 - the imported fixture
) -> None:
    """A lock taken but no pid written yet reads as -1: ``kill(-1)`` would signal every
    process of the user, so ``poll stop`` refuses instead."""
    import fcntl

    pidfile = world.layout.poll_pidfile
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    with pidfile.open("w") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path)]
        done = subprocess.run([*argv, "poll", "stop"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "its pid is not written there yet" in done.stderr
