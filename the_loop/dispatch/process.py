"""The one place that runs a subprocess: argv only, a timeout, stdin closed (or the
text handed in as ``input``, which then is all the child reads).

Output is captured; a caller that shows a child's progress passes ``relay``, which
receives its stderr as it comes (and the stderr is still kept for the error message).
Every failure (a non-zero exit, a timeout, a missing binary) becomes a
:class:`DispatchError` whose message names the command and carries its stderr.
"""

from __future__ import annotations

import codecs
import os
import selectors
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from the_loop.config.defaults import default_float
from the_loop.errors import TheLoopError

#: How much of a command's stderr an error message keeps (its tail).
STDERR_LIMIT = 2000
#: ``routing.dispatchTimeoutSeconds``: the bound on every tmux and git call.
TIMEOUT_KEY = "routing.dispatchTimeoutSeconds"
DEFAULT_TIMEOUT_SECONDS = default_float(TIMEOUT_KEY)


#: Receives a child's stderr as it comes (e.g. ``git clone --progress`` shown on a terminal).
Relay = Callable[[str], None]


class DispatchError(TheLoopError):
    """A tmux, git or harness operation failed; the message says which and why."""


class Runner(Protocol):
    """The signature of :func:`run`, so collaborators can take a fake in tests."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: Mapping[str, str | None] | None = None,
        check: bool = True,
        relay: Relay | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]: ...


def _environment(changes: Mapping[str, str | None]) -> dict[str, str]:
    merged: dict[str, str | None] = {**os.environ, **changes}
    return {name: value for name, value in merged.items() if value is not None}


def describe(argv: Sequence[str]) -> str:
    """The command as one shell-quoted line, for messages only (never executed)."""
    return shlex.join(argv)


def trim(text: str, limit: int = STDERR_LIMIT) -> str:
    """``text`` stripped, keeping its last ``limit`` characters."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    check: bool = True,
    relay: Relay | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (no shell) with stdin closed and output captured as text.

    ``env`` holds variables set over the inherited environment, a ``None`` value
    removing one (``env=None``: inherit as is); ``relay`` receives the stderr as it
    comes; ``input`` (not with ``relay``) is written to the child's stdin, UTF-8, and
    the stdin closed. Raises :class:`DispatchError` on a missing binary, a timeout, or, when
    ``check``, a non-zero exit.
    """
    command = list(argv)
    if not command:
        raise ValueError("run() needs a non-empty argv")
    environment = None if env is None else _environment(env)
    if input is not None and relay is not None:
        raise ValueError("run() takes either input or relay, not both")
    try:
        if relay is not None:
            completed = _run_relaying(
                command, timeout=timeout, cwd=cwd, env=environment, relay=relay
            )
        else:
            completed = subprocess.run(
                command,
                stdin=subprocess.DEVNULL if input is None else None,
                input=input,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=timeout,
                cwd=cwd,
                env=environment,
                check=False,
            )
    except FileNotFoundError as error:
        missing = command[0] if error.filename in (None, command[0]) else error.filename
        raise DispatchError(f"cannot run `{describe(command)}`: {missing} not found") from error
    except subprocess.TimeoutExpired as error:
        raise DispatchError(
            f"`{describe(command)}` timed out after {timeout:g}s{_stderr_suffix(error.stderr)}"
        ) from error
    except OSError as error:
        raise DispatchError(
            f"cannot run `{describe(command)}`: {error.strerror or error}"
        ) from error
    if check and completed.returncode != 0:
        raise DispatchError(
            f"`{describe(command)}` failed with exit code {completed.returncode}"
            f"{_stderr_suffix(completed.stderr)}"
        )
    return completed


def _run_relaying(
    command: list[str],
    *,
    timeout: float,
    cwd: Path | None,
    env: dict[str, str] | None,
    relay: Relay,
) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` with output captured, the stderr also handed to ``relay``
    as it comes; ``TimeoutExpired`` (the child killed) past ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pipe = subprocess.PIPE
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, cwd=cwd, env=env
    ) as child:
        try:
            with selectors.DefaultSelector() as selector:
                for stream, kept in ((child.stdout, out), (child.stderr, err)):
                    if stream is not None:  # both are pipes
                        selector.register(stream, selectors.EVENT_READ, kept)
                while selector.get_map():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise subprocess.TimeoutExpired(command, timeout, stderr=bytes(err))
                    for key, _ in selector.select(left):
                        chunk = os.read(key.fd, 65536)
                        if not chunk:
                            selector.unregister(key.fileobj)
                        elif key.data is err:
                            err.extend(chunk)
                            relay(decoder.decode(chunk))
                        else:
                            out.extend(chunk)
            code = child.wait(max(deadline - time.monotonic(), 0.01))
        except BaseException:
            child.kill()
            raise
    text = (out.decode(errors="replace"), err.decode(errors="replace"))
    return subprocess.CompletedProcess(command, code, *text)


def _stderr_suffix(stderr: str | bytes | None) -> str:
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", errors="replace")
    text = trim(stderr or "")
    return f": {text}" if text else ""
