"""A bug, reported: one line for the operator, the traceback appended to the crash log.

The crash log is ``<state root>/logs/crash.log``; when the state root cannot be
found or written, the traceback goes to a per-user file in the temporary
directory instead, and the line says both where it went and why not the first.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import traceback
from pathlib import Path

from the_loop import __version__
from the_loop.errors import describe_error
from the_loop.eventlog.log import utc_timestamp
from the_loop.fsio import append_lines


def report_bug(error: BaseException, args: argparse.Namespace, argv: list[str]) -> str:
    """Append ``error``'s traceback to the crash log; return the one line to print."""
    summary = f"internal error: {_one_line(error)}"
    entry = _entry(error, argv)
    problems: list[str] = []
    for path in _candidates(args, problems):
        try:
            _append(path, entry)
        except OSError as failure:
            problems.append(f"could not write {path}: {describe_error(failure)}")
            continue
        tail = "".join(f"; {problem}" for problem in problems)
        return f"{summary} (details in {path}{tail})"
    return f"{summary} (no details written: {'; '.join(problems)})"


def _one_line(error: BaseException) -> str:
    message = " ".join(str(error).split())
    name = type(error).__name__
    return f"{name}: {message}" if message else name


def _entry(error: BaseException, argv: list[str]) -> str:
    trace = "".join(traceback.format_exception(error))
    return f"--- {utc_timestamp()} the-loop {__version__} argv={argv!r}\n{trace}\n"


def _candidates(args: argparse.Namespace, problems: list[str]) -> list[Path]:
    """The state root's crash log (when it can be found), then the temporary fallback."""
    fallback = Path(tempfile.gettempdir()) / f"the-loop-crash-{os.getuid()}.log"
    try:
        from the_loop.commands.common import load_context

        return [load_context(args).layout.crash_log, fallback]
    except Exception as failure:  # the state root itself may be what is broken
        problems.append(f"the state root could not be found: {_one_line(failure)}")
        return [fallback]


def _append(path: Path, entry: str) -> None:
    """Append ``entry`` durably and whole; never through a link, never blocking on a FIFO."""
    append_lines(path, entry.encode("utf-8", errors="replace"), mode=0o600, sync=True)
