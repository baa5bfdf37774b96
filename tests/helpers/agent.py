"""The stand-in agent the poll and intake tests run through the ``command`` harness: it
writes its prompt, then everything pasted into its pane, to one file."""

from __future__ import annotations

from pathlib import Path


def reading_agent(out: Path) -> list[str]:
    """The harness argv: ``PROMPT <prompt>`` on the first line of ``out``, then what it reads."""
    return [
        "bash",
        "-c",
        'printf "PROMPT %s\\n" "$1" > "$2"; exec cat >> "$2"',
        "agent",
        "{prompt}",
        str(out),
    ]
