"""The poll daemon between its cycles: every :data:`TEND_SECONDS` it tends the live agents
(:meth:`~the_loop.intake.intake.Intake.tend`), reading nothing from GitHub, so a blocked
agent is said on its ticket within seconds, not at the next cycle (which is up to
``polling.reconcileSeconds`` away while a webhook receiver brings the news), and the
comments that waited for it go in as soon as it takes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from the_loop.adapters.actions import running_sessions
from the_loop.adapters.poll_factory import poll_settings, poll_wiring
from the_loop.commands.common import Context
from the_loop.commands.poll_cycle import github_token
from the_loop.commands.render import warn
from the_loop.commands.stores import open_dispatcher, open_stores
from the_loop.errors import TheLoopError
from the_loop.intake.intake import Intake
from the_loop.intake.ports import LiveSession

#: How often the daemon tends the live agents between two cycles.
TEND_SECONDS = 15.0
#: How often, between tendings, the live agents whose items have a budget are metered.
BUDGET_SECONDS = 2.0


def tend_agents(context: Context, should_stop: Callable[[], bool]) -> None:
    """One tending of every live session's agent: the records of the sessions tmux runs
    are read, never the whole store; a failure is one line on stderr."""
    _over_running(context, should_stop, Intake.tend, "tending the agents")


def keep_budgets(context: Context, should_stop: Callable[[], bool]) -> None:
    """One quick watch of the budgets: each active session tmux runs whose item has a
    budget is metered (:meth:`~the_loop.intake.intake.Intake.keep_budgets`)."""
    _over_running(context, should_stop, Intake.keep_budgets, "watching the budgets")


def _over_running(
    context: Context,
    should_stop: Callable[[], bool],
    act: Callable[[Intake, Sequence[LiveSession]], None],
    doing: str,
) -> None:
    """``act`` over an intake and the sessions tmux runs (their records only, never the
    whole store); nothing at all, not even a GitHub client, when none runs. A failure is
    one line on stderr."""
    try:
        stores = open_stores(context, source="poll")
        dispatcher = open_dispatcher(context, stores)
        sessions = running_sessions(stores, dispatcher.tmux.session_states())
        if not sessions:
            return
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
            act(Intake(settings.intake, ports.intake), sessions)
    except TheLoopError as error:
        warn(f"poll: {doing} failed: {error}")


def tending(
    sleep: Callable[[float], None],
    tend: Callable[[], None],
    stop: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    quick: Callable[[], None] | None = None,
) -> Callable[[float], None]:
    """``sleep`` cut into :data:`TEND_SECONDS` pieces with ``tend()`` after each whole one;
    with ``quick``, cut into :data:`BUDGET_SECONDS` pieces with ``quick()`` after each
    whole one that is no tending's."""
    piece = TEND_SECONDS if quick is None else BUDGET_SECONDS

    def sleep_tending(seconds: float) -> None:
        deadline = clock() + seconds
        tended = clock()
        while not stop():
            left = deadline - clock()
            if left <= 0:
                return
            sleep(min(left, piece))
            if stop() or deadline - clock() <= 0:
                continue
            if clock() - tended >= TEND_SECONDS - 1e-9:
                tended = clock()
                tend()
            elif quick is not None:
                quick()

    return sleep_tending
