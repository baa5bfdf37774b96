"""The pacing policy: doubling back-off, retry-after and reset, the reserve, POST spacing."""

from __future__ import annotations

from the_loop.github.backoff import Backoff, PostSpacer, RatePolicy
from the_loop.github.replies import GitHubHTTPError, RateLimit

NOW = 1_900_000_000.0
POLICY = RatePolicy()


def refusal(
    status: int | None = 429, *, retry_after: float | None = None, rate: RateLimit | None = None
) -> GitHubHTTPError:
    return GitHubHTTPError("refused", status=status, retry_after=retry_after, rate=rate)


def rate(remaining: int, reset: float = NOW + 600) -> RateLimit:
    return RateLimit(5000, remaining, 5000 - remaining, int(reset), "core")


def waits(errors: list[GitHubHTTPError]) -> list[float]:
    backoff, seen = Backoff(), []
    for error in errors:
        backoff = POLICY.after_failure(backoff, error, NOW)
        seen.append(backoff.seconds_left(NOW))
    return seen


def test_refusals_in_a_row_back_off_from_a_minute_doubling_up_to_fifteen_minutes() -> None:
    assert waits([refusal(429)] * 6) == [60, 120, 240, 480, 900, 900]


def test_an_answer_ends_the_run_of_refusals() -> None:
    backoff = POLICY.after_failure(POLICY.after_failure(Backoff(), refusal(), NOW), refusal(), NOW)
    assert backoff.failures == 2
    later = NOW + 1000
    assert (
        POLICY.after_failure(POLICY.after_success(backoff), refusal(), later).seconds_left(later)
        == 60
    )


def test_a_longer_retry_after_is_honoured_and_a_shorter_one_still_waits_a_minute() -> None:
    assert waits([refusal(403, retry_after=3600)]) == [3600]
    assert waits([refusal(429, retry_after=5)]) == [60]


def test_a_spent_budget_waits_until_the_reset() -> None:
    assert waits([refusal(403, rate=rate(0, reset=NOW + 1800))]) == [1800]


def test_server_errors_and_silence_back_off_but_a_plain_refusal_does_not() -> None:
    assert waits([refusal(502), refusal(None)]) == [60, 120]
    assert waits([refusal(404), refusal(422)]) == [0, 0]
    assert waits([refusal(403)]) == [0]  # a permission refusal, not a rate limit


def test_below_the_reserve_only_the_listing_and_comments_steps_run_until_the_reset() -> None:
    low = rate(199, reset=NOW + 60)
    assert [POLICY.may_run(step, low, NOW) for step in ("listing", "comments", "item", "post")] == [
        True,
        True,
        False,
        False,
    ]
    assert POLICY.may_run("post", rate(200), NOW)
    assert POLICY.may_run("post", low, NOW + 60)
    assert POLICY.may_run("item", None, NOW)


def test_the_next_cycle_waits_for_the_interval_the_poll_interval_or_the_back_off() -> None:
    idle = Backoff()
    assert POLICY.next_cycle_in(60, poll_interval=None, backoff=idle, now=NOW) == 60
    assert POLICY.next_cycle_in(60, poll_interval=120, backoff=idle, now=NOW) == 120
    held = Backoff(3, NOW + 480)
    assert POLICY.next_cycle_in(60, poll_interval=120, backoff=held, now=NOW) == 480


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_posts_are_spaced_at_least_a_second_apart() -> None:
    clock = FakeClock()
    spacer = PostSpacer(1.0, clock=clock, sleep=clock.sleep)
    spacer.wait_turn()
    clock.now += 0.25
    spacer.wait_turn()
    clock.now += 5
    spacer.wait_turn()
    assert clock.slept == [0.75]
