"""When the poller may talk to GitHub: back-off after refusals, the rate reserve, POST spacing.

:class:`RatePolicy` is pure: it turns a :class:`Backoff` (immutable), an error or a
rate limit, and the time it is told into the next decision. :class:`PostSpacer`
holds the one piece of state that must be waited out, with an injected clock and sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from the_loop.github.replies import GitHubHTTPError, RateLimit

#: What a request is for: the watched-set listing, the new-comments listing, the
#: look-up of one item, or a POST.
Step = Literal["listing", "comments", "item", "post"]
#: The steps that still run while the budget is below the reserve.
ESSENTIAL_STEPS: frozenset[Step] = frozenset({"listing", "comments"})


@dataclass(frozen=True)
class Backoff:
    """How many refusals in a row, and the time (epoch seconds) before which nothing is asked."""

    failures: int = 0
    resume_at: float = 0.0

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.resume_at - now)


@dataclass(frozen=True)
class RatePolicy:
    """GitHub's pacing rules, as numbers; every method is pure."""

    first_backoff: float = 60.0
    max_backoff: float = 900.0
    reserve: int = 200

    def after_failure(self, backoff: Backoff, error: GitHubHTTPError, now: float) -> Backoff:
        """The back-off after ``error``: unchanged for a refusal worth no wait (a 404, a 422).

        The wait is the longest of: the doubling step (60 s, 120 s, ... up to 15 min),
        the ``retry-after`` seconds, and the time until ``x-ratelimit-reset`` when the
        budget is spent.
        """
        if not error.retryable:
            return backoff
        wait = min(self.first_backoff * 2**backoff.failures, self.max_backoff)
        if error.retry_after is not None:
            wait = max(wait, error.retry_after)
        if error.rate is not None and error.rate.remaining == 0:
            wait = max(wait, error.rate.reset - now)
        return Backoff(backoff.failures + 1, max(backoff.resume_at, now + wait))

    def after_success(self, backoff: Backoff) -> Backoff:
        """An answered request ends the run of refusals (a wait already set still holds)."""
        return Backoff(0, backoff.resume_at)

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
