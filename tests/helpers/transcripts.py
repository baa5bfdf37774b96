"""Synthetic Claude Code transcripts, line for line in the shape the pinned 2.1.332 writes.

An assistant message of several content blocks is written as one line per block, each
carrying the message's id, its request id and the usage (as Claude Code does); the other
lines (the user's prompt, tool results, its bookkeeping) carry no usage of the model's.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SESSION_ID = "5f0c9a52-7d1e-4c3b-9a8e-2b6f1d0e4a77"
MODEL = "claude-sonnet-4-5-20250929"

_numbers = itertools.count(1)


def usage(
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read: int = 0,
    cache_write_5m: int = 0,
    cache_write_1h: int = 0,
) -> dict[str, Any]:
    """An API usage object as Claude Code writes it into a transcript."""
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write_5m + cache_write_1h,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output_tokens,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {
            "ephemeral_1h_input_tokens": cache_write_1h,
            "ephemeral_5m_input_tokens": cache_write_5m,
        },
        "inference_geo": "",
        "speed": "standard",
    }


def assistant_lines(
    message_usage: dict[str, Any],
    *,
    blocks: int = 1,
    model: str = MODEL,
    message_id: str = "",
    request_id: str = "",
    usages: Sequence[dict[str, Any]] = (),
    padding: str = "",
) -> list[str]:
    """The lines of one assistant message: one per content block, each with the message's
    usage (or, when ``usages`` is given, one line per usage in it)."""
    number = next(_numbers)
    message_id = message_id or f"msg_{number:024d}"
    request_id = request_id or f"req_{number:024d}"
    per_line = list(usages) or [message_usage] * blocks
    lines: list[str] = []
    for index, line_usage in enumerate(per_line):
        block: dict[str, Any] = {"type": "text", "text": f"Block {index}. {padding}"}
        entry = {
            "parentUuid": None,
            "isSidechain": False,
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": line_usage,
            },
            "apiBlockIndex": index,
            "requestId": request_id,
            "type": "assistant",
            "uuid": f"0000-{number}-{index}",
            "timestamp": "2026-12-06T18:11:49.479Z",
            "sessionId": SESSION_ID,
            "version": "2.1.332",
        }
        lines.append(json.dumps(entry, separators=(",", ":")))
    return lines


def user_line(text: str = "Please look at the tests.") -> str:
    """A user prompt's line (no usage)."""
    number = next(_numbers)
    entry = {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "uuid": f"user-{number}",
        "sessionId": SESSION_ID,
    }
    return json.dumps(entry, separators=(",", ":"))


def append(path: Path, lines: Sequence[str], *, end: str = "\n") -> int:
    """Append ``lines`` (each ended by a newline, the last by ``end``); the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(f"{line}\n" for line in lines[:-1])
    if lines:
        data += lines[-1] + end
    raw = data.encode("utf-8")
    with path.open("ab") as handle:
        handle.write(raw)
    return len(raw)


def one_turn(output_tokens: int = 350, padding: str = "") -> list[str]:
    """One turn as an agent's transcript grows by it: a prompt, a message of two blocks
    (text and a tool call), and the message after the tool's result."""
    step = usage(6, output_tokens, 24_000, 1_200, 800)
    return [
        user_line("Please run the tests and fix what fails."),
        *assistant_lines(step, blocks=2, padding=padding),
        user_line("(the tool's result)"),
        *assistant_lines(usage(4, output_tokens // 2, 25_000, 300, 0), padding=padding),
    ]
