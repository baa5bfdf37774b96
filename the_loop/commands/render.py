"""The one renderer: a command's frozen :class:`Result` printed as text, JSON or JSON lines.

Handlers never print their report; they return a ``Result`` and :func:`render`
writes it. Warnings and errors said while a command runs go through :func:`warn`
and :func:`error`: printed on stderr at once and kept for the JSON envelope
(``docs/cli/json.md``). Only this module writes a command's report to stdout.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Callable, Generator, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from the_loop.errors import EXIT_OK
from the_loop.records.rows import rows_document

#: The envelope's ``version``: bumped only when a member changes meaning or goes.
JSON_VERSION = 1
FORMAT_TEXT = "text"
FORMAT_TABLE = "table"  # an alias of text, kept where it was accepted before
FORMAT_JSON = "json"
FORMAT_JSONL = "jsonl"


@dataclass(frozen=True)
class Stderr:
    """A line of a text report that belongs on stderr (a per-item problem)."""

    text: str


TextLine = str | Stderr


def _no_text() -> Iterable[TextLine]:
    return ()


@dataclass(frozen=True)
class Result:
    """What a handler returns: its items, its text view, its verdict.

    ``items`` may be lazy (rows encoded as they are produced); ``text`` is called
    only for text output; ``errors`` are printed after the report and join the
    envelope's; ``streaming`` flushes stdout after every line or item.
    """

    items: Iterable[Mapping[str, Any]] = ()
    text: Callable[[], Iterable[TextLine]] = _no_text
    summary: Mapping[str, Any] = field(default_factory=dict[str, Any])
    errors: tuple[str, ...] = ()
    exit_code: int = EXIT_OK
    streaming: bool = False


@dataclass
class Said:
    """The warnings and errors one invocation has printed so far."""

    warnings: list[str] = field(default_factory=list[str])
    errors: list[str] = field(default_factory=list[str])


_said: ContextVar[Said] = ContextVar("the_loop_said")


def begin() -> Said:
    """Start a new invocation: nothing said yet."""
    said = Said()
    _said.set(said)
    return said


def current() -> Said:
    """What this invocation has said (a fresh record outside ``main``)."""
    try:
        return _said.get()
    except LookupError:
        return begin()


def warn(message: str) -> None:
    """``warning: <message>`` on stderr, kept for the envelope's ``warnings``."""
    print(f"warning: {message}", file=sys.stderr)
    current().warnings.append(message)


def error(message: str) -> None:
    """``error: <message>`` on stderr, kept for the envelope's ``errors``."""
    print(f"error: {message}", file=sys.stderr)
    current().errors.append(message)


def note(message: str) -> None:
    """``note: <message>`` on stderr: information only, never in the envelope."""
    print(f"note: {message}", file=sys.stderr)


def progress(message: str) -> None:
    """``<message>`` on stderr at once: what a long-running command is doing (a daemon's
    cycle), never in the envelope."""
    print(message, file=sys.stderr, flush=True)


def terminal_relay() -> Callable[[str], None] | None:
    """A writer of a child's progress (``git clone --progress``) to stderr, as it comes,
    when stderr is a terminal; None otherwise, so logs get no progress noise."""
    if not sys.stderr.isatty():
        return None

    def relay(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    return relay


def render(result: Result, output_format: str, *, command: str) -> int:
    """Print ``result`` in ``output_format``, then its errors; return its exit code.

    A reader that goes away (``| head``) ends the output quietly.
    """
    try:
        with _collector_paused():
            if output_format == FORMAT_JSON:
                sys.stdout.write(envelope(result, command=command))
            elif output_format == FORMAT_JSONL:
                _write_lines(result)
            else:
                _write_text(result)
        sys.stdout.flush()
    except BrokenPipeError:
        from the_loop.commands.pipes import silence_stdout

        silence_stdout()
    for problem in result.errors:
        print(f"error: {problem}", file=sys.stderr)
    return result.exit_code


def envelope(result: Result, *, command: str) -> str:
    """The one JSON document: version, command, ok, summary, items, warnings, errors."""
    head = {
        "version": JSON_VERSION,
        "command": command,
        "ok": result.exit_code == EXIT_OK,
        "summary": dict(result.summary),
    }

    def tail() -> dict[str, Any]:
        said = current()
        return {"warnings": list(said.warnings), "errors": [*said.errors, *result.errors]}

    return rows_document("items", result.items, before=head, after=tail)


def _write_lines(result: Result) -> None:
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for item in result.items:
        sys.stdout.write(encode(item) + "\n")
        if result.streaming:
            sys.stdout.flush()


def _write_text(result: Result) -> None:
    for line in result.text():
        if isinstance(line, Stderr):
            print(line.text, file=sys.stderr)
            continue
        sys.stdout.write(line + "\n")
        if result.streaming:
            sys.stdout.flush()


def table_lines(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    """A plain aligned table, one string per line (trailing spaces trimmed)."""
    table = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]


@contextlib.contextmanager
def _collector_paused() -> Generator[None]:
    """Pause the cyclic collector: every row printed is kept until it is, so a collection
    would only walk them again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
