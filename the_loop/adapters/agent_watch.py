"""What an agent is doing, over the real things: its pane through tmux, its hook log
from ``local/agents/``, derived by :mod:`the_loop.agent.state`. The intake asks it before
each delivery (through its ``agent`` port); ``sessions list`` asks it for each live row."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from the_loop.agent.hooks import hook_log_path
from the_loop.agent.screens import pattern_named
from the_loop.agent.state import EXITED, AgentState, derive, read_hook_log, took_as_turn
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.errors import TheLoopError
from the_loop.intake.ports import LiveSession
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry

#: The most moves tried to highlight an option (a dialog's options are few).
_MOST_MOVES = 4
#: How long a dialog is given to redraw after a move before it is read again.
_REDRAW_SECONDS = 0.3
#: The harnesses whose agents run the-loop's hooks, and so say what they received.
HOOKED_HARNESSES = frozenset(("claude",))


@dataclass
class AgentWatch:
    """Reads an agent's state: one tmux call (the pane and its visible screen) and the end
    of one hook log; answers a dialog with the keys its pattern names."""

    tmux: TmuxRunner
    hook_log: Callable[[WorkItemRef], Path]
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def over(
        cls, tmux: TmuxRunner, registry: SessionRegistry, clock: Callable[[], float] = time.time
    ) -> AgentWatch:
        """The watch over ``tmux`` whose hook logs sit beside ``registry``'s records."""

        def log(ref: WorkItemRef) -> Path:
            record = registry.path_for(ref)
            return hook_log_path(record.parent, record.stem)

        return cls(tmux, log, clock)

    def state(
        self, ref: WorkItemRef, harness: str, target: str, *, gone: bool = False
    ) -> AgentState | None:
        """The agent's state; None when tmux could not say, or it has no pane (with
        ``gone``, a tmux session that no longer exists is ``exited``, its status unknown)."""
        if not target:
            return None
        try:
            pane = self.tmux.pane_view(target)
        except (TheLoopError, ValueError):
            return None
        if pane is None:
            return AgentState(EXITED, since=self.clock()) if gone else None
        return derive(harness, read_hook_log(self.hook_log(ref)), pane, now=self.clock())

    def session_state(self, session: LiveSession) -> AgentState | None:
        """The state of ``session``'s own agent (the intake's ``agent`` port): None only
        when it cannot be told (then nothing is pasted and no episode is ended)."""
        return self.state(session.ref, session.harness, session.tmux_target, gone=True)

    def receipt(self, session: LiveSession, text: str, since: float) -> bool | None:
        """Whether ``session``'s agent took ``text`` as a turn since ``since`` (None: its
        harness runs no hooks, so it cannot say; a paste then counts when it is made)."""
        if session.harness not in HOOKED_HARNESSES:
            return None
        events = read_hook_log(self.hook_log(session.ref), since=since if since > 0 else None)
        if not events:
            return None  # its hooks never ran: it cannot say, so it is not waited for
        return took_as_turn(events, text, since)

    def submit(self, target: str) -> None:
        """Press Enter in the live pane of ``target`` (never a dead one)."""
        self.tmux.send_keys(target, ("Enter",))

    def answer(self, target: str, dialog: str, option: str) -> None:
        """Choose ``option`` (``yes``, ``no``) of the dialog whose pattern is ``dialog``, as
        its pattern says: keys sent at once, or moves until the option is highlighted and
        only then the confirming key. ``TheLoopError`` when the dialog has no such option,
        is no longer on the screen, the option could not be highlighted, or the pane died
        (nothing is confirmed then)."""
        try:
            pattern = pattern_named(dialog)
        except KeyError:
            pattern = None
        answer = pattern.answers.get(option) if pattern is not None else None
        if pattern is None or answer is None:
            raise TheLoopError(f"the dialog {dialog!r} has no {option!r} the-loop can choose")
        if answer.keys:
            self.tmux.send_keys(target, answer.keys)
            return
        for _ in range(_MOST_MOVES):
            screen = self._screen(target)
            if not pattern.matches(screen):
                raise TheLoopError(f"the dialog {dialog!r} is no longer on the screen")
            if answer.chosen(screen):
                self.tmux.send_keys(target, answer.confirm)
                return
            self.tmux.send_keys(target, answer.move)
            self._sleep(_REDRAW_SECONDS)
        raise TheLoopError(f"could not highlight {answer.choose!r} in the dialog {dialog!r}")

    def _sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def _screen(self, target: str) -> str:
        pane = self.tmux.pane_view(target)
        if pane is None or pane.dead:
            raise TheLoopError(f"the agent in tmux session {target} is gone")
        return pane.screen
