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
from the_loop.agent.state import AgentState, derive, read_hook_log, took_as_turn
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.errors import TheLoopError
from the_loop.intake.ports import LiveSession
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry

#: The harnesses whose agents run the-loop's hooks, and so say what they received.
HOOKED_HARNESSES = frozenset(("claude",))


@dataclass
class AgentWatch:
    """Reads an agent's state: one tmux call (the pane and its visible screen) and the end
    of one hook log; answers a dialog with the keys its pattern names."""

    tmux: TmuxRunner
    hook_log: Callable[[WorkItemRef], Path]
    clock: Callable[[], float] = time.time

    @classmethod
    def over(
        cls, tmux: TmuxRunner, registry: SessionRegistry, clock: Callable[[], float] = time.time
    ) -> AgentWatch:
        """The watch over ``tmux`` whose hook logs sit beside ``registry``'s records."""

        def log(ref: WorkItemRef) -> Path:
            record = registry.path_for(ref)
            return hook_log_path(record.parent, record.stem)

        return cls(tmux, log, clock)

    def state(self, ref: WorkItemRef, harness: str, target: str) -> AgentState | None:
        """The agent's state; None when it has no pane, or tmux could not say."""
        if not target:
            return None
        try:
            pane = self.tmux.pane_view(target)
        except (TheLoopError, ValueError):
            return None
        if pane is None:
            return None
        return derive(harness, read_hook_log(self.hook_log(ref)), pane, now=self.clock())

    def session_state(self, session: LiveSession) -> AgentState | None:
        """The state of ``session``'s own agent (the intake's ``agent`` port)."""
        return self.state(session.ref, session.harness, session.tmux_target)

    def receipt(self, session: LiveSession, text: str, since: float) -> bool | None:
        """Whether ``session``'s agent took ``text`` as a turn since ``since`` (None: its
        harness runs no hooks, so it cannot say; a paste then counts when it is made)."""
        if session.harness not in HOOKED_HARNESSES:
            return None
        return took_as_turn(read_hook_log(self.hook_log(session.ref)), text, since)

    def answer(self, target: str, dialog: str, option: str) -> None:
        """Send the keys that choose ``option`` (``yes``, ``no``) of the dialog whose
        pattern is ``dialog``; ``TheLoopError`` when it has no such option or the pane died."""
        try:
            keys = pattern_named(dialog).keys.get(option)
        except KeyError:
            keys = None
        if not keys:
            raise TheLoopError(f"the dialog {dialog!r} has no {option!r} the-loop can choose")
        self.tmux.send_keys(target, keys)
