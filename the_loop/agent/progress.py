"""Whether an agent makes progress: when a sign of it last changed.

The signs are the hook log's size (a hook ran), the transcript's size (a line was
written) and the screen above the input box with what changes on a busy agent's screen
by itself taken out: its busy line (a spinner glyph, a verb, the elapsed time, the
tokens), its tips, the animated logo (``busy`` in ``screens.json``). The time a sign
last changed is kept per session by the caller (``to_dict``/``from_dict``), so a restart
of the daemon does not forget it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from the_loop.agent.hooks import AGENTS_DIR
from the_loop.agent.screens import PATTERNS_FILE, input_box_rule

#: The version of the kept progress's shape.
VERSION = 1
#: A rule line of the input box is at least this many of its rule character.
_RULE_LENGTH = 10


def progress_path(local_dir: Path, name: str) -> Path:
    """Where the progress of the session whose record is ``local/<name>.json`` is kept."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not a session record's name: {name!r}")
    return local_dir / AGENTS_DIR / f"{name}.progress.json"


@dataclass(frozen=True)
class Signs:
    """What shows progress: the hook log's and the transcript's sizes (bytes), and a
    digest of the screen's conversation, busy line aside."""

    hooks: int = 0
    transcript: int = 0
    screen: str = ""


@dataclass(frozen=True)
class Progress:
    """When a sign last changed (unix time), and the signs then."""

    at: float
    signs: Signs

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "at": self.at,
            "hooks": self.signs.hooks,
            "transcript": self.signs.transcript,
            "screen": self.signs.screen,
        }

    @classmethod
    def from_dict(cls, value: object) -> Progress | None:
        """The progress kept as ``value`` (None: nothing kept, or not this shape)."""
        if not isinstance(value, dict):
            return None
        found = cast(dict[str, Any], value)
        at, hooks, transcript = found.get("at"), found.get("hooks"), found.get("transcript")
        if not (isinstance(at, int | float) and isinstance(hooks, int)):
            return None
        if not isinstance(transcript, int):
            return None
        return cls(float(at), Signs(hooks, transcript, str(found.get("screen", ""))))


def advance(kept: Progress | None, signs: Signs, now: float) -> Progress:
    """The progress after seeing ``signs`` at ``now``: moved to ``now`` when any sign
    differs from those ``kept`` (or nothing was kept), else as kept."""
    if kept is None or kept.signs != signs:
        return Progress(now, signs)
    return kept


@cache
def _busy() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    raw = json.loads(PATTERNS_FILE.read_text(encoding="utf-8"))
    section: Any = raw.get("busy") or {}
    found = cast(dict[str, Any], section) if isinstance(section, dict) else {}

    def compiled(key: str) -> tuple[re.Pattern[str], ...]:
        listed: Any = found.get(key) or []
        return tuple(re.compile(str(p)) for p in cast(list[Any], listed))

    return compiled("lines"), compiled("volatile")


def conversation(screen: str, harness: str) -> str:
    """The screen's lines above the input box (all of them when it shows none), without
    blank lines, busy lines, and what changes by itself blanked."""
    lines = screen.splitlines()
    rule = input_box_rule(harness)
    if rule:
        rules = [i for i, line in enumerate(lines) if _is_rule(line, rule)]
        if len(rules) >= 2:
            lines = lines[: rules[-2]]
    dropped, volatile = _busy()
    kept: list[str] = []
    for line in lines:
        if not line.strip() or any(p.search(line) for p in dropped):
            continue
        for pattern in volatile:
            line = pattern.sub("", line)
        kept.append(" ".join(line.split()))
    return "\n".join(kept)


def screen_digest(screen: str, harness: str) -> str:
    """A short digest of :func:`conversation`: equal while nothing but the busy line
    changed."""
    return hashlib.sha256(conversation(screen, harness).encode()).hexdigest()[:24]


def _is_rule(line: str, rule: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= _RULE_LENGTH and set(stripped) == {rule}
