"""A turn interrupted with Escape (by a person in the pane, or by the-loop at a budget)
runs no ``Stop`` hook: the screen that shows the real Claude Code's "Interrupted" line
right above its empty input box reads as ``idle``, so held comments go in after it."""

from __future__ import annotations

from the_loop.agent.screens import interrupted_at_prompt
from the_loop.agent.state import IDLE, WORKING, PaneView, derive

RULE = "─" * 80
#: The real agent's screen (2.1.332) after Escape during a Bash call.
INTERRUPTED = f"""
 ▐▛███▛█   Claude Code v2.1.332
▝▜██████▀  Opus 5.5 · API Usage Billing

❯ Ticket https://github.com/octo/app/issues/15: Fix the wobbling widget

  No result recorded for 1 call
  ⎿  $ sleep 1; echo first
  ⎿  Interrupted · What should Claude do instead?

{RULE}
❯
{RULE}
  ⏵⏵ auto mode on (shift+tab to cycle)
"""
#: The same agent a moment later, working on a new turn after the interrupted one.
WORKING_AGAIN = INTERRUPTED.replace(
    f"\n{RULE}\n❯\n",
    f"\n❯ Held note\n\n✻ Thinking… (esc to interrupt)\n\n{RULE}\n❯\n",
)
EVENTS = [
    {"t": 100.0, "event": "SessionStart"},
    {"t": 101.0, "event": "UserPromptSubmit", "prompt": "Ticket"},
    {"t": 102.0, "event": "PreToolUse", "tool": "Bash", "detail": "sleep 1; echo first"},
]


def test_an_interrupted_turn_at_an_empty_box_is_idle() -> None:
    assert interrupted_at_prompt(INTERRUPTED, "claude")
    state = derive("claude", EVENTS, PaneView(False, activity=110.0, screen=INTERRUPTED), now=120)
    assert state is not None and state.state == IDLE and state.takes_a_paste


def test_a_turn_that_began_after_it_is_working_and_other_harnesses_are_not_read_so() -> None:
    assert not interrupted_at_prompt(WORKING_AGAIN, "claude")
    pane = PaneView(False, activity=110.0, screen=WORKING_AGAIN)
    events = [*EVENTS, {"t": 111.0, "event": "UserPromptSubmit", "prompt": "Held note"}]
    state = derive("claude", events, pane, now=112)
    assert state is not None and state.state == WORKING
    assert not interrupted_at_prompt(INTERRUPTED, "command")
