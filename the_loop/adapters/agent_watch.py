"""What an agent is doing, over the real things: its pane through tmux, its hook log
from ``local/agents/`` and the transcript the hooks name, derived by
:mod:`the_loop.agent.state`. The intake asks it before each delivery (through its
``agent`` port), and then also when a sign of the agent's progress last changed, kept
per session in ``local/agents/<name>.progress.json`` (:mod:`the_loop.agent.progress`);
``sessions list`` asks it for each live row."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from the_loop.agent.hooks import hook_log_path
from the_loop.agent.progress import Progress, Signs, advance, progress_path, screen_digest
from the_loop.agent.screens import pattern_named
from the_loop.agent.state import (
    EXITED,
    AgentState,
    PaneView,
    derive,
    read_hook_log,
    took_as_turn,
)
from the_loop.agent.transcript import read_transcript, transcript_path
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.errors import TheLoopError
from the_loop.fsio import read_json, write_json
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
    #: Where each session's progress is kept (None: its progress is not watched).
    progress_file: Callable[[WorkItemRef], Path] | None = None

    @classmethod
    def over(
        cls, tmux: TmuxRunner, registry: SessionRegistry, clock: Callable[[], float] = time.time
    ) -> AgentWatch:
        """The watch over ``tmux`` whose hook logs sit beside ``registry``'s records."""

        def log(ref: WorkItemRef) -> Path:
            record = registry.path_for(ref)
            return hook_log_path(record.parent, record.stem)

        def progress(ref: WorkItemRef) -> Path:
            record = registry.path_for(ref)
            return progress_path(record.parent, record.stem)

        return cls(tmux, log, clock, progress_file=progress)

    def state(
        self, ref: WorkItemRef, harness: str, target: str, *, gone: bool = False
    ) -> AgentState | None:
        """The agent's state; None when tmux could not say, or it has no pane (with
        ``gone``, a tmux session that no longer exists is ``exited``, its status unknown)."""
        return self._observe(ref, harness, target, gone=gone)[0]

    def session_state(self, session: LiveSession) -> AgentState | None:
        """The state of ``session``'s own agent (the intake's ``agent`` port): None only
        when it cannot be told (then nothing is pasted and no episode is ended); with
        ``progress_at``, when a sign of its progress last changed."""
        ref = session.ref
        state, signs = self._observe(ref, session.harness, session.tmux_target, gone=True)
        if state is None or signs is None or self.progress_file is None:
            return state
        progress = self._progress(self.progress_file(ref), signs)
        return replace(state, progress_at=progress.at)

    def _observe(
        self, ref: WorkItemRef, harness: str, target: str, *, gone: bool
    ) -> tuple[AgentState | None, Signs | None]:
        """The state, and the signs of progress (None with no live pane)."""
        if not target:
            return None, None
        try:
            pane = self.tmux.pane_view(target)
        except (TheLoopError, ValueError):
            return None, None
        if pane is None:
            return (AgentState(EXITED, since=self.clock()) if gone else None), None
        log = self.hook_log(ref)
        events = read_hook_log(log)
        local = _local_zone()
        transcript = read_transcript(transcript_path(events), local=local)
        now = self.clock()
        state = derive(harness, events, pane, now=now, transcript=transcript, local=local)
        return state, _signs(log, transcript.size if transcript else 0, pane, harness)

    def _progress(self, path: Path, signs: Signs) -> Progress:
        """The progress kept at ``path`` moved on by ``signs`` (written when it moved; a
        write that fails leaves the file as it was)."""
        try:
            kept = Progress.from_dict(read_json(path))
        except (OSError, ValueError):
            kept = None
        progress = advance(kept, signs, self.clock())
        if progress != kept:
            with contextlib.suppress(OSError):  # kept next time: the signs differ again
                write_json(path, progress.to_dict(), indent=None)
        return progress

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

    def interrupt(self, session: LiveSession) -> None:
        """Interrupt the running turn of ``session``'s agent with the key its harness
        takes for that (Claude Code: Escape): the turn ends, the agent and its
        conversation stay. A harness without such a key is left running."""
        if session.harness in HOOKED_HARNESSES:
            self.tmux.send_keys(session.tmux_target, ("Escape",))

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


def _signs(log: Path, transcript: int, pane: PaneView, harness: str) -> Signs:
    """The signs of progress: the hook log's size, the transcript's, the screen's digest."""
    try:
        hooks = os.stat(log).st_size
    except OSError:
        hooks = 0
    return Signs(hooks, transcript, screen_digest(pane.screen, harness))


def _local_zone() -> tzinfo:
    """This machine's time zone now: the agent's, which the-loop's environment gave it."""
    return datetime.now().astimezone().tzinfo or UTC
