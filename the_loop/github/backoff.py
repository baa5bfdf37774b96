"""When the poller may talk to GitHub: back-off after refusals, the rate reserve, POST spacing.

:class:`RatePolicy` is pure: it turns a :class:`Backoff` (immutable), an error or a
rate limit, and the time it is told into the next decision. :class:`Backoffs` holds
the token's back-off (GitHub's rate limit, which holds every repository) and each
repository's own (its 5xx, its silence, its malformed answers, which hold it alone).
:class:`PostSpacer` holds the one piece of state that must be waited out, with an
injected clock and sleep.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from the_loop.github.replies import GitHubHTTPError, RateLimit, one_line

#: What a request is for: the watched-set listing, the new-comments listing, the
#: look-up of one item, or a POST.
Step = Literal["listing", "comments", "item", "post"]
#: The steps that still run while the budget is below the reserve.
ESSENTIAL_STEPS: frozenset[Step] = frozenset({"listing", "comments"})
#: The longest any wait may be, whatever a header or a saved file says: GitHub's
#: rate-limit window.
LONGEST_WAIT_SECONDS = 3600.0


@dataclass(frozen=True)
class Backoff:
    """How many refusals in a row, the time (epoch seconds) before which nothing is
    asked, and the refusal that set it (one line)."""

    failures: int = 0
    resume_at: float = 0.0
    reason: str = ""

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.resume_at - now)

    def to_dict(self) -> dict[str, Any]:
        return {"failures": self.failures, "resumeAt": self.resume_at, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: object, *, now: float) -> Backoff:
        """The saved back-off; none for anything that is not one, and never a wait past
        :data:`LONGEST_WAIT_SECONDS` from ``now`` (a hand edit, a damaged file)."""
        fields = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        failures, resume_at = fields.get("failures"), fields.get("resumeAt")
        reason = fields.get("reason")
        if not isinstance(failures, int) or isinstance(failures, bool):
            return cls()
        if not isinstance(resume_at, int | float) or isinstance(resume_at, bool):
            return cls()
        said = one_line(reason) if isinstance(reason, str) else ""
        if not math.isfinite(resume_at):
            return cls(failures, 0.0, said)
        return cls(failures, min(float(resume_at), now + LONGEST_WAIT_SECONDS), said)


@dataclass(frozen=True)
class Backoffs:
    """The token's back-off, which holds every repository, and each repository's own."""

    token: Backoff = Backoff()
    repositories: Mapping[str, Backoff] = field(default_factory=dict[str, Backoff])

    def of(self, repository: str) -> Backoff:
        return self.repositories.get(repository, Backoff())

    def holding(self, repository: str, now: float) -> bool:
        """Whether ``repository`` waits: for the token's rate limit, or for its own failures."""
        return self.token.seconds_left(now) > 0 or self.of(repository).seconds_left(now) > 0

    def held(self, now: float) -> list[tuple[str, Backoff]]:
        """The repositories still waiting for their own back-off, by name."""
        return sorted((n, b) for n, b in self.repositories.items() if b.seconds_left(now) > 0)

    def to_dict(self, now: float) -> dict[str, Any]:
        """What ``poll-status.json`` keeps: ``backoff`` (the token's) and ``backing_off``."""
        return {
            "backoff": self.token.to_dict(),
            "backing_off": {name: backoff.to_dict() for name, backoff in self.held(now)},
        }

    @classmethod
    def from_dict(cls, data: object, *, now: float) -> Backoffs:
        """The back-offs a status document keeps (none when it holds none)."""
        document = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        saved = document.get("backing_off")
        entries = cast(dict[Any, Any], saved) if isinstance(saved, dict) else {}
        repositories = {
            name: Backoff.from_dict(entry, now=now)
            for name, entry in entries.items()
            if isinstance(name, str)
        }
        return cls(Backoff.from_dict(document.get("backoff"), now=now), repositories)


@dataclass(frozen=True)
class RatePolicy:
    """GitHub's pacing rules, as numbers; every method is pure."""

    first_backoff: float = 60.0
    max_backoff: float = 900.0
    reserve: int = 200
    longest_wait: float = LONGEST_WAIT_SECONDS

    def after_failure(self, backoff: Backoff, error: GitHubHTTPError, now: float) -> Backoff:
        """The back-off after ``error``: unchanged for a refusal worth no wait (a 404, a 422).

        The wait is the longest of: the doubling step (60 s, 120 s, ... up to 15 min),
        the ``retry-after`` seconds, and the time until ``x-ratelimit-reset`` when the
        budget is spent; never more than ``longest_wait``.
        """
        if not error.retryable:
            return backoff
        wait = min(self.first_backoff * 2**backoff.failures, self.max_backoff)
        if error.retry_after is not None:
            wait = max(wait, error.retry_after)
        if error.rate is not None and error.rate.remaining == 0:
            wait = max(wait, error.rate.reset - now)
        wait = min(wait, self.longest_wait)
        return Backoff(backoff.failures + 1, max(backoff.resume_at, now + wait), str(error))

    def after_success(self, backoff: Backoff) -> Backoff:
        """An answered request ends the run of refusals (a wait already set still holds)."""
        return Backoff(0, backoff.resume_at, backoff.reason)

    def after_cycle(
        self,
        backoffs: Backoffs,
        refusals: Sequence[tuple[str, GitHubHTTPError]],
        *,
        polled: Collection[str],
        now: float,
    ) -> Backoffs:
        """The back-offs once a cycle over ``polled`` met ``refusals`` (repository, error).

        A rate limit steps the token's back-off (each one); a repository polled with a
        refusal worth a wait steps its own, once per cycle (its first such refusal is the
        reason), and one polled without leaves its back-off. A repository not polled
        keeps its back-off; a refusal in one not polled (an item looked up elsewhere)
        holds nothing.
        """
        token, failing = backoffs.token, dict[str, GitHubHTTPError]()
        for repository, error in refusals:
            if error.rate_limited:
                token = self.after_failure(token, error, now)
            elif error.retryable and repository in polled:
                failing.setdefault(repository, error)
        if token is backoffs.token and polled:
            token = self.after_success(token)
        repositories = {n: b for n, b in backoffs.repositories.items() if n not in polled}
        for repository, error in failing.items():
            repositories[repository] = self.after_failure(backoffs.of(repository), error, now)
        return Backoffs(token, repositories)

    def may_run(self, step: Step, rate: RateLimit | None, now: float) -> bool:
        """Below the reserve, until the reset, only the essential steps run."""
        if rate is None or rate.remaining >= self.reserve or now >= rate.reset:
            return True
        return step in ESSENTIAL_STEPS

    def next_cycle_in(
        self, interval: float, *, poll_interval: int | None, backoff: Backoff, now: float
    ) -> float:
        """Seconds until the next cycle: the interval, ``x-poll-interval`` or the back-off."""
        return max(interval, float(poll_interval or 0), backoff.seconds_left(now))


class PostSpacer:
    """Keeps POSTs at least ``spacing`` seconds apart (``wait_turn`` sleeps the rest)."""

    def __init__(
        self,
        spacing: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.spacing = spacing
        self._clock = clock
        self._sleep = sleep
        self._last: float | None = None

    def wait_turn(self) -> None:
        """Return when a POST may be sent; the next one is spaced from now."""
        if self._last is not None:
            left = self._last + self.spacing - self._clock()
            if left > 0:
                self._sleep(left)
        self._last = self._clock()
