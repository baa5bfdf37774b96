"""Reset a work item: forget everything this machine remembers about it.

Pure orchestration over injected collaborators (seed design 000): end a live
session through the one close path, forget the session record, then clear
every portable section reset owns through ``WorkItemStore.write_sections`` so
the seal-vs-delete rule holds (with the keys another release wrote: a reset
removes the whole record). Nothing is removed here by any other means, and
every failure — a bug included — becomes an entry in ``errors``, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from the_loop.errors import CloseIncomplete, TheLoopError, describe_error, describe_unexpected
from the_loop.eventlog.log import EventLog, or_no_events
from the_loop.fsio import DirectorySyncs
from the_loop.portable.store import CHANNELS, CONTROL, POLL, PULL_REQUESTS, WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

WORKSPACE = "workspace"
SESSION = "session"
#: An unreadable portable record: counted as found and removed, never parsed.
RECORD = "record"
#: The portable sections a reset clears, in removal order.
RESET_SECTIONS = (CONTROL, POLL, PULL_REQUESTS, CHANNELS)
#: The pieces of state a reset can remove, in removal order.
PIECES = (WORKSPACE, SESSION, *RESET_SECTIONS, RECORD)

#: Ends a live session; returns True exactly when a workspace checkout was removed.
#: A close that fails part-way raises :class:`CloseIncomplete` saying whether it removed one.
CloseSession = Callable[[Session], bool]
#: Whether a session whose record says closed still has a running harness.
StillRunning = Callable[[Session], bool]


@dataclass(frozen=True)
class ResetOutcome:
    """What a reset of one work item did (or, on a dry run, would do).

    ``removed`` is a subset of ``PIECES`` in removal order; ``foreign`` names the keys
    of the portable record that another release wrote, removed with it; ``was_live``
    says a running or paused session was found; ``ended`` that it was really ended.
    """

    ref: str
    removed: tuple[str, ...] = ()
    was_live: bool = False
    errors: tuple[str, ...] = ()
    dry_run: bool = False
    ended: bool = False
    harness: str = ""
    foreign: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """Was there anything to reset? A failure counts, so it is never masked."""
        return bool(self.removed or self.foreign) or self.was_live or bool(self.errors)

    @property
    def ok(self) -> bool:
        """Found, and nothing failed."""
        return self.found and not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "found": self.found,
            "ok": self.ok,
            "removed": list(self.removed),
            "foreignSections": list(self.foreign),
            "wasLive": self.was_live,
            "ended": self.ended,
            "harness": self.harness,
            "errors": list(self.errors),
            "dryRun": self.dry_run,
        }


@dataclass
class _Progress:
    removed: list[str] = field(default_factory=list[str])
    errors: list[str] = field(default_factory=list[str])
    ended: bool = False
    foreign: tuple[str, ...] = ()


def _failure(error: Exception) -> str:
    """An expected failure's sentence; anything else is a bug, named by its type."""
    if isinstance(error, (OSError, ValueError, TheLoopError)):
        return describe_error(error)
    return describe_unexpected(error)


def _end_session(session: Session, close: CloseSession, progress: _Progress) -> None:
    try:
        checkout_removed = close(session)
    except Exception as error:  # a raising close is reported; the records still go
        progress.errors.append(f"could not end the session: {describe_error(error)}")
        # A close that failed part-way may still have removed a checkout: say so.
        if isinstance(error, CloseIncomplete) and error.checkout_removed:
            progress.removed.append(WORKSPACE)
        return
    progress.ended = True
    if checkout_removed:
        progress.removed.append(WORKSPACE)


def _forget_record(
    item: WorkItemRef,
    registry: SessionRegistry,
    syncs: DirectorySyncs | None,
    progress: _Progress,
    *,
    only_if_not_live: bool,
) -> bool:
    """Forget the record; False when a session registered meanwhile must be kept."""
    try:
        if registry.forget(item, syncs=syncs, only_if_not_live=only_if_not_live):
            progress.removed.append(SESSION)
    except OSError as error:
        progress.errors.append(f"could not remove the session record: {describe_error(error)}")
    except TheLoopError as error:
        progress.errors.append(f"not reset: {error}")
        return False
    except Exception as error:  # a bug: this item's error, never the end of the run
        progress.errors.append(f"could not remove the session record: {_failure(error)}")
    return True


def _clear_sections(
    item: WorkItemRef, store: WorkItemStore, syncs: DirectorySyncs | None, progress: _Progress
) -> None:
    try:
        result = store.write_sections(
            item, dict.fromkeys(RESET_SECTIONS), syncs=syncs, drop_foreign=True
        )
    except Exception as error:  # a bug too: this item's error, never the end of the run
        progress.errors.append(f"could not clear the work-item record: {_failure(error)}")
        return
    progress.foreign = result.foreign_removed
    progress.removed.extend(name for name in RESET_SECTIONS if name in result.removed)
    if result.replaced_unreadable and result.action in ("deleted", "sealed"):
        progress.removed.append(RECORD)


def _plan_sections(item: WorkItemRef, store: WorkItemStore, progress: _Progress) -> None:
    try:
        status, sections, progress.foreign = store.load_with_foreign(item)
    except Exception as error:
        progress.errors.append(f"could not read the work-item record: {_failure(error)}")
        return
    if status == "unreadable":
        progress.removed.append(RECORD)
    else:
        progress.removed.extend(name for name in RESET_SECTIONS if sections.get(name))


def _lookup(
    item: WorkItemRef, registry: SessionRegistry, progress: _Progress
) -> tuple[str, Session | None]:
    try:
        status, session = registry.load(item)
    except Exception as error:  # a bug too: this item's error, never the end of the run
        progress.errors.append(f"could not read the session record: {_failure(error)}")
        return "absent", None
    return status, session


def reset_work_item(
    item: WorkItemRef,
    *,
    registry: SessionRegistry,
    store: WorkItemStore,
    close: CloseSession | None = None,
    dry_run: bool = False,
    actor: str = "",
    events: EventLog | None = None,
    syncs: DirectorySyncs | None = None,
    still_running: StillRunning | None = None,
) -> ResetOutcome:
    """Reset ``item``: close a live session, forget its record, clear its portable sections.

    ``close`` None means "do not close" (a dry run, or no dispatcher): a live
    session is still reported as ``was_live`` but not ``ended``. A closed record
    whose harness ``still_running`` says is running counts as live. A dry run
    changes nothing and emits nothing; a real run emits one ``session.reset``.
    """
    progress = _Progress()
    status, session = _lookup(item, registry, progress)
    was_live = session is not None and (
        session.is_live or (still_running is not None and still_running(session))
    )
    if dry_run:
        if status != "absent":
            progress.removed.append(SESSION)
        _plan_sections(item, store, progress)
    else:
        if was_live and close is not None and session is not None:
            _end_session(session, close, progress)
        if status != "absent" and not _forget_record(
            item, registry, syncs, progress, only_if_not_live=not was_live or progress.ended
        ):
            return _report(item, progress, session, was_live, dry_run, actor, events)
        _clear_sections(item, store, syncs, progress)
    return _report(item, progress, session, was_live, dry_run, actor, events)


def _report(
    item: WorkItemRef,
    progress: _Progress,
    session: Session | None,
    was_live: bool,
    dry_run: bool,
    actor: str,
    events: EventLog | None,
) -> ResetOutcome:
    """Build the outcome and, on a real run, append its ``session.reset`` event."""
    if not dry_run:
        events = or_no_events(events)
        removed = [piece for piece in PIECES if piece in progress.removed]
        appended = events.emit(
            "session.reset",
            work_item=item.ref,
            actor=actor,
            removed=removed,
            foreign=list(progress.foreign),
            was_live=was_live,
            ended=progress.ended,
            found=bool(removed or progress.foreign) or was_live or bool(progress.errors),
            error="; ".join(progress.errors),
        )
        if not appended:
            progress.errors.append(f"could not append the session.reset event to {events.path}")
    return ResetOutcome(
        ref=item.ref,
        removed=tuple(piece for piece in PIECES if piece in progress.removed),
        was_live=was_live,
        errors=tuple(progress.errors),
        dry_run=dry_run,
        ended=progress.ended,
        harness=session.harness if session is not None else "",
        foreign=progress.foreign,
    )


def work_items_with_state(registry: SessionRegistry, store: WorkItemStore) -> list[WorkItemRef]:
    """Every work item with a session record, a section reset owns or a key another
    release wrote, sorted, once.

    Sections still only in the legacy tree count while a read would return
    them (a sealed record hides them, so a reset item is not listed again).
    """
    refs = registry.work_items() | registry.unreadable_refs() | store.unreadable_refs()
    refs |= store.refs_holding(RESET_SECTIONS, foreign=True)
    for ref in store.legacy_refs() - refs:
        if store.section(ref, CONTROL) is not None or store.section(ref, POLL) is not None:
            refs.add(ref)
    return sorted((WorkItemRef.parse(ref) for ref in refs), key=lambda item: item.ref)
