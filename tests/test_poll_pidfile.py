"""The poller's exclusion is its lock under ``locks/daemons/`` (issue 28, item 12), held
for the daemon's whole life: a ``poll.pid`` removed or rewritten under a running daemon
opens no window, so a second poller is refused at once and `poll status` still sees the
daemon. The pidfile is still kept for older tools (issue 18, items 6 and 7): removed, it is
taken again; locked by an older poller, it ends the daemon, saying so; not a regular file,
it is named with what it is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.dispatch.daemons import (
    DaemonLock,
    PidfileLock,
    daemon_pid,
    poller_files,
    poller_holder,
    read_pid,
)
from the_loop.errors import TheLoopError
from the_loop.layout import StateLayout


def daemon_of(loop_world: PollWorld) -> subprocess.Popen[bytes]:
    """``the-loop poll`` in a real subprocess, a cycle every 0.2 s, once it holds the lock."""
    document = json.loads(loop_world.config_path.read_text(encoding="utf-8"))
    document["polling"]["intervalSeconds"] = 0.2
    loop_world.configure(document)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(loop_world.config_path), "poll"]
    daemon = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    files = poller_files(loop_world.layout)
    assert wait_until(lambda: daemon_pid(files) == daemon.pid, timeout=30)
    assert wait_until(lambda: poller_holder(files.pidfile) == daemon.pid, timeout=30)
    return daemon


def stopped(daemon: subprocess.Popen[bytes]) -> None:
    if daemon.poll() is None:
        daemon.kill()
    daemon.wait(timeout=30)


@pytest.mark.parametrize("change", ["removed", "rewritten"])
def test_a_pidfile_removed_under_the_daemon_opens_no_window_for_a_second_poller(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    change: str,
) -> None:
    """Issue 28, item 12: the daemon is stopped (SIGSTOP) so that it cannot write its
    pidfile back; the lock it holds still excludes, and `poll status` still sees it."""
    daemon = daemon_of(world)
    pidfile = world.layout.poll_pidfile
    try:
        daemon.send_signal(signal.SIGSTOP)
        pidfile.unlink()
        if change == "rewritten":
            pidfile.write_text("999999999\n", encoding="utf-8")
        code, _, err = world.run_cli(["poll", "--once"])
        assert code == 1, err
        assert f"another poller holds {world.layout.poll_lock} (pid {daemon.pid})" in err
        code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
        status = json.loads(out)["items"][0]
        assert (code, status["running"], status["pid"]) == (0, True, daemon.pid)
        argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "poll"]
        env = {**os.environ, "GITHUB_TOKEN": TOKEN}  # a second daemon
        second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, second.stderr
        assert f"another poller holds {world.layout.poll_lock}" in second.stderr
        assert not pidfile.exists() or change == "rewritten", "nothing wrote it back"
        daemon.send_signal(signal.SIGCONT)
        assert wait_until(lambda: poller_holder(pidfile) == daemon.pid, timeout=30)
        assert daemon.poll() is None, "the daemon runs on"
    finally:
        daemon.send_signal(signal.SIGCONT)
        stopped(daemon)


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
        assert (
            code == 1 and f"another poller holds {world.layout.poll_lock} (pid {daemon.pid})" in err
        )
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


def test_a_pidfile_an_older_poller_took_ends_the_daemon_saying_so(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    daemon = daemon_of(world)
    pidfile = world.layout.poll_pidfile
    other = PidfileLock(pidfile)
    try:
        pidfile.unlink()
        other.acquire()  # an older release's poller, which knows only the pidfile
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
        PidfileLock(pidfile).acquire()
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


def test_a_poller_of_an_older_release_holding_poll_pid_still_refuses_a_new_one(
    world: PollWorld,  # noqa: F811 - the imported fixture
) -> None:
    """It knows only ``poll.pid``: its lock there still excludes, and nothing is left held."""
    older = PidfileLock(world.layout.poll_pidfile)
    older.acquire()
    try:
        code, _, err = world.run_cli(["poll", "--once"])
        assert code == 1
        assert f"another poller holds {world.layout.poll_pidfile} (pid {os.getpid()})" in err
        assert daemon_pid(poller_files(world.layout)) == os.getpid()  # found by its pidfile
    finally:
        older.release()
    assert daemon_pid(poller_files(world.layout)) is None
    assert not world.layout.poll_lock.with_suffix(".pid").exists()


def test_the_daemon_lock_is_refused_while_held_and_free_after_release(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path)
    first = DaemonLock(poller_files(layout))
    first.acquire()
    try:
        assert layout.poll_lock.with_suffix(".pid").read_text() == f"{os.getpid()}\n"
        layout.poll_pidfile.unlink()  # what the operator deletes as a stale pidfile
        with pytest.raises(TheLoopError) as refused:
            DaemonLock(poller_files(layout)).acquire()
        assert str(refused.value) == f"another poller holds {layout.poll_lock} (pid {os.getpid()})"
        assert first.check() is True  # the pidfile is written back for older tools
        assert read_pid(layout.poll_pidfile) == os.getpid()
    finally:
        first.release()
    second = DaemonLock(poller_files(layout))
    second.acquire()
    second.release()
