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
    box_holds,
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
    "auto-mode-check": ("claude-auto-mode-check", "auto-mode"),
    "permission-bash": ("claude-permission", "permission"),
    "permission-edit": ("claude-permission", "permission"),
    "question": ("claude-question", "question"),
    "limit-dialog": ("claude-limit", "limit"),
    "limit-weekly": ("claude-limit", "limit"),
    "onboarding-theme": ("claude-onboarding", "notice"),
    "onboarding-security": ("claude-security-notes", "notice"),
}
NO_DIALOG = (
    *("idle", "working", "working-queued", "interrupted", "retrying", "rate-limit-429"),
    *("notice", "limit-waiting", "limit-auto", "busy-early", "busy-later", "busy-tool"),
)


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
    assert state is not None and state.state == "idle", "a 429 with no reset time: no limit"
    said = "You've hit your 5-hour limit · resets 3pm (UTC)"
    reached = [*done, {"t": 110.0, "event": "StopFailure", "error": "rate_limit", "said": said}]
    state = derive("claude", reached, live, now=111.0)
    assert state is not None and (state.state, state.blocked_on) == ("blocked", "limit")
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


RULE = "─" * 40
UNKNOWN_DIALOG = "Something new asks\n❯ 1. Go ahead\n  2. Stop\n\nEnter to confirm"


def test_an_unknown_dialog_fails_closed_and_a_turn_that_runs_takes_no_paste() -> None:
    """No known dialog and no input box: nothing is pasted, and once the screen stays so
    it is ``blocked: unknown`` (said on the ticket), never a screen to type into."""
    done = [{"t": 10.0, "event": "SessionStart"}, {"t": 11.0, "event": "Stop"}]
    drawing = derive(
        "claude", done, PaneView(False, activity=50.0, screen=UNKNOWN_DIALOG), now=51.0
    )
    assert drawing is not None and drawing.state == "working" and not drawing.takes_a_paste
    still = derive("claude", done, PaneView(False, activity=50.0, screen=UNKNOWN_DIALOG), now=54.0)
    assert still is not None and (still.state, still.blocked_on) == ("blocked", "unknown")
    assert "Something new asks" in still.prompt and not still.takes_a_paste
    at_start = PaneView(False, activity=50.0, screen=UNKNOWN_DIALOG)
    assert state_of(derive("claude", [], at_start, now=60.0)) == "starting"
    first_run = derive("claude", [], at_start, now=81.0)
    assert first_run is not None and first_run.blocked_on == "unknown", "a first-run dialog"
    idle = derive("claude", done, PaneView(False, screen=screen("idle")), now=60.0)
    assert idle is not None and idle.takes_a_paste
    turn = [*done, {"t": 12.0, "event": "UserPromptSubmit"}]
    working = derive("claude", turn, PaneView(False, screen=screen("working")), now=60.0)
    assert working is not None and working.state == "working" and not working.takes_a_paste
    typed = derive("claude", done, PaneView(False, screen=screen("big-paste")), now=60.0)
    assert typed is not None and typed.state == "idle" and not typed.takes_a_paste
    moving = derive("command", [], PaneView(False, activity=100.0, screen="$ make\n"), now=101.0)
    assert moving is not None and moving.state == "working" and moving.takes_a_paste


def test_each_permission_prompt_is_its_own_episode_however_it_is_read() -> None:
    done = [{"t": 10.0, "event": "SessionStart"}, {"t": 11.0, "event": "Stop"}]
    first = [*done, {"t": 20.0, "event": "PermissionRequest", "tool": "Bash", "detail": "ls"}]
    shown = PaneView(False, activity=20.0, screen=screen("permission-bash"))
    on_screen = derive("claude", first, shown, now=21.0)
    before_drawn = derive("claude", first, PaneView(False, screen=""), now=20.5)
    noticed = [*first, {"t": 26.0, "event": "Notification", "type": "permission_prompt"}]
    later = derive("claude", noticed, shown, now=27.0)
    assert on_screen is not None and before_drawn is not None and later is not None
    assert on_screen.episode == before_drawn.episode == later.episode != ""
    second = [*first, {"t": 21.0, "event": "PostToolUse"}]
    second.append({"t": 22.0, "event": "PermissionRequest", "tool": "Bash", "detail": "ls"})
    again = derive("claude", second, shown, now=23.0)
    assert again is not None and again.blocked_on == "permission"
    assert again.episode != on_screen.episode, "the same command asked again is a new prompt"
    unhooked = derive("claude", done, shown, now=30.0)
    assert unhooked is not None and unhooked.episode.startswith("permission:")
    assert unhooked.shown == on_screen.shown == later.shown == unhooked.episode, (
        "drawn before its hook said it, the prompt is told by its text, the same after"
    )


def test_the_input_box_of_several_lines_and_what_it_holds() -> None:
    box = f"conversation\n{RULE}\n❯ first line\n  second line\n{RULE}\n  footer"
    assert input_text(box, "claude") == "first line\nsecond line"
    options = f"{RULE}\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n{RULE}"
    assert input_text(options, "claude") is None
    text = "[the-loop] Comment by @alice on github:octo/app#15:\nhttps://x/1\n\n> Fix it."
    assert box_holds("[the-loop] Comment by @alice on github:octo/app#1\n5:", text), "wrapped"
    assert box_holds("[Pasted text #2 +4 lines]", text)
    assert not box_holds("please also look at", text), "a person's own words"
    assert not box_holds("", text)


def test_a_receipt_reads_back_as_far_as_its_paste(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    text = "[the-loop] Comment by @alice on github:octo/app#15:"
    events = [{"t": 100.0, "event": "UserPromptSubmit", "prompt": text}]
    events += [{"t": 100.0 + n, "event": "PreToolUse", "pad": "x" * 400} for n in range(1, 400)]
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    assert not took_as_turn(read_hook_log(log), text, since=100.0), "the tail alone lost it"
    assert took_as_turn(read_hook_log(log, since=100.0), text, since=100.0)
