"""The poll daemon between its cycles: every :data:`TEND_SECONDS` it tends the live agents
(:meth:`~the_loop.intake.intake.Intake.tend`), reading nothing from GitHub, so a blocked
agent is said on its ticket within seconds, not at the next cycle (which is up to
``polling.reconcileSeconds`` away while a webhook receiver brings the news), and the
comments that waited for it go in as soon as it takes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from the_loop.adapters.actions import running_sessions
from the_loop.adapters.poll_factory import poll_settings, poll_wiring
from the_loop.commands.common import Context
from the_loop.commands.poll_cycle import github_token
from the_loop.commands.render import warn
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.errors import TheLoopError
from the_loop.intake.intake import Intake

#: How often the daemon tends the live agents between two cycles.
TEND_SECONDS = 15.0


def tend_agents(context: Context, should_stop: Callable[[], bool]) -> None:
    """One tending of every live session's agent: the records of the sessions tmux runs
    are read, never the whole store; a failure is one line on stderr."""
    try:
        stores = open_stores(context, source="poll")
        dispatcher = open_dispatcher(context, stores)
        sessions = running_sessions(stores, dispatcher.tmux.session_states())
        if not sessions:
            return  # nothing runs: not even a GitHub client is made
        settings = poll_settings(context.config)
        wiring = poll_wiring(
            context.config,
            stores,
            dispatcher,
            token=github_token(context),
            warn=warn,
            checkpoint=lambda _step: None,
            should_stop=should_stop,
        )
        with wiring as ports:
            Intake(settings.intake, ports.intake).tend(sessions)
    except TheLoopError as error:
        warn(f"poll: tending the agents failed: {error}")


def tending(
    sleep: Callable[[float], None],
    tend: Callable[[], None],
    stop: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[float], None]:
    """``sleep`` cut into :data:`TEND_SECONDS` pieces with ``tend()`` after each whole one."""

    def sleep_tending(seconds: float) -> None:
        deadline = clock() + seconds
        while not stop():
            left = deadline - clock()
            if left <= 0:
                return
            sleep(min(left, TEND_SECONDS))
            if not stop() and deadline - clock() > 0:
                tend()

    return sleep_tending
