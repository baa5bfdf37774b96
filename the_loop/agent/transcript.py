"""What the agent's transcript says of its state: how far it has grown, and whether its
last message is the error of a usage limit (with the reset, to the second).

Claude Code names its transcript in every hook's payload (``transcript_path``, kept in
the hook log as ``transcript``). A usage limit is written there as an API error message
(``isApiErrorMessage``, ``error: "rate_limit"``) whose quota says when it resets
(``quotaLimits.resetsAt``, seconds), its text the words the screen shows. Only the end
of the file is read, never through a link.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, cast

from the_loop.agent.limits import UsageLimit, read_limit
from the_loop.fsio import open_regular

#: How much of the end of a transcript is read for its last message.
TAIL_BYTES = 32 * 1024
#: The kinds of transcript lines that are messages of the conversation.
_MESSAGES = frozenset(("user", "assistant"))


@dataclass(frozen=True)
class TranscriptView:
    """A transcript as last read: its size in bytes, and the usage limit its last message
    is (None: its last message is no such error)."""

    size: int
    limit: UsageLimit | None = None


def transcript_path(events: Sequence[dict[str, Any]]) -> Path | None:
    """The transcript the latest hook event names (None: none does)."""
    for event in reversed(events):
        named = event.get("transcript")
        if isinstance(named, str) and named.startswith("/"):
            return Path(named)
    return None


def read_transcript(
    path: Path | None, *, local: tzinfo = UTC, tail_bytes: int = TAIL_BYTES
) -> TranscriptView | None:
    """The transcript at ``path`` as it is now (None: no path, or no such file); a reset
    said without a zone is in ``local``."""
    if path is None:
        return None
    try:
        descriptor = open_regular(path)  # never a link, never blocks on a FIFO
    except OSError:
        return None
    try:
        size = os.fstat(descriptor).st_size
        start = max(0, size - tail_bytes)
        os.lseek(descriptor, start, os.SEEK_SET)
        data = os.read(descriptor, size - start)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    lines = data.decode("utf-8", "replace").split("\n")
    return TranscriptView(size, _last_limit(lines[1:] if start else lines, local))


def _last_limit(lines: list[str], local: tzinfo) -> UsageLimit | None:
    """The usage limit the last message of ``lines`` is, if it is one."""
    for line in reversed(lines):
        if not line.strip() or '"type"' not in line:
            continue
        try:
            entry: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        found = cast(dict[str, Any], entry)
        if found.get("type") not in _MESSAGES:
            continue
        return _limit_of(found, local)
    return None


def _limit_of(entry: dict[str, Any], local: tzinfo) -> UsageLimit | None:
    """The usage limit of an API error message: its quota's reset, else its words'."""
    if not entry.get("isApiErrorMessage") or entry.get("error") != "rate_limit":
        return None
    text = _text(entry.get("message"))
    said = read_limit(text, said_at=_said_at(entry.get("timestamp")), local=local)
    quota: Any = entry.get("quotaLimits")
    resets: Any = cast(dict[str, Any], quota).get("resetsAt") if isinstance(quota, dict) else None
    if isinstance(resets, int | float) and not isinstance(resets, bool) and resets > 0:
        zone = said.zone if said is not None else ""
        return UsageLimit(float(resets), zone, exact=True, text=text.strip())
    return said


def _said_at(stamp: Any) -> float:
    """A transcript line's ``timestamp`` as unix time (0 when it has none)."""
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _text(message: Any) -> str:
    """The text blocks of a transcript message, joined."""
    if not isinstance(message, dict):
        return ""
    content: Any = cast(dict[str, Any], message).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        str(cast(dict[str, Any], block).get("text", ""))
        for block in cast(list[Any], content)
        if isinstance(block, dict)
    ]
    return "\n".join(texts)
