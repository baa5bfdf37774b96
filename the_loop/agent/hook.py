"""The entry each of Claude Code's hooks runs: ``python -I -m the_loop.agent.hook <log>``.

It reads the hook's JSON from stdin and appends one line saying what the agent is doing
to the session's hook log, then exits 0 with nothing on stdout: it never decides for
the agent, never blocks it and never fails it. It imports nothing of the-loop but this
module, so it costs what the interpreter costs to start (``make bench`` measures it).

A line: ``{"t": <unix time>, "event": <hook event>, ...}`` with, where the event has
them, ``tool`` and ``detail`` (the command, file or pattern the tool is asked for),
``type`` and ``message`` (a notification), ``prompt`` (the start of a submitted prompt),
``source``, ``reason`` and ``error``, a failed turn's last words (``said``: a usage limit's
reset is in them), and the agent's ``transcript``. Every text is cut, so a line stays
small.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, cast

#: The most of stdin read: a hook's JSON beyond this is not the agent's state.
_READ_AT_MOST = 1 << 20
#: How much of a prompt is kept: enough for the marker lines that start a delivery.
PROMPT_KEPT = 600
_TEXT_KEPT = 400
#: How much of a path is kept.
_PATH_KEPT = 1000
#: The tool input fields that say what a tool is asked to do, in the order looked for.
_DETAIL_FIELDS = ("command", "file_path", "notebook_path", "path", "url", "pattern", "query")


def entry(payload: object, now: float) -> dict[str, object]:
    """The log line for one hook's ``payload`` (its parsed stdin) at ``now``."""
    found: dict[str, Any] = payload if isinstance(payload, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    line: dict[str, object] = {"t": round(now, 3), "event": _text(found.get("hook_event_name"))}
    tool = found.get("tool_name")
    if isinstance(tool, str):
        line["tool"] = tool[:100]
        line["detail"] = _detail(found.get("tool_input"))
    for key, name, kept in (
        ("notification_type", "type", 100),
        ("message", "message", _TEXT_KEPT),
        ("prompt", "prompt", PROMPT_KEPT),
        ("source", "source", 100),
        ("reason", "reason", 100),
        ("error", "error", _TEXT_KEPT),
        ("error_type", "errorType", 100),
        ("session_id", "session", 100),
        ("transcript_path", "transcript", _PATH_KEPT),
    ):
        value = found.get(key)
        if isinstance(value, str) and value:
            line[name] = value[:kept]
        elif isinstance(value, dict | list) and value:
            line[name] = json.dumps(value)[:kept]
    said = found.get("last_assistant_message")
    if line["event"] == "StopFailure" and isinstance(said, str) and said:
        line["said"] = said[:_TEXT_KEPT]
    return line


def _detail(tool_input: object) -> str:
    if not isinstance(tool_input, dict):
        return ""
    tool_input = cast(dict[str, Any], tool_input)
    for field in _DETAIL_FIELDS:
        value = tool_input.get(field)
        if isinstance(value, str) and value:
            return value[:_TEXT_KEPT]
    return json.dumps(tool_input)[:_TEXT_KEPT]


def _text(value: object) -> str:
    return value[:100] if isinstance(value, str) else ""


def append(log: str, line: dict[str, object]) -> None:
    """Append ``line`` to ``log`` in one write (``O_APPEND``), never through a link."""
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "replace")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(log, flags, 0o600)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def main(argv: list[str]) -> int:
    """Append what stdin says to the log named by ``argv[0]``; 0 whatever happens."""
    try:
        raw = sys.stdin.buffer.read(_READ_AT_MOST)
        try:
            payload: object = json.loads(raw.decode("utf-8", "replace") or "{}")
        except ValueError:
            payload = {}
        if argv:
            append(argv[0], entry(payload, time.time()))
    except BaseException:  # a hook never fails the agent
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
