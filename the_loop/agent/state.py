"""What an agent is doing: derived from its hook log and its pane, both handed in.

``starting`` (spawned, not yet at its prompt), ``working`` (a turn runs), ``idle`` (at
its input prompt), ``blocked`` (a dialog waits for a person: on what, and its text),
``exited`` (its process ended: with its status). The screen decides a dialog (a dialog
on the visible screen blocks, whatever the hooks said last); the hooks decide the rest.
A harness without hooks (``cursor``, ``command``) is read from its pane alone: live and
no dialog is ``working`` while the pane changed within :data:`QUIET_SECONDS`, then
``idle``.

A paste goes only where it becomes a turn, never into a dialog. An agent with an input
box (Claude Code) takes one only while ``idle`` with its box on the screen and empty: a
turn that runs may raise a permission prompt between the read and the paste's Enter,
so a comment for a working agent waits for its turn to end. A screen that shows
neither the box nor a known dialog, and stays so, is ``blocked: unknown``: an unknown
dialog fails closed. An agent without a box (``command``) takes a paste while ``idle``
or ``working``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from the_loop.agent.screens import (
    Dialog,
    at_input_prompt,
    find_dialog,
    has_input_box,
    input_text,
)

STARTING, WORKING, IDLE, BLOCKED, EXITED = "starting", "working", "idle", "blocked", "exited"
STATES = (STARTING, WORKING, IDLE, BLOCKED, EXITED)
#: A pane with no hooks that has not changed for this long is at its prompt.
QUIET_SECONDS = 5.0
#: How long an agent that hit a usage or rate limit is left alone before a waiting
#: comment is tried again (the paste then is a new turn; a limit still on says so again).
LIMIT_WAIT_SECONDS = 900.0
#: The screen pattern of the permission prompt a ``PermissionRequest`` hook announces.
PERMISSION_DIALOG = "claude-permission"
#: How long an agent shows its input box with no hook before its hooks count as silent.
SILENT_HOOKS_SECONDS = 30.0
#: How long after its SessionStart an agent is left to settle before a paste: an Enter
#: sent in that first instant can be lost, leaving the paste in its input box.
SETTLE_SECONDS = 2.0
#: How long after a hook said a dialog the screen must show it (else it was answered).
DRAWN_SECONDS = 3.0
#: How much of the end of a hook log is read: the latest events are all a state needs.
TAIL_BYTES = 64 * 1024
#: How many of the screen's last lines an unknown dialog is told by.
UNKNOWN_LINES = 20

#: The state each hook event leaves the agent in (a permission request is read apart).
_AFTER_EVENT = {
    "SessionStart": IDLE,
    "UserPromptSubmit": WORKING,
    "PreToolUse": WORKING,
    "PostToolUse": WORKING,
    "Stop": IDLE,
    "StopFailure": IDLE,
    "SessionEnd": EXITED,
}
#: Notifications that say the agent waits at its prompt, or for a person.
_IDLE_NOTICES = frozenset(("idle_prompt",))
_PERMISSION_NOTICES = frozenset(("permission_prompt",))
_QUESTION_NOTICES = frozenset(("elicitation_dialog",))
#: Words of a StopFailure's error that say a usage or rate limit was reached.
_LIMIT_WORDS = ("rate_limit", "rate limit", "usage limit", "limit reached", "overloaded", "429")


@dataclass(frozen=True)
class PaneView:
    """What tmux says of the agent's pane: dead (and its exit status), when it last
    changed, and the visible screen as text."""

    dead: bool
    status: int | None = None
    activity: float = 0.0
    screen: str = ""


@dataclass(frozen=True)
class AgentState:
    """The agent's state, ``since`` when (unix time), and when ``blocked``, on what and the
    prompt's text; when ``exited``, its status."""

    state: str
    since: float = 0.0
    blocked_on: str = ""
    prompt: str = ""
    exit_status: int | None = None
    #: The screen pattern that found the dialog (``""`` when a hook said it).
    dialog: str = ""
    #: What stands in its input box while ``idle`` (``""``: empty, or no box read).
    typed: str = ""
    #: Which blocked episode this is: the same dialog reads as the same episode, another
    #: one (a second permission prompt) as another.
    episode: str = ""
    #: Whether a paste may go in while a turn runs (an agent without hooks or input box).
    mid_turn: bool = True

    @property
    def takes_a_paste(self) -> bool:
        """Whether a paste now becomes a turn: ``idle`` with nothing typed in its box, or
        ``working`` when a paste mid-turn cannot meet a dialog."""
        if self.state == IDLE:
            return not self.typed
        return self.state == WORKING and self.mid_turn

    def describe(self) -> str:
        """One short phrase: ``idle``, ``blocked: permission``, ``exited (1)``."""
        if self.state == BLOCKED:
            return f"blocked: {self.blocked_on}"
        if self.state == EXITED and self.exit_status is not None:
            return f"exited ({self.exit_status})"
        return self.state

    def to_dict(self) -> dict[str, Any]:
        """``sessions list --format json``'s ``agent``: ``state``, ``since`` (ISO 8601),
        ``blockedOn`` and ``prompt`` (null unless blocked), ``exitStatus``."""
        from datetime import UTC, datetime

        since = datetime.fromtimestamp(self.since, UTC).isoformat() if self.since else None
        blocked = self.state == BLOCKED
        return {
            "state": self.state,
            "since": since,
            "blockedOn": self.blocked_on if blocked else None,
            "prompt": self.prompt if blocked else None,
            "exitStatus": self.exit_status,
        }


def read_hook_log(
    path: Path, tail_bytes: int = TAIL_BYTES, *, since: float | None = None
) -> list[dict[str, Any]]:
    """The events at the end of the hook log ``path`` (empty when there is none); with
    ``since``, read further back until every event from then on is in (a busy agent's
    log can outgrow the tail between two reads). A line cut by the tail or not JSON is
    skipped. Never follows a link."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return []
    try:
        size = os.fstat(descriptor).st_size
        while True:
            start = max(0, size - tail_bytes)
            os.lseek(descriptor, start, os.SEEK_SET)
            data = os.read(descriptor, size - start)
            events = _events(data, cut=start > 0)
            if since is None or not start or (events and _time(events[0]) < since - 1.0):
                return events
            tail_bytes *= 4
    finally:
        os.close(descriptor)


def _events(data: bytes, *, cut: bool) -> list[dict[str, Any]]:
    lines = data.decode("utf-8", "replace").split("\n")
    if cut:
        lines = lines[1:]  # the first may be cut
    events: list[dict[str, Any]] = []
    for line in lines:
        try:
            event: Any = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(cast(dict[str, Any], event).get("event"), str):
            events.append(cast(dict[str, Any], event))
    return events


def derive(
    harness: str, events: Sequence[dict[str, Any]], pane: PaneView | None, *, now: float
) -> AgentState | None:
    """The agent's state from its hook ``events`` (oldest first) and its ``pane`` (None:
    no pane, so no state)."""
    if pane is None:
        return None
    if pane.dead:
        ended = _time(events[-1]) if events else pane.activity
        return AgentState(EXITED, since=ended or now, exit_status=pane.status)
    dialog = find_dialog(pane.screen, harness)
    if dialog is not None:
        return _blocked_by(dialog, events, pane)
    boxed = has_input_box(harness)
    if not events:
        if harness == "claude" and not _hooks_silent(harness, pane, now):
            if _stuck(pane, now, SILENT_HOOKS_SECONDS):
                return _unknown(pane)  # a first-run dialog no pattern knows
            return AgentState(STARTING, since=pane.activity)
        quiet = now - pane.activity >= QUIET_SECONDS
        state = AgentState(IDLE if quiet else WORKING, since=pane.activity)
    else:
        state = _corrected(harness, _from_hooks(events), events, pane, now)
        state = replace(state, mid_turn=False)  # its turns may raise a permission prompt
    if not boxed or state.state not in (IDLE, WORKING):
        return state
    if input_text(pane.screen, harness) is not None:
        return state
    if _stuck(pane, now, DRAWN_SECONDS):
        return _unknown(pane)  # neither its box nor a known dialog: never paste into it
    return AgentState(WORKING, since=state.since, mid_turn=False)  # still drawing


def _corrected(
    harness: str,
    state: AgentState,
    events: Sequence[dict[str, Any]],
    pane: PaneView,
    now: float,
) -> AgentState:
    """What the hooks said, set right by the live pane and the time since."""
    last = events[-1]
    if state.state == EXITED:  # the pane runs: an agent restarted since it said it ended
        return AgentState(STARTING, since=pane.activity or state.since)
    if state.state == BLOCKED and state.blocked_on == "limit":
        if now - state.since > LIMIT_WAIT_SECONDS:
            return AgentState(IDLE, since=state.since)  # the limit may have reset: try again
        return state
    if state.state == BLOCKED and pane.screen.strip() and now - _time(last) > DRAWN_SECONDS:
        # The hook said a dialog, the screen long shows none: answered in the pane.
        return AgentState(IDLE, since=_time(last))
    fresh = last.get("event") == "SessionStart" and now - state.since < SETTLE_SECONDS
    if state.state == IDLE and fresh:
        return AgentState(STARTING, since=state.since)  # its input box is not ready yet
    if state.state == IDLE:
        typed = input_text(pane.screen, harness) or ""
        return AgentState(IDLE, since=state.since, typed=typed)
    return state


def _stuck(pane: PaneView, now: float, seconds: float) -> bool:
    """A screen with something on it, neither the input box nor a known dialog, unchanged
    for ``seconds``."""
    return bool(pane.screen.strip()) and now - pane.activity >= seconds


def _unknown(pane: PaneView) -> AgentState:
    """Blocked on a dialog no pattern knows: its text is the screen's last lines."""
    lines = [line.rstrip() for line in pane.screen.splitlines() if line.strip()]
    text = "\n".join(lines[-UNKNOWN_LINES:])[:1500]
    return AgentState(
        BLOCKED, since=pane.activity, blocked_on="unknown", prompt=text, episode="unknown"
    )


def _hooks_silent(harness: str, pane: PaneView, now: float) -> bool:
    """An agent at its input box for :data:`SILENT_HOOKS_SECONDS` with no hook yet: its
    hooks do not run (a settings file of the operator's that turns them off, say), so it
    is read from its pane alone."""
    return at_input_prompt(pane.screen, harness) and now - pane.activity >= SILENT_HOOKS_SECONDS


def _blocked_by(dialog: Dialog, events: Sequence[dict[str, Any]], pane: PaneView) -> AgentState:
    """A dialog on the screen; for a permission prompt, the hook's tool and its detail."""
    prompt = dialog.text
    last: dict[str, Any] = events[-1] if events else {}
    blocked_on = dialog.pattern.blocked_on
    episode = blocked_on
    if blocked_on == "permission":
        request = _permission_request(events)
        if request is not None:
            prompt = _permission_text(request) + "\n\n" + prompt
            episode = _request_episode(request)
        else:  # no hook said it: the prompt is told by its text (its command)
            episode = "permission:" + _digest(dialog.text)
    since = _time(last) if last else pane.activity
    return AgentState(
        BLOCKED,
        since=since,
        blocked_on=blocked_on,
        prompt=prompt.strip(),
        dialog=dialog.pattern.name,
        episode=episode,
    )


def _permission_request(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``PermissionRequest`` still open: the latest event but notifications, when it
    is one (a tool that ran, a turn that ended or began closes it)."""
    for event in reversed(events):
        name = event.get("event")
        if name == "Notification":
            continue
        return event if name == "PermissionRequest" else None
    return None


def _request_episode(request: dict[str, Any]) -> str:
    """One permission prompt's identity: its request's time, tool and detail."""
    return f"permission@{_time(request)}:" + _digest(_permission_text(request))


def _digest(text: str) -> str:
    """A short digest of ``text`` with the option pointer, digits and blanks left out, so
    a redraw (the pointer moved, a counter ticked) reads as the same dialog."""
    kept = "".join(c for c in text if not c.isdigit() and c not in "❯›>").split()
    return hashlib.sha256(" ".join(kept).encode()).hexdigest()[:16]


def _from_hooks(events: Sequence[dict[str, Any]]) -> AgentState:
    last = events[-1]
    state, blocked_on, prompt = _state_after(last)
    since = _time(last)
    for earlier in reversed(events[:-1]):  # since the first event of this same state
        if _state_after(earlier)[:2] != (state, blocked_on):
            break
        since = _time(earlier)
    dialog = PERMISSION_DIALOG if blocked_on == "permission" else ""
    episode = blocked_on
    request = _permission_request(events) if blocked_on == "permission" else None
    if request is not None:
        episode = _request_episode(request)
    return AgentState(
        state,
        since=since,
        blocked_on=blocked_on,
        prompt=prompt,
        dialog=dialog,
        episode=episode,
    )


def _state_after(event: dict[str, Any]) -> tuple[str, str, str]:
    name = str(event.get("event", ""))
    if name == "PermissionRequest":
        return BLOCKED, "permission", _permission_text(event)
    if name == "Notification":
        kind = str(event.get("type", ""))
        if kind in _PERMISSION_NOTICES:
            return BLOCKED, "permission", str(event.get("message", ""))
        if kind in _QUESTION_NOTICES:
            return BLOCKED, "question", str(event.get("message", ""))
        if kind in _IDLE_NOTICES:
            return IDLE, "", ""
        return WORKING, "", ""  # any other notice says nothing of the prompt
    if name == "StopFailure":
        error = f"{event.get('error', '')} {event.get('errorType', '')}".lower()
        if any(word in error for word in _LIMIT_WORDS):
            return BLOCKED, "limit", str(event.get("error", "")).strip()
    return _AFTER_EVENT.get(name, WORKING), "", ""


def _permission_text(event: dict[str, Any]) -> str:
    tool, detail = str(event.get("tool", "")), str(event.get("detail", ""))
    return f"{tool}: {detail}" if detail else tool


def _time(event: dict[str, Any]) -> float:
    value = event.get("t")
    return float(value) if isinstance(value, int | float) else 0.0


#: How much of a delivery's start must open a submitted prompt for it to be that delivery.
#: The start of a delivery names its author and links its comment (or names its review
#: or check), so this much tells two deliveries apart; the hook keeps more of a prompt.
RECEIPT_KEY_CHARS = 560


def took_as_turn(events: Sequence[dict[str, Any]], text: str, since: float) -> bool:
    """Whether a prompt the agent submitted at or after ``since`` (its
    ``UserPromptSubmit`` hook) holds the start of ``text``, blanks aside."""
    key = _blanks(text)[:RECEIPT_KEY_CHARS]
    if not key:
        return False
    return any(
        event.get("event") == "UserPromptSubmit"
        and _time(event) >= since - 1.0
        and key in _blanks(str(event.get("prompt", "")))
        for event in events
    )


def _blanks(text: str) -> str:
    return " ".join(text.split())
