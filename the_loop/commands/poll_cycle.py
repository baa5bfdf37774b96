"""Build one poll cycle's collaborators from the context, run it, and report it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from the_loop.commands.common import Context, warn
from the_loop.commands.poll_ports import (
    CURSOR_FILE,
    Actions,
    ClientReads,
    FileCursors,
    interval_seconds,
    live_sessions,
    poll_settings,
)
from the_loop.commands.poll_watched import FileWatchCache
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.github.backoff import Backoff, PostSpacer
from the_loop.github.client import GitHubClient
from the_loop.github.etags import FileEtagCache
from the_loop.github.poster import token_from_environment
from the_loop.polling.cycle import run_cycle
from the_loop.polling.ports import CyclePorts
from the_loop.portable.armed import CACHE_FILE as ARMED_CACHE
from the_loop.portable.armed import ArmedRefs
from the_loop.portable.poll import PollState

DEFAULT_API_URL = "https://api.github.com"


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
    layout = context.layout
    etags = FileEtagCache.for_layout(layout)
    api = context.config.get_str("integrations.github.apiUrl", DEFAULT_API_URL) or DEFAULT_API_URL
    actions = Actions(stores, open_dispatcher(context, stores), settings.prompt_template)
    spacer = PostSpacer()
    token = github_token(context)
    with GitHubClient(api, token, etags=etags, before_post=spacer.wait_turn) as client:
        reads = ClientReads(client)
        ports = CyclePorts(
            github=reads,
            cursors=FileCursors(
                layout.local_dir / CURSOR_FILE, layout.local_locks_dir / "poll-cursors.lock"
            ),
            sessions=lambda: live_sessions(stores),
            armed=ArmedRefs(
                stores.store,
                layout.local_dir / ARMED_CACHE,
                layout.local_locks_dir / "poll-armed.lock",
                warn,
            ),
            control=actions.control,
            close=actions.close,
            end_endpoint=actions.end_endpoint,
            deliver=actions.deliver,
            pane_mark=actions.pane_mark,
            emit=stores.events.emit,
            clock=time.time,
            warn=warn,
            checkpoint=checkpoint,
            should_stop=should_stop,
            watch_cache=FileWatchCache.for_layout(layout),
        )
        counts = run_cycle(settings, ports, PollState(stores.store, registry=stores.registry))
        if not counts.deferred and not counts.failed and not counts.stopped:
            etags.flush()  # only once every page read was handled: else it is read again
        stats = client.stats
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
