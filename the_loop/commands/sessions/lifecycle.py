"""``sessions close | start | pause | resume | stop``: drive a session's life.

``start``, ``pause``, ``resume`` and ``stop`` record the command in ``control``
(source ``cli``, the OS user as actor; exactly one record per invocation) and
apply it; with ``--comment`` the same keyword is then posted on the ticket,
best-effort. Everything that touches tmux or git goes through the dispatcher.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from the_loop.commands.common import (
    Context,
    format_parent,
    load_context,
    note,
    work_item_parent,
)
from the_loop.commands.render import Result, terminal_relay
from the_loop.commands.sessions.came_up import fail_an_early_exit, fail_an_early_restart
from the_loop.commands.sessions.comments import comment_parent, with_keyword_comment
from the_loop.commands.sessions.known import require_known
from the_loop.commands.sessions.lifecycle_report import (
    closed,
    in_tmux,
    reported,
    session_facts,
    started_line,
)
from the_loop.commands.stores import Stores, open_dispatcher, open_stores
from the_loop.dispatch.harnesses import HARNESSES
from the_loop.errors import TheLoopError
from the_loop.portable.control import PAUSE, RESUME, START, STOP
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

if TYPE_CHECKING:
    from the_loop.dispatch.dispatcher import Dispatcher


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``close``, ``start``, ``pause``, ``resume`` and ``stop``."""
    item, comment, formats = work_item_parent(), comment_parent(), format_parent()
    close = actions.add_parser(
        "close",
        parents=[*parents, item, formats],
        help="end a live session through the dispatcher's close path",
        description="Close the work item's live session: the record is closed, every "
        "endpoint's harness is ended, the tmux session kept or killed and the checkout "
        "removed or kept, as configured (one holding uncommitted or unpushed work is kept "
        "unless --force). Records nothing in control, posts nothing.",
    )
    tmux = close.add_mutually_exclusive_group()
    tmux.add_argument(
        "--keep-tmux",
        dest="keep_tmux",
        action="store_const",
        const=True,
        help="keep the tmux session for its transcript (harness ended)",
    )
    tmux.add_argument(
        "--kill-tmux",
        dest="keep_tmux",
        action="store_const",
        const=False,
        help="kill the tmux session (default: routing.tmux.keepSessionOnClose)",
    )
    add_force(close)
    close.set_defaults(func=run_close, keep_tmux=None)
    start = actions.add_parser(
        "start",
        parents=[*parents, item, comment, formats],
        help="start (or resume) the work item's session",
        description="Record `start` and spawn the agent in tmux inside a checkout; a paused "
        "session is resumed instead, a running one is left alone.",
    )
    start.add_argument(
        "--harness", choices=HARNESSES, help="the agent harness (default: routing.defaultHarness)"
    )
    start.add_argument(
        "--branch",
        metavar="NAME",
        help="check out this branch (e.g. a pull request's) instead of the default branch",
    )
    start.set_defaults(func=run_start)
    for name, run, text, description in _KEYWORD_ACTIONS:
        parser = actions.add_parser(
            name, parents=[*parents, item, comment, formats], help=text, description=description
        )
        if name == "stop":
            add_force(parser)
        parser.set_defaults(func=run)


def add_force(parser: argparse.ArgumentParser) -> None:
    """Add ``--force``: remove a checkout that holds work (``close``, ``stop``, ``cleanup``)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="remove the checkout even when it holds uncommitted changes or unpushed commits",
    )


# -- close and stop ----------------------------------------------------------


def run_close(args: argparse.Namespace) -> Result:
    """Close the live session (exit 1 when there is none), after a spawn or restart of the
    item that is under way."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    with stores.registry.spawn_lock(ref):
        session = stores.registry.find_by_work_item(ref)
        if session is None:
            raise TheLoopError(f"{ref.ref} has no live session on this machine")
        dispatcher = open_dispatcher(context, stores)
        report = dispatcher.close_session(
            session, "sessions close", keep_tmux=args.keep_tmux, force=args.force
        )
    return closed(ref, dispatcher.settings, session, report)


def run_stop(args: argparse.Namespace) -> Result:
    """Record ``stop`` and take the close path when a session is live (after a spawn of
    the item that is under way: it holds the spawn lock)."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    require_known(stores, ref, lambda: open_dispatcher(context, stores))
    with stores.registry.spawn_lock(ref):
        session = stores.registry.find_by_work_item(ref)
        dispatcher = open_dispatcher(context, stores) if session is not None else None
        _record(context, stores, ref, STOP)
        if session is None or dispatcher is None:
            line = f"{ref.ref}: recorded stop; no live session on this machine"
            facts: dict[str, Any] = {
                "checkoutRemoved": False,
                "checkouts": [],
                **session_facts(None),
            }
            result = reported(ref, "recorded", line, **facts)
        else:
            report = dispatcher.close_session(session, "stop", force=args.force)
            result = closed(ref, dispatcher.settings, session, report)
    return with_keyword_comment(result, args.comment, context, stores, ref, STOP)


# -- start, pause, resume ----------------------------------------------------


def run_start(args: argparse.Namespace) -> Result:
    """Spawn a session, resume a paused one, or say that one is running (exit 0)."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    session = stores.registry.find_by_work_item(ref)
    dispatcher = open_dispatcher(context, stores, progress=terminal_relay())
    if session is None:
        from the_loop.commands.sessions.ticket import first_prompt  # only a spawn needs it

        _say_when_on_defaults(context)
        spawned = dispatcher.spawn(
            ref,
            harness=args.harness,
            prompt=first_prompt(context, ref),
            branch=args.branch,
            actor=context.actor,
            record_control=True,
        )
        fail_an_early_exit(stores, dispatcher, spawned)
        line = started_line(spawned.session, spawned.checkout)
        checkout = str(spawned.checkout) if spawned.checkout is not None else None
        kept = spawned.kept_transcript
        facts = {"checkout": checkout, "keptTranscript": kept, **session_facts(spawned.session)}
        result = reported(ref, "started", line, **facts)
        if kept:
            lines = [line, f"{ref.ref}: kept the previous transcript as tmux session {kept}"]
            result = dataclasses.replace(result, text=lambda: lines)
    elif session.is_paused or _agent_gone(dispatcher, session):
        # resume_session also restarts an active session's agent whose tmux session ended.
        _record(context, stores, ref, START)
        was = "paused" if session.is_paused else "ended"
        restarts = not session.is_paused or _agent_gone(dispatcher, session)
        prompt = _ticket_prompt(context, ref)
        resumed = dispatcher.resume_session(session, actor=context.actor, prompt=prompt)
        if restarts:
            fail_an_early_restart(stores, dispatcher, resumed)
        line = f"{ref.ref}: resumed the {was} {resumed.harness} session{in_tmux(resumed)}"
        result = reported(ref, "resumed", line, checkout=resumed.cwd, **session_facts(resumed))
    else:
        _record(context, stores, ref, START)
        line = f"{ref.ref}: already running: {session.harness} session{in_tmux(session)}"
        result = reported(
            ref, "already running", line, checkout=session.cwd, **session_facts(session)
        )
    return with_keyword_comment(result, args.comment, context, stores, ref, START)


def _say_when_on_defaults(context: Context) -> None:
    """A spawn with no config file at all says so: every key has its default."""
    if context.config.source is None:
        note(
            "no config file found: every key has its default (`the-loop docs config`); "
            "`the-loop init` writes a commented .the-loop/cli-config.yaml here"
        )


def _ticket_prompt(context: Context, ref: WorkItemRef) -> Callable[[], str]:
    """The first prompt as a start renders it, read from the ticket only when asked: an
    agent restarted afresh (its session could not be resumed) is given it again."""

    def render() -> str:
        from the_loop.commands.sessions.ticket import first_prompt

        return first_prompt(context, ref)

    return render


def _agent_gone(dispatcher: Dispatcher, session: Session) -> bool:
    return bool(session.tmux_target) and dispatcher.liveness(session) in ("dead", "absent")


def run_pause(args: argparse.Namespace) -> Result:
    """Record ``pause`` and pause the live session (after a spawn under way): deliveries
    are held."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    require_known(stores, ref, lambda: open_dispatcher(context, stores))
    with stores.registry.spawn_lock(ref):
        _record(context, stores, ref, PAUSE)
        paused = stores.registry.pause(ref)
    current = paused or stores.registry.find_by_work_item(ref)
    if paused is not None:
        line = f"{ref.ref}: paused the {paused.harness} session; events are held until resume"
        result = reported(ref, "paused", line, **session_facts(paused))
    elif current is not None and current.is_paused:
        result = reported(
            ref, "already paused", f"{ref.ref}: already paused", **session_facts(current)
        )
    else:
        line = f"{ref.ref}: recorded pause; no live session on this machine"
        result = reported(ref, "recorded", line, **session_facts(None))
    return with_keyword_comment(result, args.comment, context, stores, ref, PAUSE)


def run_resume(args: argparse.Namespace) -> Result:
    """Record ``resume`` and resume a paused session: events are delivered again."""
    ref: WorkItemRef = args.work_item
    context = load_context(args)
    stores = open_stores(context)
    require_known(stores, ref, lambda: open_dispatcher(context, stores))
    session = stores.registry.find_by_work_item(ref)
    paused = session is not None and session.is_paused
    dispatcher = open_dispatcher(context, stores) if paused else None
    _record(context, stores, ref, RESUME)
    if session is None:
        line = f"{ref.ref}: recorded resume; no live session on this machine"
        result = reported(ref, "recorded", line, **session_facts(None))
    elif dispatcher is None:
        line = f"{ref.ref}: already running: {session.harness} session{in_tmux(session)}"
        result = reported(ref, "already running", line, **session_facts(session))
    else:
        prompt = _ticket_prompt(context, ref)
        resumed = dispatcher.resume_session(session, actor=context.actor, prompt=prompt)
        line = f"{ref.ref}: resumed the {resumed.harness} session{in_tmux(resumed)}"
        result = reported(ref, "resumed", line, **session_facts(resumed))
    return with_keyword_comment(result, args.comment, context, stores, ref, RESUME)


def _record(context: Context, stores: Stores, ref: WorkItemRef, command: str) -> None:
    stores.control.record(ref, command, source="cli", actor=context.actor)


_KEYWORD_ACTIONS = (
    (
        "pause",
        run_pause,
        "hold events for the work item's session",
        "Record `pause` and pause the live session: events are held until `resume`.",
    ),
    (
        "resume",
        run_resume,
        "deliver events to a paused session again",
        "Record `resume` and resume a paused session, restarting its agent if it is gone.",
    ),
    (
        "stop",
        run_stop,
        "end the work item's session",
        "Record `stop` and take the close path for the live session, as `close` does.",
    ),
)
