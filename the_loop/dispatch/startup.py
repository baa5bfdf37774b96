"""Whether an agent just started came up: its pane watched for a moment after the spawn.

An agent that exits at once (a flag it does not know, a conversation ``--resume`` cannot
find, a binary that crashes) leaves its pane behind, kept by ``remain-on-exit``:
:func:`watch_start` finds it dead within the wait and says so, with the exit status and
the pane's last lines, so ``sessions start`` never says ``started`` for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from the_loop.agent.state import PaneView
from the_loop.dispatch.process import DispatchError

#: How often the pane is looked at during the wait.
LOOK_EVERY_SECONDS = 0.1
#: How many of the pane's last lines an early exit quotes, and how much of each.
LAST_LINES = 5
LINE_WIDTH = 160
#: The line tmux itself writes into a pane that ``remain-on-exit`` kept.
_TMUX_OWN_LINE = "Pane is dead"


@dataclass(frozen=True)
class EarlyExit:
    """An agent that exited within the wait: its exit status (None when tmux did not say,
    or its tmux session is ``gone`` altogether) and the last lines of its pane."""

    status: int | None
    last_lines: tuple[str, ...] = ()
    gone: bool = False

    def describe(self) -> str:
        """``exited (status 1)``; ``exited (tmux did not say its status)``; or, when the
        whole tmux session went, ``exited: its tmux session is gone``."""
        if self.gone:
            return "exited: its tmux session is gone"
        if self.status is None:
            return "exited (tmux did not say its status)"
        return f"exited (status {self.status})"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "lastLines": list(self.last_lines), "gone": self.gone}


def watch_start(
    view: Callable[[], PaneView | None],
    seconds: float,
    *,
    history: Callable[[], str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> EarlyExit | None:
    """Look at the agent's pane (``view``: tmux's word on it, None when its session is
    gone) until ``seconds`` have passed: an :class:`EarlyExit` as soon as it is gone, or
    dead with its exit status (a pane tmux saw die but whose status it has not recorded
    yet is looked at again, until the wait ends); None when it still runs at the end, or
    when tmux does not answer (nothing is known against the agent then). ``seconds`` ≤ 0:
    no look at all. The last lines come from ``history`` (the pane's whole text: what the
    agent said may have scrolled off its screen) when given, else from the screen."""
    if seconds <= 0:
        return None
    deadline = clock() + seconds
    dead: PaneView | None = None
    while True:
        try:
            pane = view()
        except DispatchError:
            pane = dead  # what was seen stands
            if pane is None:
                return None
        if pane is None:
            return EarlyExit(None, gone=True)
        if pane.dead:
            dead = pane
            if pane.status is not None:
                return EarlyExit(pane.status, _last_words(pane, history))
        left = deadline - clock()
        if left <= 0:
            return None if dead is None else EarlyExit(None, _last_words(dead, history))
        sleep(min(LOOK_EVERY_SECONDS, left))


def _last_words(pane: PaneView, history: Callable[[], str] | None) -> tuple[str, ...]:
    """The last lines of the pane's whole text, or of its screen when that cannot be had."""
    if history is not None:
        try:
            return last_lines(history())
        except DispatchError:
            pass
    return last_lines(pane.screen)


def last_lines(screen: str, count: int = LAST_LINES) -> tuple[str, ...]:
    """The last ``count`` lines of ``screen`` that say something, each trimmed, stripped of
    control characters and cut to :data:`LINE_WIDTH`; tmux's own "Pane is dead" left out."""
    kept: list[str] = []
    for line in screen.splitlines():
        text = "".join(c for c in line if c.isprintable()).strip()
        if text and not text.startswith(_TMUX_OWN_LINE):
            kept.append(text if len(text) <= LINE_WIDTH else text[: LINE_WIDTH - 3] + "...")
    return tuple(kept[-count:]) if count > 0 else ()
