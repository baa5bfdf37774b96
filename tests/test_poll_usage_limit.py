"""A usage limit through ``poll --once`` (real tmux, real git, the loopback fake GitHub,
real processes), the agent a stand-in whose hooks the test writes as Claude Code's
would, its transcript holding the limit's error with the reset a few seconds ahead.

The block is said once with its reset, comments wait; with ``routing.resumeAfterLimit``
one continue reaches the pane after the reset, ahead of the waiting comments, exactly
once, also when the poller is SIGKILLed between recording the continue and pasting it
and at each step of its paste; without it, no continue. A 429 that names no reset is
no limit."""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_crash import poll_in_child
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.intake.events import AGENT_COMMENT_MARKER

CONTINUE = "The usage limit you stopped at has reset"
#: Where the poller is killed: after the continue was recorded, and at each step of its paste.
CRASH_STEPS = ("after-limit-continue-queued", "after-pending", "after-paste", "after-delivered")


def configure(loop_world: PollWorld, **routing: Any) -> None:
    """The world's config with ``routing`` keys added."""
    document = json.loads(loop_world.config_path.read_text(encoding="utf-8"))
    document["routing"] = {**document["routing"], **routing}
    loop_world.configure(document)


def hook(loop_world: PollWorld, event: str, **fields: object) -> None:
    """What the agent's hooks would append to its hook log."""
    stem = loop_world.registry.path_for(ITEM).stem
    log = loop_world.layout.local_dir / "agents" / f"{stem}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as appended:
        appended.write(json.dumps({"t": time.time(), "event": event, **fields}) + "\n")


def stop_at_limit(loop_world: PollWorld, reset: int) -> None:
    """The agent's turn stops at its plan's usage limit, which resets at ``reset``: its
    transcript's last message is the limit's error (as Claude Code writes it), then its
    ``StopFailure`` hook."""
    said = datetime.fromtimestamp(reset, UTC).strftime("%-I:%M%p").lower()
    words = f"You've hit your 5-hour limit · resets {said} (UTC)"
    transcript = loop_world.home / "transcript.jsonl"
    error = {
        "type": "assistant",
        "isApiErrorMessage": True,
        "error": "rate_limit",
        "apiError": "usage_limit_reached",
        "quotaLimits": {"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour"},
        "message": {"role": "assistant", "content": [{"type": "text", "text": words}]},
        "timestamp": datetime.now(UTC).isoformat(),
    }
    transcript.write_text('{"type": "user"}\n' + json.dumps(error) + "\n", encoding="utf-8")
    hook(loop_world, "UserPromptSubmit", prompt="Ticket", transcript=str(transcript))
    hook(loop_world, "StopFailure", error="rate_limit", said=words, transcript=str(transcript))


def started(loop_world: PollWorld, github: FakeGitHub, **routing: Any) -> None:  # noqa: F811
    configure(loop_world, **routing)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(loop_world) == 0
    assert wait_until(lambda: "PROMPT" in loop_world.read())


def notices(fake: FakeGitHub, words: str) -> list[str]:
    return [c.body for c in fake.comments if AGENT_COMMENT_MARKER in c.body and words in c.body]


def wait_past(moment: float) -> None:
    while time.time() <= moment:
        time.sleep(0.05)


def test_with_resume_after_limit_the_agent_is_continued_once_after_the_reset(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github, resumeAfterLimit=True)
    reset = int(time.time()) + 3
    stop_at_limit(world, reset)
    github.add_comment(REPO, 15, "A note while the limit holds.", login="alice")
    assert poll_in_child(world) == 0
    assert poll_in_child(world) == 0
    assert "A note while the limit holds." not in world.read(), "comments wait for the reset"
    [said] = notices(github, "usage limit")
    iso = datetime.fromtimestamp(reset, UTC).isoformat()
    assert f"which resets at {iso}" in said and "continues it once after the reset" in said
    [listed] = json.loads(world.run_cli(["sessions", "list", "--format", "json"])[1])["items"]
    assert (listed["agent"]["blockedOn"], listed["agent"]["resetsAt"]) == ("limit", iso)

    wait_past(reset)
    for _ in range(3):
        assert poll_in_child(world) == 0
    assert wait_until(lambda: "A note while the limit holds." in world.read())
    read = world.read()
    assert read.count(CONTINUE) == 1, "one continue, exactly"
    assert read.index(CONTINUE) < read.index("A note while the limit holds."), "it goes first"
    assert len(world.events_named("session.limit_continue_queued")) == 1
    assert len(world.events_named("session.limit_continued")) == 1
    [ended] = notices(github, "usage limit")
    assert "the limit reset" in ended, "the notice says how the block ended"


def test_without_resume_after_limit_nothing_is_continued(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github)
    reset = int(time.time()) + 2
    stop_at_limit(world, reset)
    github.add_comment(REPO, 15, "A note while the limit holds.", login="alice")
    assert poll_in_child(world) == 0
    [said] = notices(github, "usage limit")
    assert "`routing.resumeAfterLimit: true` would" in said
    wait_past(reset)
    for _ in range(3):
        assert poll_in_child(world) == 0
    assert wait_until(lambda: "A note while the limit holds." in world.read())
    assert CONTINUE not in world.read()
    assert world.events_named("session.limit_continue_queued") == []


@pytest.mark.parametrize("step", CRASH_STEPS)
def test_a_poller_killed_between_recording_the_continue_and_pasting_it_doubles_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    step: str,
) -> None:
    started(world, github, resumeAfterLimit=True)
    reset = int(time.time()) + 2
    stop_at_limit(world, reset)
    assert poll_in_child(world) == 0
    wait_past(reset)
    assert poll_in_child(world, crash_at=step) == -signal.SIGKILL
    for _ in range(3):
        assert poll_in_child(world) == 0
    assert wait_until(lambda: CONTINUE in world.read())
    time.sleep(0.3)
    assert world.read().count(CONTINUE) == 1, f"killed {step}: one continue, exactly"
    assert len(world.events_named("session.limit_continue_queued")) == 1


def test_a_429_that_names_no_reset_is_no_limit(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    started(world, github, resumeAfterLimit=True)
    hook(world, "UserPromptSubmit", prompt="Ticket")
    said = "API Error: Request rejected (429) · Number of requests has exceeded your rate limit."
    hook(world, "StopFailure", error="rate_limit", said=said)
    github.add_comment(REPO, 15, "Try again, please.", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "Try again, please." in world.read()), "delivered at once"
    assert notices(github, "usage limit") == [] and CONTINUE not in world.read()
    assert world.events_named("session.blocked") == []
