"""Claude Code's transcripts: where a session's files are, and what one line of them says.

A session's transcript is ``~/.claude/projects/<cwd, every character but an ASCII letter
or digit replaced by '-'>/<session id>.jsonl``; each subagent it runs writes its own
beside it, under ``<session id>/subagents/`` (``agent-<id>.jsonl``, in subdirectories
too). The model's usage is on the ``assistant`` lines, one line per content block of a
message, each carrying the message's usage: a message is known by its message id and
request id, never by its line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from the_loop.spend.figures import Tokens, count_or_zero

#: How deep under ``subagents/`` transcripts are looked for (subagents of subagents).
SUBAGENT_DEPTH = 4
#: A model id Claude Code writes on lines no model produced (errors, interruptions).
SYNTHETIC_MODEL = "<synthetic>"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def project_dir_name(cwd: str) -> str:
    """The directory under ``~/.claude/projects/`` holding the transcripts of ``cwd``."""
    return _NOT_ALPHANUMERIC.sub("-", cwd)


def transcript_files(
    home: Path, cwd: str, session_id: str, *, config_dir: Path | None = None
) -> list[Path]:
    """The transcripts of one session: its own (first, whether or not it exists yet),
    then every subagent's found under ``<session id>/subagents/``, sorted. Links are
    never followed; a session id that is not a plain name gives none. ``config_dir``:
    the agent's ``$CLAUDE_CONFIG_DIR`` when it has one (else ``home/.claude``)."""
    if not _SESSION_ID.fullmatch(session_id):
        return []
    config = config_dir if config_dir is not None else home / ".claude"
    project = config / "projects" / project_dir_name(cwd)
    subagents = project / session_id / "subagents"
    return [project / f"{session_id}.jsonl", *sorted(_jsonl_under(subagents, SUBAGENT_DEPTH))]


def _jsonl_under(directory: Path, depth: int) -> list[Path]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    found: list[Path] = []
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_file(follow_symlinks=False) and entry.name.endswith(".jsonl"):
            found.append(Path(entry.path))
        elif depth > 1 and entry.is_dir(follow_symlinks=False):
            found += _jsonl_under(Path(entry.path), depth - 1)
    return found


@dataclass(frozen=True)
class MessageUsage:
    """What one transcript line says a message used: the message's key (a short digest
    of its message id and request id), the model that answered, and the tokens."""

    key: str
    model: str
    tokens: Tokens


def line_usage(line: bytes) -> MessageUsage | None:
    """The usage an ``assistant`` line carries, or None: any other line, a line that is
    not JSON, a synthetic or error message, or one that used nothing."""
    if b'"usage"' not in line:
        return None
    entry = _parsed(line)
    if entry is None or entry.get("type") != "assistant" or entry.get("isApiErrorMessage"):
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    found = cast(dict[str, Any], message)
    model, usage = found.get("model"), found.get("usage")
    if not isinstance(model, str) or not model or model == SYNTHETIC_MODEL:
        return None
    if not isinstance(usage, dict):
        return None
    tokens = usage_tokens(cast(dict[str, Any], usage))
    if not tokens:
        return None
    return MessageUsage(_key(found.get("id"), entry, line), model, tokens)


def line_reported_cost(line: bytes) -> float | None:
    """The running cost in USD a ``cost-state`` line (Claude Code's own count) reports."""
    if b'"cost-state"' not in line:
        return None
    entry = _parsed(line)
    if entry is None or entry.get("type") != "cost-state":
        return None
    cost = entry.get("totalCostUSD")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
        return None
    return float(cost)


def usage_tokens(usage: dict[str, Any]) -> Tokens:
    """The tokens of an API usage object; the cache writes are the larger of their total
    and the sum of their split, and the 1-hour part never exceeds them."""
    written = count_or_zero(usage.get("cache_creation_input_tokens"))
    split: Any = usage.get("cache_creation")
    five = one_hour = 0
    if isinstance(split, dict):
        lifetimes = cast(dict[str, Any], split)
        five = count_or_zero(lifetimes.get("ephemeral_5m_input_tokens"))
        one_hour = count_or_zero(lifetimes.get("ephemeral_1h_input_tokens"))
    cache_write = max(written, five + one_hour)
    return Tokens(
        input=count_or_zero(usage.get("input_tokens")),
        output=count_or_zero(usage.get("output_tokens")),
        cache_read=count_or_zero(usage.get("cache_read_input_tokens")),
        cache_write=cache_write,
        cache_write_1h=min(one_hour, cache_write),
    )


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return cast(dict[str, Any], entry) if isinstance(entry, dict) else None


def _key(message_id: object, entry: dict[str, Any], line: bytes) -> str:
    """The message's key: its message id and request id; a line with no message id is
    its own message (by its uuid, else by its bytes)."""
    request_id = entry.get("requestId")
    uuid = entry.get("uuid")
    if isinstance(message_id, str) and message_id:
        raw = f"message\x1f{message_id}\x1f{request_id if isinstance(request_id, str) else ''}"
    elif isinstance(uuid, str) and uuid:
        raw = f"line\x1f{uuid}"
    else:
        raw = f"bytes\x1f{hashlib.sha256(line).hexdigest()}"
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=8).hexdigest()
