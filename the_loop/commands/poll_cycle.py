"""Build one poll cycle's collaborators from the context, run it, and report it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from the_loop.adapters.github_reads import ClientReads
from the_loop.adapters.poll_factory import interval_seconds, poll_settings, poll_wiring
from the_loop.commands.common import Context, warn
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.github.backoff import Backoff
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
    backoff: Backoff | None = None,
) -> tuple[dict[str, Any], Backoff]:
    """One cycle over every ``polling.repositories``: the report the command prints, and
    the back-off after it (60 s doubling to 15 min on 403/429, ``retry-after`` honoured).
    Once ``should_stop()`` says so, the cycle ends after its current item."""
    started = time.monotonic()
    backoff = backoff or Backoff()
    settings = poll_settings(context.config)
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
        counts = run_cycle(settings, ports.reader, Intake(settings.intake, ports.intake))
        if not counts.deferred and not counts.failed and not counts.stopped:
            ports.etags.flush()  # only once every page read was handled: else it is read again
        stats, reads = ports.client.stats, ports.reads
    backoff = _after(reads, backoff, stores.events.emit)
    interval = interval_seconds(context.config)
    now = time.time()
    wait = reads.policy.next_cycle_in(
        interval, poll_interval=reads.poll_interval, backoff=backoff, now=now
    )
    report: dict[str, Any] = {
        "requests": stats.requests,
        "not_modified": stats.not_modified,
        **counts.to_dict(),
        "rate_remaining": reads.remaining,
        "duration": round(time.monotonic() - started, 3),
        "next_cycle_in": round(wait, 3),
        # Kept in poll-status.json, so a `--once` from cron honours the last refusal too.
        "backoff": {"failures": backoff.failures, "resumeAt": backoff.resume_at},
    }
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
    return report, backoff


def _after(reads: ClientReads, backoff: Backoff, emit: Callable[..., object]) -> Backoff:
    """The back-off once this cycle's refusals are counted; each rate limit is an event."""
    now = time.time()
    if not reads.refusals:
        return reads.policy.after_success(backoff)
    for error in reads.refusals:
        backoff = reads.policy.after_failure(backoff, error, now)
        if error.rate_limited:
            emit(
                "poll.rate_limited",
                "warning",
                status=error.status,
                retry_after=error.retry_after,
                wait_seconds=round(backoff.seconds_left(now), 3),
            )
    return backoff
