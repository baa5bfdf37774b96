"""A closed stdout (``the-loop sessions list | head -1``): tell it apart, end quietly.

Python ignores SIGPIPE, so a write to a pipe nobody reads raises
``BrokenPipeError``. The reader going away is not a failure of the command: the
output ends there, nothing is said on stderr, and the exit code is the command's
own (docs/cli/exit-codes.md).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reading end has been closed."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):  # replaced by a stream without a descriptor
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def silence_stdout() -> None:
    """Point stdout's descriptor at the null device, so the final flush cannot fail."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
