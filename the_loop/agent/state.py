"""What an agent is doing: derived from its hook log and its pane, both handed in.

``starting`` (spawned, not yet at its prompt), ``working`` (a turn runs), ``idle`` (at
its input prompt), ``blocked`` (a dialog waits for a person: on what, and its text),
``exited`` (its process ended: with its status). The screen decides a dialog (a dialog
on the visible screen blocks, whatever the hooks said last); the hooks decide the rest.
A harness without hooks (``cursor``, ``command``) is read from its pane alone: live and
no dialog is ``working`` while the pane changed within :data:`QUIET_SECONDS`, then
``idle``.

A turn that stopped at a plan's usage limit is ``blocked: limit`` until the limit resets
(its time read from the transcript, the hook's words or the screen:
:mod:`~the_loop.agent.limit_state`), and after it too while the agent says it will go on
by itself; a failed turn with no reset time (an API key's 429) is just over.

A paste goes only where it becomes a turn, never into a dialog. An agent with an input
box (Claude Code) takes one only while ``idle`` with its box on the screen and empty: a
turn that runs may raise a permission prompt between the read and the paste's Enter,
so a comment for a working agent waits for its turn to end. A screen that shows
neither the box nor a known dialog, and stays so, is ``blocked: unknown``: an unknown
dialog fails closed. An agent without a box (``command``) takes a paste while ``idle``
or ``working``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, tzinfo
from typing import Any

from the_loop.agent.hooklog import RECEIPT_KEY_CHARS as RECEIPT_KEY_CHARS
from the_loop.agent.hooklog import read_hook_log as read_hook_log
from the_loop.agent.hooklog import took_as_turn as took_as_turn
from the_loop.agent.limit_state import last_turn_event, stopped_at_limit
from the_loop.agent.limits import UsageLimit, says_it_resumes
from the_loop.agent.permissions import (
    dialog_digest,
    open_request,
    permission_text,
    request_episode,
)
from the_loop.agent.screens import (
    Dialog,
    at_input_prompt,
    find_dialog,
    has_input_box,
    input_text,
    interrupted_at_prompt,
)
from the_loop.agent.transcript import TranscriptView
from the_loop.agent.values import BLOCKED as BLOCKED
from the_loop.agent.values import EXITED as EXITED
from the_loop.agent.values import IDLE as IDLE
from the_loop.agent.values import STARTING as STARTING
from the_loop.agent.values import STATES as STATES
from the_loop.agent.values import WORKING as WORKING
from the_loop.agent.values import AgentState as AgentState
from the_loop.agent.values import PaneView as PaneView

#: A pane with no hooks that has not changed for this long is at its prompt.
QUIET_SECONDS = 5.0
#: The screen pattern of the permission prompt a ``PermissionRequest`` hook announces.
PERMISSION_DIALOG = "claude-permission"
#: How long an agent shows its input box with no hook before its hooks count as silent.
SILENT_HOOKS_SECONDS = 30.0
#: How long after its SessionStart an agent is left to settle before a paste: an Enter
#: sent in that first instant can be lost, leaving the paste in its input box.
SETTLE_SECONDS = 2.0
#: How long after a hook said a dialog the screen must show it (else it was answered).
DRAWN_SECONDS = 3.0
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


def derive(
    harness: str,
    events: Sequence[dict[str, Any]],
    pane: PaneView | None,
    *,
    now: float,
    transcript: TranscriptView | None = None,
    local: tzinfo = UTC,
) -> AgentState | None:
    """The agent's state from its hook ``events`` (oldest first), its ``pane`` (None: no
    pane, so no state) and its ``transcript``; a reset said without a zone is in
    ``local``."""
    if pane is None:
        return None
    if pane.dead:
        ended = _time(events[-1]) if events else pane.activity
        return AgentState(EXITED, since=ended or now, exit_status=pane.status)
    limit = stopped_at_limit(harness, events, pane.screen, pane.activity, transcript, local)
    dialog = find_dialog(pane.screen, harness)
    if dialog is not None:
        blocked = _blocked_by(dialog, events, pane)
        return _with_limit(blocked, limit) if blocked.blocked_on == "limit" else blocked
    resuming = limit is not None and says_it_resumes(pane.screen)
    if limit is not None and (now < limit.over_at or resuming):
        return _limited(limit, events, pane, resuming)
    return _with_limit(_unblocked(harness, events, pane, now), limit)


def _unblocked(
    harness: str, events: Sequence[dict[str, Any]], pane: PaneView, now: float
) -> AgentState:
    """The state of a live agent with no dialog on its screen and no usage limit on."""
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
    if state.state == BLOCKED and pane.screen.strip() and now - _time(last) > DRAWN_SECONDS:
        # The hook said a dialog, the screen long shows none: answered in the pane.
        return AgentState(IDLE, since=_time(last))
    fresh = last.get("event") == "SessionStart" and now - state.since < SETTLE_SECONDS
    if state.state == IDLE and fresh:
        return AgentState(STARTING, since=state.since)  # its input box is not ready yet
    if state.state == IDLE:
        typed = input_text(pane.screen, harness) or ""
        return AgentState(IDLE, since=state.since, typed=typed)
    if state.state == WORKING and interrupted_at_prompt(pane.screen, harness):
        # Escape ended the turn (a person's, or the-loop's at a budget): no Stop follows.
        typed = input_text(pane.screen, harness) or ""
        return AgentState(IDLE, since=pane.activity or state.since, typed=typed)
    return state


def _limited(
    limit: UsageLimit, events: Sequence[dict[str, Any]], pane: PaneView, resuming: bool
) -> AgentState:
    """Blocked on a usage limit: since the turn stopped at it, its words as the prompt."""
    last = last_turn_event(events)
    return AgentState(
        BLOCKED,
        since=_time(last) if last is not None else pane.activity,
        blocked_on="limit",
        prompt=limit.text,
        episode=f"limit@{limit.key}",
        resets_at=limit.resets_at,
        resets_zone=limit.zone,
        self_resuming=resuming,
    )


def _with_limit(state: AgentState, limit: UsageLimit | None) -> AgentState:
    """``state`` marked with the usage limit its last turn stopped at (an episode of it
    told by its reset, whichever words it was read from)."""
    if limit is None:
        return state
    marked = replace(state, resets_at=limit.resets_at, resets_zone=limit.zone)
    if state.blocked_on != "limit":
        return marked
    prompt = state.prompt if limit.text in state.prompt else f"{limit.text}\n\n{state.prompt}"
    return replace(marked, episode=f"limit@{limit.key}", prompt=prompt.strip())


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
    episode = shown = ""
    if blocked_on == "permission":
        shown = "permission:" + dialog_digest(dialog.text)
        request = open_request(events)
        if request is not None:
            prompt = permission_text(request) + "\n\n" + prompt
            episode = request_episode(request)
        else:  # no hook said it (yet): the prompt is told by its text (its command)
            episode = shown
    since = _time(last) if last else pane.activity
    return AgentState(
        BLOCKED,
        since=since,
        blocked_on=blocked_on,
        prompt=prompt.strip(),
        dialog=dialog.pattern.name,
        episode=episode or blocked_on,
        shown=shown,
    )


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
    request = open_request(events) if blocked_on == "permission" else None
    if request is not None:
        episode = request_episode(request)
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
        return BLOCKED, "permission", permission_text(event)
    if name == "Notification":
        kind = str(event.get("type", ""))
        if kind in _PERMISSION_NOTICES:
            return BLOCKED, "permission", str(event.get("message", ""))
        if kind in _QUESTION_NOTICES:
            return BLOCKED, "question", str(event.get("message", ""))
        if kind in _IDLE_NOTICES:
            return IDLE, "", ""
        return WORKING, "", ""  # any other notice says nothing of the prompt
    return _AFTER_EVENT.get(name, WORKING), "", ""


def _time(event: dict[str, Any]) -> float:
    value = event.get("t")
    return float(value) if isinstance(value, int | float) else 0.0
