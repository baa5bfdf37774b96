"""The dialog patterns (the_loop/agent/screens.json), each pinned against a screen captured
from the real Claude Code (tests/screens/claude-<version>/, made by
scripts/capture_agent_screens.py): a release that rewords a dialog fails the test named
after it, not the loop. And the hook entry, and the state derived from hooks and pane."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from the_loop.agent.hook import entry
from the_loop.agent.screens import (
    at_input_prompt,
    find_dialog,
    input_text,
    pattern_named,
    patterns,
)
from the_loop.agent.state import AgentState, PaneView, derive, read_hook_log, took_as_turn

VERSION = (Path(__file__).parent / "agent-version.txt").read_text(encoding="utf-8").strip()
SCREENS = Path(__file__).parent / "screens" / f"claude-{VERSION}"

DIALOGS = {
    "trust": ("claude-trust", "trust"),
    "api-key": ("claude-api-key", "api-key"),
    "bypass-warning": ("claude-bypass-warning", "bypass-warning"),
    "permission-bash": ("claude-permission", "permission"),
    "permission-edit": ("claude-permission", "permission"),
    "question": ("claude-question", "question"),
    "onboarding-theme": ("claude-onboarding", "notice"),
    "onboarding-security": ("claude-security-notes", "notice"),
}
NO_DIALOG = ("idle", "working", "working-queued", "interrupted", "retrying", "limit", "notice")


def state_of(found: AgentState | None) -> str:
    assert found is not None
    return found.state


def screen(name: str) -> str:
    return (SCREENS / f"{name}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(DIALOGS))
def test_each_dialog_of_the_real_agent_is_found_by_its_pattern(name: str) -> None:
    found = find_dialog(screen(name), "claude")
    assert found is not None, f"{name}: no pattern matches the captured screen"
    assert (found.pattern.name, found.pattern.blocked_on) == DIALOGS[name]
    assert found.text.strip()


@pytest.mark.parametrize("name", NO_DIALOG)
def test_a_screen_at_the_input_box_is_no_dialog(name: str) -> None:
    assert find_dialog(screen(name), "claude") is None
    assert at_input_prompt(screen(name), "claude")


def test_dialog_words_in_the_conversation_block_nothing_while_the_input_box_shows() -> None:
    idle = screen("idle")
    quoted = "❯ Do you want to proceed?\n ❯ 1. Yes\n Esc to cancel\n Yes, I trust this folder\n"
    assert find_dialog(quoted + idle, "claude") is None


def test_every_pattern_is_pinned_by_a_captured_screen() -> None:
    pinned = {name for name, _ in DIALOGS.values()}
    assert {pattern.name for pattern in patterns()} == pinned


def test_the_trust_dialog_is_confirmed_only_once_yes_is_highlighted() -> None:
    answer = pattern_named("claude-trust").answers["yes"]
    shown = screen("trust")
    assert not answer.chosen(shown), "its default is 'No, exit'"
    moved = shown.replace("❯ No, exit", "  No, exit").replace(
        "  Yes, I trust this folder", "❯ Yes, I trust this folder"
    )
    assert answer.chosen(moved)
    assert pattern_named("claude-permission").answers["yes"].keys == ("1",)
    assert "yes" not in pattern_named("claude-api-key").answers, "never answered by the-loop"


def test_a_hook_line_keeps_what_the_state_needs_and_no_more() -> None:
    payload = {
        "hook_event_name": "PermissionRequest",
        "session_id": "s",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /tmp/x", "description": "d"},
        "permission_suggestions": [{"type": "setMode"}],
    }
    line = entry(payload, 12.5)
    assert line == {
        "t": 12.5,
        "event": "PermissionRequest",
        "tool": "Bash",
        "detail": "rm -rf /tmp/x",
        "session": "s",
    }
    assert entry("not an object", 1.0) == {"t": 1.0, "event": ""}
    kept = entry({"hook_event_name": "UserPromptSubmit", "prompt": "x" * 9000}, 1)["prompt"]
    assert kept == "x" * 600


def test_the_hook_entry_appends_one_line_and_never_fails_the_agent(tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    argv = [sys.executable, "-I", "-m", "the_loop.agent.hook", str(log)]
    for stdin in (b'{"hook_event_name": "Stop"}', b"not json", b""):
        done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
        assert (done.returncode, done.stdout) == (0, b"")
    assert [json.loads(line)["event"] for line in log.read_text().splitlines()] == ["Stop", "", ""]
    unwritable = subprocess.run(
        [*argv[:-1], str(tmp_path / "no" / "such" / "dir" / "log")],
        input=b"{}",
        capture_output=True,
        check=False,
    )
    assert (unwritable.returncode, unwritable.stdout, unwritable.stderr) == (0, b"", b"")


def test_the_state_follows_the_hooks_and_the_screen() -> None:
    live = PaneView(dead=False, activity=100.0, screen=screen("idle"))
    assert state_of(derive("claude", [], live, now=110.0)) == "starting"
    silent = derive("claude", [], live, now=131.0)
    assert state_of(silent) == "idle", "at its input box 30 s with no hook: hooks are off"
    turn = [{"t": 101.0, "event": "SessionStart"}, {"t": 102.0, "event": "UserPromptSubmit"}]
    assert state_of(derive("claude", turn, live, now=200.0)) == "working"
    done = [*turn, {"t": 103.0, "event": "Stop"}]
    assert state_of(derive("claude", done, live, now=200.0)) == "idle"
    asked = [*done, {"t": 104.0, "event": "PermissionRequest", "tool": "Bash", "detail": "ls"}]
    dialog = PaneView(dead=False, activity=104.0, screen=screen("permission-bash"))
    blocked = derive("claude", asked, dialog, now=105.0)
    assert blocked is not None
    assert (blocked.state, blocked.blocked_on, blocked.dialog) == (
        "blocked",
        "permission",
        "claude-permission",
    )
    assert blocked.prompt.startswith("Bash: ls") and "Do you want to proceed?" in blocked.prompt
    answered = derive(
        "claude", asked, PaneView(dead=False, screen=screen("interrupted")), now=120.0
    )
    assert answered is not None and answered.state == "idle", "answered in the pane, no hook after"
    still = derive("claude", asked, PaneView(dead=False, screen=""), now=104.5)
    assert still is not None and still.state == "blocked", "the hook before the screen draws it"
    trust = derive("claude", [], PaneView(dead=False, screen=screen("trust")), now=1.0)
    assert trust is not None and (trust.state, trust.blocked_on) == ("blocked", "trust")
    ended = [*done, {"t": 105.0, "event": "SessionEnd", "reason": "other"}]
    assert state_of(derive("claude", ended, live, now=106.0)) == "starting", "restarted since"
    dead = derive("claude", done, PaneView(dead=True, status=1), now=300.0)
    assert dead is not None and (dead.state, dead.exit_status) == ("exited", 1)
    limited = [*done, {"t": 110.0, "event": "StopFailure", "error": "rate_limit"}]
    state = derive("claude", limited, live, now=111.0)
    assert state is not None and (state.state, state.blocked_on) == ("blocked", "limit")
    later = derive("claude", limited, live, now=110.0 + 901)
    assert later is not None and later.state == "idle", "a limit waited out is tried again"
    assert derive("claude", turn, None, now=1.0) is None


def test_another_harness_is_read_from_its_pane_alone() -> None:
    moving = PaneView(dead=False, activity=100.0, screen="$ make\n")
    assert state_of(derive("command", [], moving, now=101.0)) == "working"
    assert state_of(derive("command", [], moving, now=200.0)) == "idle"
    trust_words = PaneView(dead=False, activity=0.0, screen=screen("trust"))
    assert state_of(derive("command", [], trust_words, now=200.0)) == "idle"


def test_a_delivery_is_received_when_a_later_prompt_holds_its_start(tmp_path: Path) -> None:
    text = "[the-loop] Comment by @alice on github:octo/app#15:\nhttps://x/1\n\n> Please   fix it."
    pasted = f'\n\n<pasted_content id="c047">\n{text}\n</pasted_content id="c047">\n'
    events = [{"t": 50.0, "event": "UserPromptSubmit", "prompt": text}]
    assert not took_as_turn(events, text, since=60.0), "an earlier prompt is another's"
    events.append({"t": 61.0, "event": "UserPromptSubmit", "prompt": pasted})
    assert took_as_turn(events, text, since=60.0)
    assert not took_as_turn(events, "[the-loop] Comment by @bob on x", since=0.0)
    log = tmp_path / "a.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + "{broken\n", encoding="utf-8")
    assert [e["t"] for e in read_hook_log(log)] == [50.0, 61.0]
    assert [e["t"] for e in read_hook_log(log, tail_bytes=60)] == [], "a cut line is skipped"


def test_what_waits_in_the_input_box_is_read_and_a_fresh_start_settles_first() -> None:
    assert input_text(screen("big-paste"), "claude") == "[Pasted text #1 +324 lines]"
    assert input_text(screen("idle"), "claude") == ""
    assert input_text(screen("trust"), "claude") is None
    assert input_text(screen("idle"), "command") is None
    pasted = PaneView(dead=False, screen=screen("big-paste"))
    done = [{"t": 10.0, "event": "SessionStart"}, {"t": 11.0, "event": "Stop"}]
    found = derive("claude", done, pasted, now=30.0)
    assert found is not None and (found.state, found.typed) == (
        "idle",
        "[Pasted text #1 +324 lines]",
    )
    started = [{"t": 10.0, "event": "SessionStart", "source": "resume"}]
    assert state_of(derive("claude", started, pasted, now=11.0)) == "starting", "not yet settled"
    assert state_of(derive("claude", started, pasted, now=12.5)) == "idle"
