"""Rendering a lifecycle action: one item of facts and its lines, a close's per checkout."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.render import Result
from the_loop.commands.sessions.checkout_lines import checkout_line
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

if TYPE_CHECKING:
    from the_loop.dispatch.dispatcher import CloseReport
    from the_loop.dispatch.settings import DispatchSettings
    from the_loop.dispatch.teardown import TmuxFate


def reported(ref: WorkItemRef, outcome: str, line: str, *more: str, **facts: Any) -> Result:
    """The result of a one-item action: ``{"ref", "outcome", ...facts}`` and its text lines."""
    item = {"ref": ref.ref, "outcome": outcome, **facts}
    return Result(items=(item,), text=lambda: (line, *more))


def closed(
    ref: WorkItemRef,
    settings: DispatchSettings,
    session: Session,
    report: CloseReport,
) -> Result:
    """The result of a close: its line, one line per checkout, the facts."""
    line = _closed_line(settings, session, report)
    more = [checkout_line(ref.ref, done) for done in report.checkouts]
    checkouts = [done.to_dict() for done in report.checkouts]
    removed = report.checkout_removed
    facts = {
        "checkoutRemoved": removed,
        "checkouts": checkouts,
        "tmux": [{"name": name, "fate": fate} for name, fate in report.tmux],
        **session_facts(session),
    }
    return reported(ref, "closed", line, *more, **facts)


def session_facts(session: Session | None) -> dict[str, Any]:
    """The ``session`` fact: the record as it is now, or ``None`` when there is none."""
    return {"session": session.to_dict() if session is not None else None}


#: How a close line says each fate of a tmux session (the names, joined, go in ``{}``).
_TMUX_FATES: tuple[tuple[TmuxFate, str], ...] = (
    ("kept", "kept tmux {} for its transcript"),
    ("killed", "killed tmux {}"),
    ("gone", "tmux {} is gone: no transcript kept"),
)


def _closed_line(settings: DispatchSettings, session: Session, report: CloseReport) -> str:
    """What the close did, as tmux says it ended: a transcript is claimed only when kept."""
    parts = [f"{session.ref}: closed the {session.harness or 'agent'} session"]
    order = [endpoint.tmux_target for endpoint in session.endpoints()]
    for fate, words in _TMUX_FATES:
        names = sorted(report.tmux_sessions(fate), key=lambda name: order.index(name))
        if names:
            parts.append(words.format(", ".join(names)))
    if session.cwd and settings.keep_checkout_on_close:
        parts.append(f"kept its checkout {session.cwd}")
    return "; ".join(parts)


def started_line(session: Session, checkout: Path | None) -> str:
    """The line of a spawn: the harness, its session id, its tmux session, its checkout."""
    where = f" in {checkout}" if checkout is not None else ""
    return f"{session.ref}: started {session.harness} session{in_tmux(session)}{where}"


def in_tmux(session: Session) -> str:
    """`` ID in tmux TARGET``, each part only when the record has it."""
    ident = f" {session.harness_session_id}" if session.harness_session_id else ""
    tmux = f" in tmux {session.tmux_target}" if session.tmux_target else ""
    return ident + tmux
