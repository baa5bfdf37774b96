"""Issue 18, item 1, the pure part: the policy steps a repository's own back-off once per
failed cycle and the token's for a rate limit; a repository not asked keeps its wait."""

from __future__ import annotations

from typing import Any

from the_loop.github.backoff import Backoff, Backoffs, RatePolicy
from the_loop.github.replies import GitHubHTTPError

REPO, BAD = "octo/app", "octo/bad"
NOW = 1_900_000_000.0


def refused(status: int | None, **fields: Any) -> GitHubHTTPError:
    return GitHubHTTPError(f"answered {status}", status=status, **fields)


def test_the_policy_doubles_a_repositorys_wait_per_failed_cycle_and_never_touches_the_others() -> (
    None
):
    policy = RatePolicy()
    backoffs = Backoffs()
    waits: list[float] = []
    for _ in range(6):
        backoffs = policy.after_cycle(
            backoffs, [(BAD, refused(502)), (BAD, refused(None))], polled=[REPO, BAD], now=NOW
        )
        waits.append(backoffs.repositories[BAD].seconds_left(NOW))
    assert waits == [60, 120, 240, 480, 900, 900], "one step per failed cycle, not per refusal"
    assert REPO not in backoffs.repositories and backoffs.token == Backoff()
    assert backoffs.repositories[BAD].reason == "answered 502"
    cleared = policy.after_cycle(backoffs, [], polled=[BAD], now=NOW)
    assert cleared.repositories == {}
    limited = policy.after_cycle(Backoffs(), [(REPO, refused(429))], polled=[REPO], now=NOW)
    assert limited.repositories == {} and limited.token.seconds_left(NOW) == 60
    assert limited.holding(BAD, NOW) and limited.holding(REPO, NOW)
    skipped = policy.after_cycle(backoffs, [], polled=[REPO], now=NOW)
    assert skipped.repositories[BAD] == backoffs.repositories[BAD], "not polled: still held"


def test_a_saved_back_off_is_read_back_and_never_waits_past_an_hour() -> None:
    policy = RatePolicy()
    failed = policy.after_cycle(Backoffs(), [(BAD, refused(503))], polled=[BAD], now=NOW)
    again = Backoffs.from_dict(failed.to_dict(NOW), now=NOW)
    assert again == failed
    damaged = {"backing_off": {BAD: {"failures": 1, "resumeAt": 1e18, "reason": "x\x1b[2J"}}}
    read = Backoffs.from_dict(damaged, now=NOW)
    assert read.of(BAD).seconds_left(NOW) == 3600 and read.of(BAD).reason == "x [2J"
    assert Backoffs.from_dict({"backing_off": [1], "backoff": "x"}, now=NOW) == Backoffs()
