"""The values of what an agent is doing: its states, its pane as tmux says it, and the
state derived from both (:mod:`the_loop.agent.state` derives it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from the_loop.agent.limits import UsageLimit

STARTING, WORKING, IDLE, BLOCKED, EXITED = "starting", "working", "idle", "blocked", "exited"
STATES = (STARTING, WORKING, IDLE, BLOCKED, EXITED)


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
    #: A permission prompt on the screen told by its text alone (``""``: none): a prompt
    #: first seen before its hook said it is the same episode once the hook names it.
    shown: str = ""
    #: Whether a paste may go in while a turn runs (an agent without hooks or input box).
    mid_turn: bool = True
    #: When the usage limit its last turn stopped at resets (unix time; 0: it stopped at
    #: none), and the zone that was said in (``""``: the machine's).
    resets_at: float = 0.0
    resets_zone: str = ""
    #: Whether the agent said it will continue by itself once the limit resets.
    self_resuming: bool = False
    #: When a sign of its progress last changed (0: not watched), as its watcher keeps it.
    progress_at: float = 0.0

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
        ``blockedOn`` and ``prompt`` (null unless blocked), ``exitStatus``, ``resetsAt``
        (null unless blocked on a usage limit whose reset is known: ISO 8601 with the
        offset of the zone it was said in)."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat() if self.since else None
        blocked = self.state == BLOCKED
        limited = blocked and self.blocked_on == "limit" and self.resets_at > 0
        return {
            "state": self.state,
            "since": since,
            "blockedOn": self.blocked_on if blocked else None,
            "prompt": self.prompt if blocked else None,
            "exitStatus": self.exit_status,
            "resetsAt": self.limit.iso() if limited and self.limit is not None else None,
        }

    @property
    def limit(self) -> UsageLimit | None:
        """The usage limit its last turn stopped at (None: none)."""
        if self.resets_at <= 0:
            return None
        return UsageLimit(self.resets_at, self.resets_zone)
