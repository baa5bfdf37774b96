"""Issue 29's budget with the real Claude Code (the pinned version), real tmux, real git,
the loopback fake GitHub and the loopback fake of the Messages API, driven by
``poll --once`` cycles: a budget of a few cents crossed in the middle of a tool-using
turn interrupts that turn (Escape: the agent and its conversation stay) with at most one
model request after the one that crossed; no later comment reaches the agent; one
notice; a stranger's ``budget +5`` is refused; an authorized one delivers the held
comments once, in order."""

from __future__ import annotations

import threading
import time

import pytest

from tests.fake_anthropic import FakeAnthropic, after_tool_result, bash, text, user_says
from tests.fake_github import FakeGitHub
from tests.helpers.real_loop import RealLoop, user_turns_with
from tests.test_real_agent_loop import anthropic, github, loop, start, tag  # noqa: F401

pytestmark = pytest.mark.slow

TITLE = "Fix the wobbling widget"
EXCEEDED = "<!-- the-loop:budget-exceeded"
RAISED = "<!-- the-loop:budget-raised"


def test_a_budget_crossed_mid_turn_interrupts_it_holds_comments_and_a_raise_delivers_them(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    loop.setup(routing={"budget": {"usd": 0.05}})
    loop.make_home(trusted=[15])
    gate = threading.Event()
    # The ticket's turn: a command whose answer alone costs far past $0.05 (20,000 output
    # tokens on any priced model), then a second request held at the gate, then a third.
    anthropic.script(bash("sleep 1; echo first", output_tokens=20_000), when=user_says(TITLE))
    anthropic.script(bash("echo second", gate=gate), when=after_tool_result())
    anthropic.script(bash("echo third"), when=after_tool_result())
    start(loop, 15, TITLE)
    try:
        loop.poll_until(lambda: loop.notices(15, EXCEEDED), what="the budget said", timeout=60)
        loop.poll_until(
            lambda: "Interrupted" in loop.screen(loop.target(15)), what="the turn interrupted"
        )
    finally:
        gate.set()
    [notice] = loop.notices(15, EXCEEDED)
    assert "of $0.05" in notice.body
    [exceeded] = loop.events_named("budget.exceeded")
    assert exceeded["limit"] == "usd" and exceeded["spent"] > 0.05
    crossing = next(i for i, r in enumerate(anthropic.requests) if user_says(TITLE)(r))
    time.sleep(3)  # time enough for a third request, had the turn gone on
    after = [r for r in anthropic.requests[crossing + 1 :] if r.is_messages and r.tools]
    assert len(after) <= 1, f"{len(after)} model requests after the one that crossed"
    assert not any("echo third" in str(r.messages) for r in anthropic.requests)
    assert loop.session(15) is not None, "never a kill: the session and its checkout stay"

    held = [f"Held note {tag()}", f"Then this {tag()}"]
    for words in held:
        loop.comment(15, words)
    for _ in range(3):
        loop.poll()
    assert all(user_turns_with(anthropic, words) == 0 for words in held)
    assert len(loop.notices(15, EXCEEDED)) == 1, "said once"
    [listed] = loop.sessions_json()
    assert (listed["budget"]["state"], listed["budget"]["usd"]) == ("over-budget", 0.05)

    loop.comment(15, "the-loop budget +5", login="mallory")
    loop.poll()
    assert [e["login"] for e in loop.events_named("poll.unauthorized")] == ["mallory"]
    assert loop.notices(15, RAISED) == []

    anthropic.script(text("Noted."), when=user_says(held[0]))
    anthropic.script(text("Noted too."), when=user_says(held[1]))
    loop.comment(15, "the-loop budget +5")
    loop.poll_until(
        lambda: user_turns_with(anthropic, held[1]) >= 1, what="the held comments delivered"
    )
    assert [user_turns_with(anthropic, words) for words in held] == [1, 1]
    first = next(i for i, r in enumerate(anthropic.requests) if user_says(held[0])(r))
    second = next(i for i, r in enumerate(anthropic.requests) if user_says(held[1])(r))
    assert first < second, "in order"
    assert len(loop.notices(15, RAISED)) == 1
