"""Issue 29's usage limit and stall, end to end with the real Claude Code (the pinned
version ``make agent`` installs), real tmux on a private socket, real git, the loopback
fake GitHub and the loopback fake of the Messages API, driven by ``poll --once`` cycles.

The agent runs as a subscriber (a ``CLAUDE_CODE_OAUTH_TOKEN``, no API key): only then
does Claude Code treat the API's answer at a plan's limit — a 429 whose
``anthropic-ratelimit-unified-*`` headers say ``rejected`` and when it resets — as a
usage limit ("You've hit your 5-hour limit · resets …"); an API key's 429 is an API error.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.fake_anthropic import (
    FakeAnthropic,
    Predicate,
    Reply,
    api_error,
    bash,
    is_turn,
    text,
    user_says,
)
from tests.fake_github import FakeGitHub
from tests.helpers.claude_agent import make_agent_home
from tests.helpers.real_loop import RealLoop, user_turns_with
from tests.test_poll_crash import _run_cli  # pyright: ignore[reportPrivateUsage]
from tests.test_real_agent_loop import (  # noqa: F401 - fixtures
    TITLE,
    anthropic,
    cycles,
    github,
    loop,
    started_and_idle,
)
from the_loop.commands.poll import CRASH_AT_VARIABLE

pytestmark = pytest.mark.slow

CONTINUE = "The usage limit you stopped at has reset"
WORK = "Please go on with the widget."
NOTE = "A note written while the limit holds."
#: How far ahead of the limit's answer its reset is: room for the block to be said, and
#: a comment to be seen waiting, first.
AHEAD_SECONDS = 20
#: The agent's zone, in which it says the reset.
PARIS = ZoneInfo("Europe/Paris")


def usage_limited(reset: float, claim: str = "five_hour") -> Reply:
    """What the Messages API answers a subscriber at the plan's limit: a 429 whose unified
    rate-limit headers say it is rejected, which window, and when it resets."""
    headers = (
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-reset", str(int(reset))),
        ("anthropic-ratelimit-unified-representative-claim", claim),
        ("x-should-retry", "false"),
    )
    message = "This request would exceed your account's rate limit. Please try again later."
    return api_error(429, "rate_limit_error", message, headers=headers)


@pytest.fixture
def subscriber(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent signs in with a subscription's token, in a zone of its own."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-fake-subscriber")
    monkeypatch.setenv("TZ", "Europe/Paris")


def hit_the_limit(real: RealLoop, fake: FakeAnthropic) -> int:
    """The agent's next turn (a comment) stops at the plan's limit; the reset it gets."""
    reset = int(time.time()) + AHEAD_SECONDS
    fake.script(usage_limited(reset), when=user_says(WORK))
    fake.script(text("Going on with the widget."), when=user_says(CONTINUE))
    real.comment(15, WORK)
    real.poll_until(lambda: real.notices(15, "usage limit"), what="the limit said on the ticket")
    return reset


def poll_in_child_of(real: RealLoop, crash_at: str) -> int:
    """``poll --once`` in a forked child, SIGKILLed at the checkpoint ``crash_at``; its exit."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            os.environ[CRASH_AT_VARIABLE] = crash_at
            log = real.layout.root.parent / "child-stderr.txt"
            code = _run_cli(["--config", str(real.config_path), "poll", "--once"], log)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def agent_of(real: RealLoop) -> dict[str, Any]:
    [item] = [i for i in real.sessions_json() if i["workItem"].endswith("#15")]
    return dict(item["agent"])


def test_a_usage_limit_is_said_with_its_reset_and_continued_once_after_it(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
    subscriber: None,
) -> None:
    loop.setup(routing={"resumeAfterLimit": True})
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)
    reset = hit_the_limit(loop, anthropic)

    iso = datetime.fromtimestamp(reset, PARIS).isoformat()
    minute = datetime.fromtimestamp(reset // 60 * 60, PARIS).isoformat()
    [notice] = loop.notices(15, "usage limit")
    # the hook's words (to the minute) can come before the transcript's line (to the second)
    assert any(f"which resets at {at}" in notice.body for at in (iso, minute)), notice.body
    assert "continues it once" in notice.body
    assert "You've hit your 5-hour limit · resets" in notice.body
    assert iso.endswith("+01:00"), "said in the agent's zone, Europe/Paris"
    # the-loop turned the agent's own continue off: it showed its dialog, answered with the wait
    loop.poll_until(lambda: loop.events_named("session.limit_answered"), what="the dialog answered")
    assert [e["dialog"] for e in loop.events_named("session.limit_answered")] == ["claude-limit"]
    assert (agent_of(loop)["blockedOn"], agent_of(loop)["resetsAt"]) == ("limit", iso)
    note = loop.comment(15, NOTE)
    cycles(loop, 2)
    assert loop.row(15, note.id)["state"] == "waiting", "comments wait for the reset"
    assert user_turns_with(anthropic, CONTINUE) == 0

    loop.poll_until(
        lambda: loop.row(15, note.id).get("state") == "delivered",
        timeout=AHEAD_SECONDS + 60,
        what="the continue, then the note",
    )
    cycles(loop, 3)
    said = [(r.at - reset, r.last_user_text()[-80:]) for r in anthropic.turns()]
    assert user_turns_with(anthropic, CONTINUE) == 1, f"one continue: {said}\n{loop.describe()}"
    conversation = max(
        (r for r in anthropic.turns() if any(NOTE in t for t in r.user_texts())),
        key=lambda r: len(r.messages),
    )
    texts = conversation.user_texts()
    at = [i for i, t in enumerate(texts) if CONTINUE in t or NOTE in t]
    assert [CONTINUE in texts[i] for i in at] == [True, False], "the continue went first"
    assert min(r.at for r in anthropic.turns() if CONTINUE in r.last_user_text()) >= reset
    assert len(loop.events_named("session.limit_continued")) == 1
    assert len(loop.notices(15, "usage limit")) == 1
    assert "the limit reset" in loop.notices(15, "usage limit")[0].body


def test_without_resume_after_limit_the_loop_continues_nothing(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
    subscriber: None,
) -> None:
    # The operator's own settings turn the agent's continue off: its dialog asks a person.
    trusted = [loop.trust_key(15)]
    make_agent_home(loop.home.root, trusted=trusted, settings={"autoContinueAtUsageLimit": False})
    started_and_idle(loop, 15, TITLE)
    reset = hit_the_limit(loop, anthropic)

    [notice] = loop.notices(15, "usage limit")
    assert "`routing.resumeAfterLimit: true` would" in notice.body
    assert "a limit dialog it shows waits for an answer in the pane" in notice.body
    note = loop.comment(15, NOTE)
    while time.time() < reset + 3:
        loop.poll()
        time.sleep(0.5)
    cycles(loop, 2)
    assert loop.events_named("session.limit_answered") == [], "its dialog is a person's"
    assert "Stop and wait for limit to reset" in loop.screen(loop.target(15))
    assert user_turns_with(anthropic, CONTINUE) == 0
    assert loop.row(15, note.id)["state"] == "waiting", "never typed into the dialog"

    loop.tmux("send-keys", "-t", f"={loop.target(15)}:", "1")  # a person answers it
    loop.poll_until(lambda: loop.row(15, note.id).get("state") == "delivered", what="the note")
    assert user_turns_with(anthropic, CONTINUE) == 0


@pytest.mark.parametrize("step", ["after-limit-continue-queued", "after-pending"])
def test_a_poller_killed_between_recording_the_continue_and_pasting_it_doubles_nothing(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
    subscriber: None,
    step: str,
) -> None:
    loop.setup(routing={"resumeAfterLimit": True})
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)
    reset = hit_the_limit(loop, anthropic)
    loop.poll_until(lambda: loop.events_named("session.limit_answered"), what="the dialog answered")
    while time.time() < reset + 1:
        time.sleep(0.2)
    killed = poll_in_child_of(loop, crash_at=step)
    assert killed == -signal.SIGKILL, "the continue was recorded, and the poller died"
    loop.poll_until(
        lambda: user_turns_with(anthropic, CONTINUE) >= 1 and "Stop" in loop.hook_names(15)[-1:],
        what="the continue taken as a turn",
    )
    cycles(loop, 3)
    assert user_turns_with(anthropic, CONTINUE) == 1, f"killed {step}: one continue"
    assert len(loop.events_named("session.limit_continue_queued")) == 1


def after_output(words: str) -> Predicate:
    """A turn whose last user message (a tool's result) holds ``words``."""
    return lambda request: is_turn(request) and words in request.last_user_text()


def test_a_held_turn_whose_busy_line_alone_moves_is_stalled_and_new_output_is_not(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    loop.setup(routing={"stallMinutes": 0.05})  # 3 seconds
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)

    # A turn of tool calls, each with new output two seconds after the last: no stall.
    steps = 5
    anthropic.script(bash("sleep 2; echo step-0-done", "Step 0"), when=user_says("the steps"))
    for step in range(1, steps):
        call = bash(f"sleep 2; echo step-{step}-done", f"Step {step}")
        anthropic.script(call, when=after_output(f"step-{step - 1}-done"))
    anthropic.script(text("All steps done."), when=after_output(f"step-{steps - 1}-done"))
    loop.comment(15, "Work through the steps.")
    loop.poll_until(
        lambda: "All steps done." in loop.screen(loop.target(15)),
        timeout=60,
        what="the steps done",
        pause=0.2,
    )
    assert loop.events_named("session.stalled") == [], "new output every 2 s: no stall"

    # A turn the fake holds: only the agent's busy line moves on its screen.
    gate = threading.Event()
    held = text("Answered at last.", gate=gate, gate_timeout=90)
    anthropic.script(held, when=user_says("Think hard"))
    loop.comment(15, "Think hard about the widget.")
    screens: set[str] = set()
    try:
        loop.poll_until(
            lambda: loop.notices(15, "no sign of progress"), timeout=40, what="the stall said"
        )
        for _ in range(4):
            screens.add(loop.screen(loop.target(15)))
            loop.poll()
            time.sleep(1.0)
    finally:
        gate.set()
    assert len(screens) > 1, "the busy line kept moving all along"
    assert len(loop.events_named("session.stalled")) == 1
    assert len(loop.notices(15, "no sign of progress")) == 1
    loop.poll_until(lambda: loop.events_named("session.stall_cleared"), what="the stall cleared")
    # Said once, then edited. A loaded machine may stall the answer's own turn past the
    # 3 s threshold: that is a second episode, said once in its turn, never a repeat.
    bodies = [c.body for c in github.comments if "no sign of progress" in c.body]
    assert 1 <= len(bodies) <= len(loop.events_named("session.stalled")), bodies
    assert "then " in bodies[0], "the first notice edited when its stall cleared"
