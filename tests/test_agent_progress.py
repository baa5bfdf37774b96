"""When a sign of an agent's progress last changed, over a clock the test controls: the
busy line of the real Claude Code (its spinner's glyph and verb, the elapsed time, the
tokens, its tips) is no progress; a hook, a transcript line and new output are. A long
busy turn whose transcript grows is never stalled; one whose busy line alone changes is.
The time is kept in a file, so a new watcher (a restarted daemon) goes on from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from the_loop.adapters.agent_watch import AgentWatch
from the_loop.agent.progress import Progress, Signs, advance, conversation, screen_digest
from the_loop.agent.state import PaneView
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.intake.comments import SessionState
from the_loop.intake.ports import LiveSession
from the_loop.ref import WorkItemRef

VERSION = (Path(__file__).parent / "agent-version.txt").read_text(encoding="utf-8").strip()
SCREENS = Path(__file__).parent / "screens" / f"claude-{VERSION}"
ITEM = WorkItemRef.parse("github:octo/app#15")
RULE = "─" * 80
T0 = 1_796_000_000.0
STALL_SECONDS = 15 * 60.0
GLYPHS = "✢✶✻✽*·"
VERBS = ("Composing", "Clauding", "Bloviating", "Frolicking", "Churning")


def screen(name: str) -> str:
    return (SCREENS / f"{name}.txt").read_text(encoding="utf-8")


def busy_screen(second: int, output: tuple[str, ...] = ()) -> str:
    """A working Claude Code's screen at ``second`` of its turn: its logo (drawn anew),
    the prompt, ``output``, then its busy line, a tip now and then, and the input box."""
    logo = ("▐▛███▛█", "█▟ ", "██▟", "▛█▄")[second % 4]
    tokens = f" · ↓ {second * 37} tokens" if second > 20 else ""
    busy = f"{GLYPHS[second % len(GLYPHS)]} {VERBS[second // 60 % len(VERBS)]}… ({second}s{tokens})"
    tip = ["  ⎿  Tip: Start small, ask Claude for a plan"] if second // 30 % 2 else []
    return "\n".join(
        [
            f" {logo}   Claude Code v{VERSION}",
            "           /work/checkout",
            "",
            "❯ Ticket https://github.com/octo/app/issues/15: Fix the wobbling widget",
            "",
            *output,
            busy,
            *tip,
            "",
            RULE,
            "❯\xa0",
            RULE,
            "  ⏵⏵ auto mode on (shift+tab to cycle) · esc to interrupt",
        ]
    )


@dataclass
class Pane:
    """What tmux says of the agent's one pane: the screen the test draws."""

    screen: str = ""

    def pane_view(self, target: str) -> PaneView:
        del target
        return PaneView(False, activity=T0, screen=self.screen)


@dataclass
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now


class Agent:
    """A Claude Code agent as its watcher sees it: its pane, hook log and transcript."""

    def __init__(self, tmp_path: Path, clock: Clock) -> None:
        self.pane, self.clock = Pane(), clock
        self.log = tmp_path / "agents" / "item.jsonl"
        self.transcript = tmp_path / "transcript.jsonl"
        self.progress = tmp_path / "agents" / "item.progress.json"
        self.log.parent.mkdir()
        self.hook("UserPromptSubmit", prompt="Ticket")
        self.transcript.write_text('{"type": "user"}\n', encoding="utf-8")

    def hook(self, event: str, **fields: object) -> None:
        line = {"t": self.clock.now, "event": event, "transcript": str(self.transcript), **fields}
        with self.log.open("a", encoding="utf-8") as appended:
            appended.write(json.dumps(line) + "\n")

    def write_line(self) -> None:
        with self.transcript.open("a", encoding="utf-8") as appended:
            appended.write('{"type": "assistant", "message": {"content": "thinking on"}}\n')

    def watcher(self) -> AgentWatch:
        """A watcher as a new process builds it (nothing kept but the progress file)."""
        return AgentWatch(
            cast(TmuxRunner, self.pane),
            lambda _ref: self.log,
            self.clock,
            progress_file=lambda _ref: self.progress,
        )

    def stalled(self) -> bool:
        state = self.watcher().session_state(
            LiveSession(ITEM, SessionState.ACTIVE, "t", (), "claude")
        )
        assert state is not None and state.state == "working", state
        return self.clock.now - state.progress_at >= STALL_SECONDS


def test_the_real_agents_busy_line_alone_is_no_progress() -> None:
    early, later = screen("busy-early"), screen("busy-later")
    assert early != later, "the captures differ: the effort hint, the logo"
    assert screen_digest(early, "claude") == screen_digest(later, "claude")
    shown = conversation(screen("busy-tool"), "claude")
    assert "Bloviating" not in shown and "Tip:" not in shown and "(4s)" not in shown
    assert "● Sleeping a while" in shown and "$ sleep 8; echo slept" in shown
    assert screen_digest(busy_screen(5), "claude") == screen_digest(busy_screen(605), "claude")
    assert screen_digest(busy_screen(5, ("● Read 3 files",)), "claude") != screen_digest(
        busy_screen(5), "claude"
    ), "new output is progress"
    typed = busy_screen(5).replace("❯\xa0", "❯\xa0a person types here")
    assert screen_digest(typed, "claude") == screen_digest(busy_screen(5), "claude")


def test_progress_moves_only_when_a_sign_changes() -> None:
    first = advance(None, Signs(10, 20, "a"), 100.0)
    assert first == Progress(100.0, Signs(10, 20, "a"))
    assert advance(first, Signs(10, 20, "a"), 500.0) is first
    assert advance(first, Signs(11, 20, "a"), 500.0).at == 500.0
    assert advance(first, Signs(10, 21, "a"), 500.0).at == 500.0
    assert advance(first, Signs(10, 20, "b"), 500.0).at == 500.0
    assert Progress.from_dict(first.to_dict()) == first
    assert Progress.from_dict({"version": 1}) is None and Progress.from_dict([]) is None


def test_a_ten_minute_busy_turn_whose_transcript_grows_is_never_stalled(tmp_path: Path) -> None:
    clock = Clock()
    agent = Agent(tmp_path, clock)
    for second in range(0, 10 * 60 + 1, 15):  # the daemon looks every 15 seconds
        clock.now = T0 + second
        agent.pane.screen = busy_screen(second)
        if second and second % 240 == 0:
            agent.write_line()  # a thinking block, a tool's result: a line every 4 minutes
        assert not agent.stalled(), f"stalled at {second} s"
    # 15 minutes and more, its transcript growing every 4 minutes: still never stalled
    for second in range(10 * 60, 40 * 60, 15):
        clock.now = T0 + second
        agent.pane.screen = busy_screen(second)
        if second % 240 == 0:
            agent.write_line()
        assert not agent.stalled(), f"stalled at {second} s"


def test_new_output_on_the_screen_is_progress_however_long(tmp_path: Path) -> None:
    clock = Clock()
    agent = Agent(tmp_path, clock)
    output: tuple[str, ...] = ()
    for second in range(0, 40 * 60, 15):
        clock.now = T0 + second
        if second % 300 == 0:
            output = (*output, f"● Step {second // 300} done")[-5:]
        agent.pane.screen = busy_screen(second, output)
        assert not agent.stalled(), f"stalled at {second} s"


def test_a_busy_line_that_alone_changes_is_stalled_after_stall_minutes(tmp_path: Path) -> None:
    clock = Clock()
    agent = Agent(tmp_path, clock)
    for second in range(0, 16 * 60, 15):
        clock.now = T0 + second
        agent.pane.screen = busy_screen(second)
        assert agent.stalled() == (second >= STALL_SECONDS), f"at {second} s"
    agent.hook("PreToolUse", tool="Bash", detail="make test")
    assert not agent.stalled(), "a hook is progress"


def test_when_progress_was_last_seen_survives_a_new_watcher(tmp_path: Path) -> None:
    clock = Clock()
    agent = Agent(tmp_path, clock)
    agent.pane.screen = busy_screen(0)
    agent.stalled()
    kept = json.loads(agent.progress.read_text(encoding="utf-8"))
    assert (kept["version"], kept["at"]) == (1, T0)
    clock.now = T0 + STALL_SECONDS
    agent.pane.screen = busy_screen(900)
    assert agent.stalled(), "a restarted daemon remembers when the agent last moved"
    agent.progress.write_text("{not json", encoding="utf-8")
    assert not agent.stalled(), "a broken file starts the count again: a stall never invented"
