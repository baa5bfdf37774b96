"""`the-loop poll` as a daemon in a real subprocess: `poll status` sees it by its lock,
`poll --once` is refused beside it, and `poll stop` ends it with exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.dispatch.daemons import running_daemons


def test_the_daemon_is_seen_by_its_lock_refuses_a_second_poller_and_stops_on_request(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["intervalSeconds"] = 0.2
    world.configure(document)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "poll"]
    daemon = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        status_file = world.layout.local_dir / "poll-status.json"
        assert wait_until(status_file.exists, timeout=30)
        code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
        status = json.loads(out)["items"][0]
        assert (code, status["running"], status["pid"]) == (0, True, daemon.pid)
        assert [d.pid for d in running_daemons(world.layout)] == [daemon.pid]
        code, _, err = world.run_cli(["poll", "--once"])
        assert code == 1 and f"(pid {daemon.pid})" in err
        code, _, _ = world.run_cli(["poll", "stop"])
        assert code == 0
        assert daemon.wait(timeout=30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
    assert json.loads(out)["items"][0]["running"] is False
    assert running_daemons(world.layout) == []
    assert [e["event"] for e in world.events_named("poll.stopped")] == ["poll.stopped"]
