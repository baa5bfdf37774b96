"""Release every local resource of a work item: tmux sessions, checkouts, the session record.

Pure orchestration over injected collaborators (``dispatcher.md`` § cleanup): the
retention settings do not apply, the session record goes (its channel cursors with
it), ``cleanup`` is recorded in control, and every other portable section is kept.
A checkout holding the agent's work is kept unless forced (the injected removal
applies the one close rule, :mod:`the_loop.dispatch.disposal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from the_loop.errors import RemovalIncomplete, TheLoopError, describe_error
from the_loop.eventlog.log import or_no_events
from the_loop.portable.control import CLEANUP, SOURCES
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.eventlog.log import EventLog
    from the_loop.portable.control import ControlStore
    from the_loop.sessions.registry import SessionRegistry
    from the_loop.sessions.session import Session

#: Ends one tmux session (harness first); True when a session was there and is now gone.
EndSession = Callable[[str], bool]


class CheckoutFate(Protocol):
    """What was done (or would be) with one checkout: removed, or kept because it holds
    work, with the counts (the dispatch layer's ``CheckoutDisposal`` is one)."""

    @property
    def path(self) -> str: ...

    @property
    def removed(self) -> bool: ...

    @property
    def clean(self) -> bool: ...

    @property
    def uncommitted_files(self) -> int: ...

    @property
    def unpushed_commits(self) -> int: ...

    @property
    def unreadable(self) -> str: ...

    @property
    def forced_by(self) -> str: ...

    @property
    def branch_kept(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


#: Removes the work item's checkout(s) the close rule lets go; what it did with each.
RemoveCheckout = Callable[[WorkItemRef], Sequence[CheckoutFate]]
#: What a removal would do with each existing checkout (used by a dry run only).
FindCheckouts = Callable[[WorkItemRef], Sequence[CheckoutFate]]
#: The tmux session name the dispatcher gives a work item (found from the ref alone).
TmuxNameOf = Callable[[WorkItemRef], str]
#: The sessions holding a tmux session's earlier transcripts, kept under new names.
KeptTranscriptsOf = Callable[[str], Sequence[str]]

_T = TypeVar("_T")


@dataclass(frozen=True)
class CleanupOutcome:
    """What a cleanup did (or, on a dry run, would do) for one work item; ``checkouts``
    holds each checkout removed and each one kept because it holds work."""

    ref: str
    tmux_killed: tuple[str, ...] = ()
    checkouts: tuple[CheckoutFate, ...] = ()
    record_removed: bool = False
    control_recorded: bool = False
    errors: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def checkouts_removed(self) -> tuple[str, ...]:
        return tuple(done.path for done in self.checkouts if done.removed)

    @property
    def checkouts_kept(self) -> tuple[str, ...]:
        return tuple(done.path for done in self.checkouts if not done.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "tmuxKilled": list(self.tmux_killed),
            "checkoutsRemoved": list(self.checkouts_removed),
            "checkoutsKept": list(self.checkouts_kept),
            "checkouts": [done.to_dict() for done in self.checkouts],
            "recordRemoved": self.record_removed,
            "controlRecorded": self.control_recorded,
            "errors": list(self.errors),
            "dryRun": self.dry_run,
        }


def tmux_names(
    record: Session | None, *, derived: str = "", kept: KeptTranscriptsOf | None = None
) -> list[str]:
    """The tmux sessions to end: each PR endpoint's target, then the item's, then
    ``derived`` (the name found from the ref alone, when given), each followed by the
    transcripts ``kept`` finds kept of it, each once."""
    names: list[str] = []
    if record is not None:
        names += [pr.tmux_target for pr in record.pull_requests if pr.tmux_target]
        names += [record.tmux_target] if record.tmux_target else []
    names += [derived] if derived else []
    if kept is not None:
        names = [found for name in names for found in (name, *kept(name))]
    return list(dict.fromkeys(names))


def cleanup_work_item(
    ref: WorkItemRef,
    *,
    registry: SessionRegistry,
    end_session: EndSession | None = None,
    remove_checkout: RemoveCheckout | None = None,
    dry_run: bool = False,
    actor: str = "",
    source: str = "",
    events: EventLog | None = None,
    control: ControlStore | None = None,
    find_checkouts: FindCheckouts | None = None,
    tmux_name: TmuxNameOf | None = None,
    kept_transcripts: KeptTranscriptsOf | None = None,
) -> CleanupOutcome:
    """End every tmux session, remove the checkout(s), close and forget the record, record
    ``cleanup`` in ``control`` and emit ``session.cleaned``, in that order.

    ``tmux_name`` adds the session a record no longer names (none without it);
    ``kept_transcripts`` adds each one's transcripts kept under new names. Every
    ``OSError``/``TheLoopError`` becomes an entry in ``errors`` and the other steps
    go on. A dry run changes nothing and emits nothing: it reports the tmux names it would
    end, the checkouts ``find_checkouts`` finds, and what else it would do.
    """
    source = source or "cli"
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; expected cli or comment")
    record = registry.find_by_work_item(ref, include_closed=True)
    derived = tmux_name(ref) if tmux_name is not None else ""
    names = tmux_names(record, derived=derived, kept=kept_transcripts)
    if dry_run:
        return _planned(ref, registry, names, control, find_checkouts)
    errors: list[str] = []
    killed = _end_sessions(names, end_session, errors)
    removed = _remove_checkouts(ref, remove_checkout, errors)
    record_removed = _attempt(errors, "session record", lambda: _drop_record(registry, ref))
    recorded = control is not None and _attempt(
        errors, "control", lambda: bool(control.record(ref, CLEANUP, source, actor))
    )
    outcome = CleanupOutcome(
        ref=ref.ref,
        tmux_killed=tuple(killed),
        checkouts=tuple(removed or ()),
        record_removed=bool(record_removed),
        control_recorded=bool(recorded),
        errors=tuple(errors),
    )
    return _emit_cleaned(or_no_events(events), outcome, actor=actor, source=source)


def _emit_cleaned(
    events: EventLog, outcome: CleanupOutcome, *, actor: str, source: str
) -> CleanupOutcome:
    """Append ``session.cleaned``; the outcome, with an error when the log refused it."""
    appended = events.emit(
        "session.cleaned",
        level="error" if outcome.errors else "info",
        work_item=outcome.ref,
        actor=actor,
        command_source=source,
        tmux_killed=list(outcome.tmux_killed),
        checkout_removed=bool(outcome.checkouts_removed),
        checkouts=list(outcome.checkouts_removed),
        checkouts_kept=list(outcome.checkouts_kept),
        record_removed=outcome.record_removed,
        control_recorded=outcome.control_recorded,
        errors=list(outcome.errors),
    )
    if appended:
        return outcome
    problem = f"event log: could not append the session.cleaned event to {events.path}"
    return replace(outcome, errors=(*outcome.errors, problem))


def _planned(
    ref: WorkItemRef,
    registry: SessionRegistry,
    names: list[str],
    control: ControlStore | None,
    find_checkouts: FindCheckouts | None,
) -> CleanupOutcome:
    """The dry-run report: nothing is ended, removed, written or emitted."""
    errors: list[str] = []
    found = _attempt(errors, "checkout", lambda: find_checkouts(ref) if find_checkouts else [])
    return CleanupOutcome(
        ref=ref.ref,
        tmux_killed=tuple(names),
        checkouts=tuple(found or ()),
        record_removed=registry.record_status(ref) != "absent",
        control_recorded=control is not None,
        errors=tuple(errors),
        dry_run=True,
    )


def _end_sessions(names: list[str], end_session: EndSession | None, errors: list[str]) -> list[str]:
    """End each session in order; the names of those that were there and are now gone."""
    if end_session is None:
        return []
    ended = [_attempt(errors, f"tmux session {name}", partial(end_session, name)) for name in names]
    return [name for name, gone in zip(names, ended, strict=True) if gone]


def _remove_checkouts(
    ref: WorkItemRef, remove_checkout: RemoveCheckout | None, errors: list[str]
) -> list[CheckoutFate]:
    """What was done with each checkout, those removed (or kept) before a failure included."""
    if remove_checkout is None:
        return []
    try:
        return list(_attempt(errors, "checkout", partial(remove_checkout, ref)) or [])
    except RemovalIncomplete as error:
        errors.append(f"checkout: {error}")
        return list(error.done)


def _drop_record(registry: SessionRegistry, ref: WorkItemRef) -> bool:
    """Close first, so a record that cannot be deleted at least no longer counts as live."""
    registry.close(ref, reason="cleanup")
    return registry.forget(ref)


def _attempt(errors: list[str], what: str, step: Callable[[], _T]) -> _T | None:
    """``step()``; an ``OSError``/``TheLoopError`` is appended to ``errors`` as ``what: …``
    (a :class:`RemovalIncomplete` is raised for the caller to keep what it removed)."""
    try:
        return step()
    except RemovalIncomplete:
        raise
    except (OSError, TheLoopError) as error:
        errors.append(f"{what}: {describe_error(error)}")
        return None
