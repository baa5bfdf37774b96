"""Build one poll cycle's collaborators from the context, run it, and report it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from the_loop.adapters.github_reads import ClientReads
from the_loop.adapters.poll_factory import interval_seconds, poll_settings, poll_wiring
from the_loop.commands.common import Context, warn
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.github.backoff import Backoff, Backoffs
from the_loop.github.poster import token_from_environment
from the_loop.intake.intake import Intake
from the_loop.polling.cycle import run_cycle


def github_token(context: Context) -> str:
    """``$<integrations.github.tokenEnv>``, else ``$GITHUB_TOKEN``, else ``$GH_TOKEN``."""
    named = context.config.get_str("integrations.github.tokenEnv", "")
    return token_from_environment(os.environ, named)


def one_cycle(
    context: Context,
    *,
    checkpoint: Callable[[str], None],
    should_stop: Callable[[], bool] = lambda: False,
    backoffs: Backoffs | None = None,
) -> tuple[dict[str, Any], Backoffs]:
    """One cycle over every ``polling.repositories`` not backing off: the report the
    command prints, and the back-offs after it. A repository's own failures (a 5xx, no
    answer, an answer not GitHub's shape) back it off alone, 60 s doubling to 15 min;
    the token's rate limit (403/429, ``retry-after`` honoured) holds every repository.
    Once ``should_stop()`` says so, the cycle ends after its current item."""
    started, now = time.monotonic(), time.time()
    backoffs = backoffs or Backoffs()
    settings = poll_settings(context.config)
    due = tuple(name for name in settings.repositories if not backoffs.holding(name, now))
    stores = open_stores(context, source="poll")
    dispatcher = open_dispatcher(context, stores)
    wiring = poll_wiring(
        context.config,
        stores,
        dispatcher,
        token=github_token(context),
        warn=warn,
        checkpoint=checkpoint,
        should_stop=should_stop,
    )
    with wiring as ports:
        intake = Intake(settings.intake, ports.intake)
        counts = run_cycle(replace(settings, repositories=due), ports.reader, intake)
        if not counts.deferred and not counts.failed and not counts.stopped:
            ports.etags.flush()  # only once every page read was handled: else it is read again
        stats, reads = ports.client.stats, ports.reads
    backoffs = _after(reads, backoffs, due, stores.events.emit, now)
    wait = reads.policy.next_cycle_in(
        interval_seconds(context.config),
        poll_interval=reads.poll_interval,
        backoff=backoffs.token,
        now=time.time(),
    )
    skipped = [name for name in settings.repositories if name not in due]
    report: dict[str, Any] = {
        "requests": stats.requests,
        "not_modified": stats.not_modified,
        **counts.to_dict(),
        "rate_remaining": reads.remaining,
        "duration": round(time.monotonic() - started, 3),
        "next_cycle_in": round(wait, 3),
        "finishedAt": utc(time.time()),
        # Kept in poll-status.json, so a `--once` from cron honours the last refusals too.
        **backoffs.to_dict(now),
    }
    # Said every cycle (`--once` exits 1 for it); the daemon says only what is new.
    report["skipped"] = [_still_backing_off(name, backoffs.of(name), now) for name in skipped]
    report["failed"] += report["skipped"]
    stores.events.emit(
        "poll.cycle",
        requests=stats.requests,
        not_modified=stats.not_modified,
        delivered=counts.delivered,
        commands=counts.commands,
        settled=counts.settled,
        errors=len(counts.failed),
        rate_remaining=reads.remaining,
        duration_ms=int(report["duration"] * 1000),
    )
    return report, backoffs


def utc(moment: float) -> str:
    """Epoch seconds as GitHub writes a time: ``2026-12-01T09:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _still_backing_off(name: str, backoff: Backoff, now: float) -> str:
    """The line of a repository this cycle did not ask, for its own back-off."""
    left = backoff.seconds_left(now)
    return (
        f"{name}: backing off until {utc(backoff.resume_at)} (in {left:.0f} s) after "
        f"{backoff.failures} failed cycle(s): {backoff.reason}; not polled"
    )


def _after(
    reads: ClientReads,
    backoffs: Backoffs,
    polled: tuple[str, ...],
    emit: Callable[..., object],
    now: float,
) -> Backoffs:
    """The back-offs once this cycle's refusals are counted; each rate limit is an event,
    and so is each repository that starts or goes on backing off."""
    after = reads.policy.after_cycle(backoffs, reads.refusals, polled=polled, now=now)
    for repository, error in reads.refusals:
        if error.rate_limited:
            emit(
                "poll.rate_limited",
                "warning",
                repository=repository,
                status=error.status,
                retry_after=error.retry_after,
                wait_seconds=round(after.token.seconds_left(now), 3),
            )
    for repository, backoff in after.held(now):
        if backoff != backoffs.of(repository):
            emit(
                "poll.backing_off",
                "warning",
                repository=repository,
                failures=backoff.failures,
                reason=backoff.reason,
                wait_seconds=round(backoff.seconds_left(now), 3),
            )
    return after
