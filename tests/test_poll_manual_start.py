"""A session started by hand (`sessions start`), then a comment on its ticket: the poller's
first sight of the thread baselines what came before the start, and delivers what came
after it (real tmux, real git, the loopback fake GitHub)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures


def test_a_comment_after_a_manual_start_reaches_the_agent_and_older_ones_do_not(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.now = datetime.now(UTC) - timedelta(minutes=5)  # the fake's clock, set to ours
    github.add_comment(REPO, 15, "an old remark, before any agent", login="alice")
    code, _, err = world.run_cli(["sessions", "start", "--work-item", ITEM, "--no-comment"])
    assert code == 0, err
    assert wait_until(lambda: "PROMPT" in world.read())
    github.now = datetime.now(UTC) + timedelta(seconds=2)  # GitHub's times are whole seconds
    github.add_comment(REPO, 15, "please look at the tests too", login="alice")
    report = world.poll()
    assert report["delivered"] == 1
    assert wait_until(lambda: "please look at the tests too" in world.read())
    assert "an old remark" not in world.read(), "what came before the start is history"
    world.poll()
    assert world.read().count("please look at the tests too") == 1
