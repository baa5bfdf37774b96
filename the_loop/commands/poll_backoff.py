"""The back-offs ``poll`` keeps between runs and shows: who waits, why, until when.

The last cycle leaves them in ``local/poll-status.json``: the token's (GitHub's rate
limit, which holds every repository) and each repository's own. A ``poll --once``
while the token's holds sends no request; ``poll status`` lists every wait left.
"""

from __future__ import annotations

import time
from typing import Any

from the_loop.commands.common import Context
from the_loop.commands.render import Result
from the_loop.errors import EXIT_FAILED
from the_loop.fsio import read_json
from the_loop.github.backoff import LONGEST_WAIT_SECONDS, Backoff, Backoffs

#: The longest wait a saved back-off may impose: GitHub's rate-limit window.
MAX_SAVED_WAIT_SECONDS = LONGEST_WAIT_SECONDS


def last_cycle(context: Context) -> object:
    """The last cycle's report as ``local/poll-status.json`` keeps it; None when unreadable."""
    try:
        return read_json(context.layout.local_dir / "poll-status.json")
    except (OSError, ValueError):
        return None


def saved_backoff(context: Context) -> Backoffs:
    """The back-offs the last cycle left: the token's and each repository's (none when
    unreadable; never a wait past an hour, whatever the file says)."""
    return Backoffs.from_dict(last_cycle(context), now=time.time())


def waiting_result(backoff: Backoff) -> Result:
    """``--once`` while GitHub's rate limit still holds: no request, exit 1."""
    left = backoff.seconds_left(time.time())
    until = utc(backoff.resume_at)
    message = (
        f"GitHub refused the last cycle: no request before {until} (in {left:.0f} s); "
        "nothing was polled"
    )
    item = {"requests": 0, "waiting": True, "resumeAt": until, "waitSeconds": round(left, 3)}
    return Result(summary=item, text=lambda: (), errors=(message,), exit_code=EXIT_FAILED)


def status_waits(last: object) -> tuple[dict[str, Any], list[str]]:
    """What ``poll status`` adds of the waits left: ``rateLimited`` (the token's, or None)
    and ``backingOff`` (one per repository), and a line for each."""
    now = time.time()
    backoffs = Backoffs.from_dict(last, now=now)
    token = _held("", backoffs.token, now) if backoffs.token.seconds_left(now) > 0 else None
    held = [_held(name, backoff, now) for name, backoff in backoffs.held(now)]
    lines = [_line(entry) for entry in ([token] if token is not None else []) + held]
    return {"rateLimited": token, "backingOff": held}, lines


def utc(moment: float) -> str:
    """Epoch seconds as GitHub writes a time: ``2026-12-01T09:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _held(repository: str, backoff: Backoff, now: float) -> dict[str, Any]:
    return {
        "repository": repository,
        "failures": backoff.failures,
        "reason": backoff.reason,
        "until": utc(backoff.resume_at),
        "waitSeconds": round(backoff.seconds_left(now), 3),
    }


def _line(entry: dict[str, Any]) -> str:
    who = f"{entry['repository']} backs off" if entry["repository"] else "GitHub's rate limit holds"
    left = f"in {entry['waitSeconds']:.0f} s"
    return f"poll: {who} until {entry['until']} ({left}): {entry['reason']}"
