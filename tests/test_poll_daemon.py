"""`the-loop poll` as a daemon in a real subprocess: `poll status` sees it by its lock,
`poll --once` is refused beside it, and `poll stop` ends it with exit 0; a SIGTERM or
SIGINT inside a cycle lets the current item finish, and the next run does the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_github import FakeComment, FakeGitHub, iso
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, TOKEN, PollWorld, github, world  # noqa: F401
from the_loop.commands.poll import PAUSE_AT_VARIABLE
from the_loop.dispatch.daemons import poller_holder, running_daemons


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


def rows_of(loop_world: PollWorld) -> dict[str, str]:
    """The item's delivery rows: comment id -> state."""
    section = loop_world.store.section(ITEM, "poll") or {}
    return {str(r["id"]): str(r["state"]) for r in section.get("deliveries", [])}


def started_session(loop_world: PollWorld, fake: FakeGitHub) -> FakeComment:
    """A session started by an authorized keyword comment; that comment."""
    start = fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert loop_world.poll()["commands"] == 1
    assert wait_until(lambda: "PROMPT" in loop_world.read())
    return start


def poller(
    loop_world: PollWorld, pause_at: str, *flags: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """``the-loop poll [flags]`` in a real subprocess, pausing at ``pause_at`` for a stop."""
    paused = loop_world.home / "paused"
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, PAUSE_AT_VARIABLE: f"{pause_at}:{paused}"}
    argv = [sys.executable, "-m", "the_loop", "--config", str(loop_world.config_path), "poll"]
    process = subprocess.Popen(
        [*argv, *flags], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return process, paused


def test_sigterm_inside_a_cycle_finishes_the_delivery_under_way_exits_0_and_leaves_the_rest(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    """The three comments waiting go in as one paste (a run); a comment written while it
    is under way is the rest, left for the next poll."""
    started_session(world, github)
    texts = ("first waiting", "second waiting", "third waiting", "written meanwhile")
    ids = [str(github.add_comment(REPO, 15, text, login="alice").id) for text in texts[:3]]
    daemon, paused = poller(world, "after-pending")
    try:
        assert wait_until(paused.exists, timeout=30)  # the first delivery is under way
        ids.append(str(github.add_comment(REPO, 15, texts[3], login="alice").id))
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0, daemon.communicate()[1]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert poller_holder(world.layout.poll_pidfile) is None
    assert rows_of(world) == {ids[0]: "delivered", ids[1]: "delivered", ids[2]: "delivered"}
    report = json.loads((world.layout.local_dir / "poll-status.json").read_text())
    assert (report["stopped"], report["delivered"]) == (True, 3)
    stopped = world.events_named("poll.stopped")
    assert [(e["signal"], e["cut_short"], e["cycles"]) for e in stopped] == [("SIGTERM", True, 1)]
    assert wait_until(lambda: texts[2] in world.read())

    assert world.poll()["delivered"] == 1
    assert wait_until(lambda: texts[3] in world.read())
    content = world.read()
    assert [content.count(text) for text in texts] == [1, 1, 1, 1]
    assert sorted(texts, key=content.index) == list(texts)


@pytest.mark.parametrize("handled", [0, 1])
def test_sigint_between_comments_ends_poll_once_with_the_cursor_short_of_the_unhandled_ones(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    handled: int,
) -> None:
    """Stopped after the overlap's re-read (0 new handled) or after the first new comment."""
    start = started_session(world, github)
    texts = ("handled before the stop", "left for later", "also left")
    comments = [start]
    for text in texts:
        github.advance(30)
        comments.append(github.add_comment(REPO, 15, text, login="alice"))
    last = comments[handled]
    once, paused = poller(world, f"after-comment-{last.id}", "--once", "--format", "json")
    try:
        assert wait_until(paused.exists, timeout=30)
        once.send_signal(signal.SIGINT)
        out, err = once.communicate(timeout=30)
    finally:
        if once.poll() is None:
            once.kill()
            once.wait()
    assert once.returncode == 0, err
    report = json.loads(out)["summary"]
    assert (report["stopped"], report["delivered"]) == (True, 0)
    queued = {str(c.id): "waiting" for c in comments[1 : handled + 1]}
    assert rows_of(world) == queued  # the others not even looked at
    cursors = json.loads((world.layout.local_dir / "poll-cursors.json").read_text())
    assert cursors["repositories"][REPO] == iso(last.updated_at)
    assert poller_holder(world.layout.poll_pidfile) is None
    stopped = world.events_named("poll.stopped")
    assert [(e["signal"], e["cut_short"]) for e in stopped] == [("SIGINT", True)]

    assert world.poll()["delivered"] == 3  # the listing is read again, not answered 304
    assert wait_until(lambda: texts[2] in world.read())
    content = world.read()
    assert [content.count(text) for text in texts] == [1, 1, 1]
