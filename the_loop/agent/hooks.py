"""The hooks the-loop installs into Claude Code at spawn, and where they write.

Each session's hooks append to its own hook log, ``local/agents/<name>.jsonl`` (the name
of the session record's file), through :mod:`the_loop.agent.hook`. They reach the agent
through ``claude --settings <json>``: Claude Code merges them with the operator's own
settings (every source's hooks run), and no settings file of the operator is written.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

#: The directory under ``local/`` that holds the hook logs.
AGENTS_DIR = "agents"
#: The events whose hooks the-loop installs, in the order the agent meets them.
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
#: The events that name a tool, whose hooks take a matcher (every tool).
_TOOL_EVENTS = frozenset(("PreToolUse", "PermissionRequest", "PostToolUse"))
#: How long Claude Code lets a hook run before it goes on without it.
HOOK_TIMEOUT_SECONDS = 5
#: Claude Code's setting for its own continue once a usage limit resets (absent: on).
AUTO_CONTINUE_SETTING = "autoContinueAtUsageLimit"


def hook_log_path(local_dir: Path, name: str) -> Path:
    """The hook log of the session whose record is ``local/<name>.json``."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not a session record's name: {name!r}")
    return local_dir / AGENTS_DIR / f"{name}.jsonl"


def hook_command(python: str, log: Path) -> str:
    """The shell command one hook runs: this interpreter, isolated (``-I``: the checkout
    the agent works in is never on its import path), the entry, the log."""
    return shlex.join([python, "-I", "-m", "the_loop.agent.hook", str(log)])


def hook_settings(python: str, log: Path, *, continue_at_limit: bool | None = None) -> str:
    """The ``--settings`` JSON that installs a hook for every event of :data:`HOOK_EVENTS`;
    with ``continue_at_limit``, Claude Code's own continue once a usage limit resets
    (``autoContinueAtUsageLimit``) set so (None: the operator's settings decide)."""
    command: dict[str, object] = {
        "type": "command",
        "command": hook_command(python, log),
        "timeout": HOOK_TIMEOUT_SECONDS,
    }
    hooks: dict[str, list[dict[str, object]]] = {}
    for event in HOOK_EVENTS:
        group: dict[str, object] = {"hooks": [command]}
        if event in _TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks[event] = [group]
    settings: dict[str, object] = {"hooks": hooks}
    if continue_at_limit is not None:
        settings[AUTO_CONTINUE_SETTING] = continue_at_limit
    return json.dumps(settings, separators=(",", ":"))
