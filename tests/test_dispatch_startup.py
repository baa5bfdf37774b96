"""Whether an agent just started came up: the pane watched for a moment, on a fake clock
(no test waits for real time here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from the_loop.agent.state import PaneView
from the_loop.dispatch.process import DispatchError
from the_loop.dispatch.startup import LINE_WIDTH, EarlyExit, last_lines, watch_start


class Clock:
    """A clock that moves only when the watch sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def views(*panes: PaneView | Exception | None) -> Iterator[PaneView | None]:
    """tmux's answers, one per look; the last one repeats."""
    for pane in panes[:-1]:
        if isinstance(pane, Exception):
            raise pane
        yield pane
    while True:
        last = panes[-1]
        if isinstance(last, Exception):
            raise last
        yield last


LIVE = PaneView(dead=False, screen="working\n")


def test_an_agent_dead_at_the_third_look_is_an_early_exit_with_its_status_and_last_lines():
    clock = Clock()
    dead = PaneView(dead=True, status=3, screen="boom\nNo conversation found\n\n")
    answers = views(LIVE, LIVE, dead)
    exited = watch_start(lambda: next(answers), 1.5, clock=clock, sleep=clock.sleep)
    assert exited == EarlyExit(3, ("boom", "No conversation found"))
    assert exited is not None and exited.describe() == "exited (status 3)"
    assert len(clock.slept) == 2


def test_an_agent_still_up_when_the_wait_ends_is_up_and_the_wait_ends_at_its_bound():
    clock = Clock()
    answers = views(LIVE)
    assert watch_start(lambda: next(answers), 1.5, clock=clock, sleep=clock.sleep) is None
    assert sum(clock.slept) == pytest.approx(1.5)


def test_a_wait_of_zero_never_looks_at_the_pane():
    def view() -> PaneView:
        raise AssertionError("looked")

    assert watch_start(view, 0) is None


def test_a_tmux_session_gone_is_an_exit_without_status_and_tmux_not_answering_is_no_verdict():
    gone = watch_start(lambda: None, 1.5, clock=Clock(), sleep=Clock().sleep)
    assert gone == EarlyExit(None, gone=True)
    assert gone is not None and gone.describe() == "exited: its tmux session is gone"
    answers = views(DispatchError("tmux did not answer"))
    assert watch_start(lambda: next(answers), 1.5, clock=Clock(), sleep=Clock().sleep) is None


def test_a_dead_pane_whose_status_tmux_lost_says_so():
    dead = PaneView(dead=True, status=None, screen="bye\n")
    exited = watch_start(lambda: dead, 1.5)
    assert exited is not None and exited.describe() == "exited (tmux did not say its status)"


def test_the_last_lines_are_the_few_that_say_something_trimmed_without_tmuxs_own_line():
    screen = "\n".join(
        [
            *(f"line {n}" for n in range(1, 9)),
            "   padded \t ",
            "\x1b[31mred\x07",
            "x" * (LINE_WIDTH + 50),
            "",
            "Pane is dead (status 1, Sun Dec  6 12:55:44 2026)",
            "",
        ]
    )
    lines = last_lines(screen)
    assert lines[:3] == ("line 7", "line 8", "padded")
    assert lines[3] == "[31mred"
    assert len(lines) == 5 and lines[4].endswith("...") and len(lines[4]) == LINE_WIDTH


def test_a_pane_seen_dead_before_tmux_recorded_its_status_is_looked_at_again_for_it():
    clock = Clock()
    answers = views(PaneView(dead=True), PaneView(dead=True, status=3, screen="boom\n"))
    exited = watch_start(lambda: next(answers), 1.5, clock=clock, sleep=clock.sleep)
    assert exited == EarlyExit(3, ("boom",))


def test_the_last_lines_come_from_the_panes_whole_text_when_it_can_be_had():
    dead = PaneView(dead=True, status=1, screen="\n\nPane is dead (status 1)\n")
    exited = watch_start(lambda: dead, 1.5, history=lambda: "No conversation found\n\n")
    assert exited == EarlyExit(1, ("No conversation found",))

    def unanswered() -> str:
        raise DispatchError("tmux did not answer")

    dead = PaneView(dead=True, status=1, screen="on the screen\n")
    assert watch_start(lambda: dead, 1.5, history=unanswered) == EarlyExit(1, ("on the screen",))
