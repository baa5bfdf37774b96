"""A stalled agent through ``poll --once`` (real tmux, real git, the loopback fake GitHub,
real processes): a stand-in agent that says it works (its hooks, written by the test as
Claude Code's would be) and then stops changing is said stalled once, a kill -9 after
the notice's POST included, and the next sign of progress clears it."""

from __future__ import annotations

import signal
import time

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_crash import poll_in_child
from tests.test_poll_e2e import ITEM, PollWorld, github, world  # noqa: F401 - fixtures
from tests.test_poll_usage_limit import hook, notices, started

#: 1.2 seconds without a sign of progress is a stall here.
STALL_MINUTES = 0.02
STALLED = "has shown no sign of progress"


def working_then_quiet(loop_world: PollWorld, fake: FakeGitHub) -> None:
    """Start the agent; it takes a turn (its hook) and then nothing changes."""
    started(loop_world, fake, stallMinutes=STALL_MINUTES)
    hook(loop_world, "UserPromptSubmit", prompt="Ticket")
    assert poll_in_child(loop_world) == 0  # its progress seen: the count starts
    assert notices(fake, STALLED) == []
    time.sleep(STALL_MINUTES * 60 + 0.5)


def test_an_agent_that_stops_changing_while_working_is_said_stalled_once(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    working_then_quiet(world, github)
    for _ in range(3):
        assert poll_in_child(world) == 0
        time.sleep(0.3)
    [said] = notices(github, STALLED)
    assert "`routing.stallMinutes`" in said and "`the-loop stop`" in said
    assert len(world.events_named("session.stalled")) == 1
    stem = world.registry.path_for(ITEM).stem
    assert (world.layout.local_dir / "agents" / f"{stem}.progress.json").is_file()

    hook(world, "PreToolUse", tool="Bash", detail="make test")  # it goes on
    assert poll_in_child(world) == 0
    [cleared] = world.events_named("session.stall_cleared")
    assert cleared["how"] == "it went on"
    [edited] = notices(github, "showed no sign of progress")
    assert "then it went on" in edited
    assert notices(github, STALLED) == [], "the one notice was edited, no second posted"


def test_a_poller_killed_after_posting_the_stall_notice_does_not_post_it_twice(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    working_then_quiet(world, github)
    assert poll_in_child(world, crash_at="stall-posted") == -signal.SIGKILL
    assert len(notices(github, STALLED)) == 1, "posted before the kill"
    for _ in range(2):
        assert poll_in_child(world) == 0
    assert len(notices(github, STALLED)) == 1, "found by its nonce, never posted again"
    assert len(world.events_named("session.stalled")) == 1


def test_an_agent_at_rest_or_still_changing_is_never_stalled(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github, stallMinutes=STALL_MINUTES)
    hook(world, "UserPromptSubmit", prompt="Ticket")
    for step in range(6):  # working, a hook every 0.5 s: progress
        hook(world, "PostToolUse", tool="Bash", detail=f"step {step}")
        assert poll_in_child(world) == 0
        time.sleep(0.5)
    hook(world, "Stop")  # its turn ended: idle is no stall, however long
    assert poll_in_child(world) == 0
    time.sleep(STALL_MINUTES * 60 + 0.5)
    assert poll_in_child(world) == 0
    assert notices(github, STALLED) == [] and world.events_named("session.stalled") == []
