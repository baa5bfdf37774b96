"""Whether the agent's last turn stopped at a plan's usage limit, and when it resets.

Claude Code ends such a turn with a ``StopFailure`` hook (``error: "rate_limit"``; its
words, kept as ``said``, name the reset) and writes the limit's error as the last message
of its transcript, with the reset to the second. The screen says it too: the limit's
line above the input box, its footer, or the dialog asking what to do. So a limit is
read only while the last event but notifications is that ``StopFailure`` (a later turn
makes an old limit's line on the screen history), from the transcript first, then the
hook's words, then the screen; a Claude Code agent with no hook event yet (its hooks
silent) is read from the last lines of its screen alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from the_loop.agent.limits import UsageLimit, read_limit
from the_loop.agent.transcript import TranscriptView

#: The harnesses whose screens say a usage limit in the words ``screens.json`` knows
#: (hooks say it for any harness that runs them).
LIMIT_HARNESSES = frozenset(("claude",))
#: How many of the screen's last lines an agent without hook events is read by.
_LAST_LINES = 12


def last_turn_event(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The latest event that is not a notification (None: there is none)."""
    return next((e for e in reversed(events) if e.get("event") != "Notification"), None)


def stopped_at_limit(
    harness: str,
    events: Sequence[dict[str, Any]],
    screen: str,
    activity: float,
    transcript: TranscriptView | None,
    local: tzinfo,
) -> UsageLimit | None:
    """The usage limit the agent's last turn stopped at (None: it stopped at none, or
    a later turn began)."""
    last = last_turn_event(events)
    if last is None:
        if events or harness not in LIMIT_HARNESSES:
            return None
        lines = [line for line in screen.splitlines() if line.strip()]
        return read_limit("\n".join(lines[-_LAST_LINES:]), said_at=activity, local=local)
    if last.get("event") != "StopFailure":
        return None
    if transcript is not None and transcript.limit is not None:
        return transcript.limit
    said_at = _time(last)
    for words in (last.get("said"), last.get("error")):
        if isinstance(words, str) and words:
            limit = read_limit(words, said_at=said_at, local=local)
            if limit is not None:
                return limit
    if harness not in LIMIT_HARNESSES:
        return None
    return read_limit(screen, said_at=said_at, local=local)


def _time(event: dict[str, Any]) -> float:
    value = event.get("t")
    return float(value) if isinstance(value, int | float) else 0.0
