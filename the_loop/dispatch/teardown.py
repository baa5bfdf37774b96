"""Ending sessions: the close path (retention settings apply) and the cleanup callables.

:class:`Teardown` ends every endpoint's tmux session and removes the work item's
checkout(s), only ever inside the workspace root, and never one holding the agent's
work unless forced (:mod:`the_loop.dispatch.disposal`). The :class:`Dispatcher` owns one
and exposes it as ``close_session``; the cleanup command passes its callables to the
cleanup domain; the poller's auto-close is to go through ``close`` too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from the_loop.dispatch.disposal import CheckoutDisposal, forced_by, plan_disposal
from the_loop.errors import CloseIncomplete, RemovalIncomplete, TheLoopError
from the_loop.eventlog.log import NO_EVENTS, EventLog

if TYPE_CHECKING:
    from the_loop.dispatch.settings import DispatchSettings
    from the_loop.dispatch.tmux import TmuxRunner
    from the_loop.dispatch.workspace import Workspace
    from the_loop.ref import WorkItemRef
    from the_loop.sessions.registry import SessionRegistry
    from the_loop.sessions.session import Session

#: What a tmux/git step may raise: a dispatch or store failure, or a refused value.
STEP_ERRORS = (TheLoopError, OSError, ValueError)


class SessionCloseError(CloseIncomplete):
    """``close_session`` failed after the record was closed; ``checkout_removed`` still
    says whether a checkout was removed before the failure, ``checkouts`` what was done
    with each checkout."""

    def __init__(self, message: str, *, checkouts: tuple[CheckoutDisposal, ...]) -> None:
        super().__init__(message, checkout_removed=any(done.removed for done in checkouts))
        self.checkouts = checkouts


#: What a close did with one endpoint's tmux session: kept (its pane, the transcript, is
#: still there), killed, or gone (not there, or it ended with its harness: nothing kept).
TmuxFate = Literal["kept", "killed", "gone"]


@dataclass(frozen=True)
class CloseReport:
    """What a close did with the work item's checkouts (none when they are kept by
    ``routing.workspace.keepCheckoutOnClose`` or workspaces are off) and, per endpoint's
    tmux session name, what became of it (``tmux``, in endpoint order)."""

    checkouts: tuple[CheckoutDisposal, ...] = ()
    tmux: tuple[tuple[str, TmuxFate], ...] = ()

    def tmux_sessions(self, fate: TmuxFate) -> tuple[str, ...]:
        """The tmux session names whose fate was ``fate``."""
        return tuple(name for name, done in self.tmux if done == fate)

    @property
    def checkout_removed(self) -> bool:
        return any(done.removed for done in self.checkouts)


@dataclass(frozen=True)
class Teardown:
    """Ends tmux sessions and removes checkouts for the dispatcher."""

    registry: SessionRegistry
    tmux: TmuxRunner
    workspace: Workspace
    settings: DispatchSettings
    events: EventLog = NO_EVENTS

    def close(
        self,
        session: Session,
        reason: str = "",
        *,
        keep_tmux: bool | None = None,
        force: bool = False,
        keep_checkouts: bool | None = None,
    ) -> CloseReport:
        """Close the record, end every endpoint's tmux session, remove the clean checkout(s)
        (those holding work too when ``force`` or ``removeDirtyCheckouts``).

        ``keep_tmux`` (default ``routing.tmux.keepSessionOnClose``) keeps each tmux
        session for its transcript after ending the harness; ``keep_checkouts`` (default
        ``routing.workspace.keepCheckoutOnClose``) keeps every checkout. Failures raise
        :class:`SessionCloseError` once every step was tried; the record is closed by then.
        """
        ref = session.work_item
        self.registry.close(ref, reason)
        record = self.registry.find_by_work_item(ref, include_closed=True) or session
        keep = self.settings.keep_session_on_close if keep_tmux is None else keep_tmux
        errors: list[str] = []
        tmux: list[tuple[str, TmuxFate]] = []
        for endpoint in (*record.pull_requests, record):
            if endpoint.tmux_target:
                try:
                    tmux.append((endpoint.tmux_target, self._release_tmux(endpoint, keep)))
                except STEP_ERRORS as error:
                    errors.append(f"tmux session {endpoint.tmux_target}: {error}")
        done: tuple[CheckoutDisposal, ...] = ()
        keep_checkouts = (
            self.settings.keep_checkout_on_close if keep_checkouts is None else keep_checkouts
        )
        if not keep_checkouts:
            done = self._remove_checkouts(ref, record, errors, force)
        if errors:
            raise SessionCloseError(
                f"closed the session of {ref.ref}, but " + "; ".join(errors), checkouts=done
            )
        return CloseReport(done, tuple(tmux))

    def end_tmux_session(self, name: str) -> bool:
        """End the harness, then kill the session; True when one was there (cleanup).

        A session another state root started (tagged with its root) is never ended here:
        ``TheLoopError`` names that root."""
        try:
            if self.tmux.liveness(name) == "absent":
                return False
            self._refuse_foreign(name)
            self.tmux.terminate_harness(name, self.settings.harness_kill_grace_seconds)
            return self.tmux.kill(name)
        except ValueError as error:
            raise TheLoopError(str(error)) from error

    def remove_checkouts_of(
        self, ref: WorkItemRef, *, force: bool = False
    ) -> tuple[CheckoutDisposal, ...]:
        """Remove every clean checkout of ``ref`` (cleanup; every one when forced); every one
        is tried before a :class:`RemovalIncomplete` reports the failures and carries what
        was removed (``removed``) and what was done with each checkout (``done``)."""
        errors: list[str] = []
        record = self.registry.find_by_work_item(ref, include_closed=True)
        done = self._remove_checkouts(ref, record, errors, force)
        if errors:
            removed = tuple(disposal.path for disposal in done if disposal.removed)
            raise RemovalIncomplete("; ".join(errors), removed=removed, done=done)
        return done

    def existing_checkouts_of(
        self, ref: WorkItemRef, *, force: bool = False
    ) -> tuple[CheckoutDisposal, ...]:
        """What a cleanup would do with each checkout of ``ref`` that exists now."""
        record = self.registry.find_by_work_item(ref, include_closed=True)
        return self.plan_checkouts(ref, record, force=force)

    def plan_checkouts(
        self, ref: WorkItemRef, record: Session | None, *, force: bool = False
    ) -> tuple[CheckoutDisposal, ...]:
        """What removing ``ref``'s existing checkouts would do (a dry run's report)."""
        why = forced_by(force, self.settings.remove_dirty_checkouts)
        return planned_disposals(self.workspace, ref, record, why)

    def checkout_paths(self, ref: WorkItemRef, record: Session | None = None) -> list[Path]:
        """The checkouts a close removes (see :func:`checkout_paths`)."""
        return checkout_paths(self.workspace, ref, record)

    def _refuse_foreign(self, name: str) -> None:
        """``TheLoopError`` when another state root started tmux session ``name``."""
        owner = self.tmux.foreign_owner(name)
        if owner is not None:
            raise TheLoopError(
                f"tmux session {name} was started from the state root {owner}, "
                "not this one: left running (end it from there)"
            )

    def _release_tmux(self, endpoint: Session, keep: bool) -> TmuxFate:
        """Kill the endpoint's tmux session, or end its harness and keep it (retained);
        what became of it, as tmux says once the harness ended.

        A session of that name another state root started since (its agent, not ours) is
        left running: ``TheLoopError`` names that root."""
        target = endpoint.tmux_target
        self._refuse_foreign(target)
        if not keep:
            return "killed" if self.tmux.kill(target) else "gone"
        if self.settings.kill_harness_on_close:
            if self.tmux.liveness(target) == "live":
                self.tmux.keep_panes(target)  # a hand-started session may not keep them
            self.tmux.terminate_harness(target, self.settings.harness_kill_grace_seconds)
        if self.tmux.liveness(target) not in ("live", "dead"):
            return "gone"
        self.events.emit("session.retained", work_item=endpoint.ref, tmux_target=target)
        return "kept"

    def _remove_checkouts(
        self, ref: WorkItemRef, record: Session | None, errors: list[str], force: bool
    ) -> tuple[CheckoutDisposal, ...]:
        """Remove each existing checkout of ``ref`` the rule lets go; keep the others.
        Failures go to ``errors``; returns each checkout kept and each one removed."""
        done: list[CheckoutDisposal] = []
        for path in self.checkout_paths(ref, record):
            if not _exists(path):
                self._forget_missing(path, errors)
        for planned in self.plan_checkouts(ref, record, force=force):
            if not planned.removed:
                done.append(planned)
                continue
            try:
                if self.workspace.remove(Path(planned.path)):
                    done.append(planned)
                    self.events.emit("workspace.cleaned", work_item=ref.ref, path=planned.path)
            except STEP_ERRORS as error:
                errors.append(f"checkout {planned.path}: {error}")
        return tuple(done)

    def _forget_missing(self, path: Path, errors: list[str]) -> None:
        """Let git forget a worktree deleted by hand (nothing is there to lose)."""
        try:
            self.workspace.remove(path)
        except STEP_ERRORS as error:
            errors.append(f"checkout {path}: {error}")


def checkout_paths(workspace: Workspace, ref: WorkItemRef, record: Session | None) -> list[Path]:
    """The checkouts a close removes: those an endpoint's ``cwd`` lies in (checkouts of
    the record's refs only), then ``ref``'s own under either strategy."""
    if not workspace.enabled:
        return []
    endpoints = record.endpoints() if record is not None else ()
    refs = dict.fromkeys([ref, *(endpoint.work_item for endpoint in endpoints)])
    known = [path for item in refs for path in workspace.checkout_paths(item)]
    chosen: list[Path] = []
    for endpoint in endpoints:
        if endpoint.cwd:
            cwd = Path(os.path.abspath(endpoint.cwd))
            chosen += [path for path in known if cwd == path or cwd.is_relative_to(path)]
    chosen += workspace.checkout_paths(ref)
    return list(dict.fromkeys(chosen))


def planned_disposals(
    workspace: Workspace, ref: WorkItemRef, record: Session | None, force: str
) -> tuple[CheckoutDisposal, ...]:
    """What a close would do with each existing checkout of ``ref`` (``force``: what
    forces removal of one holding work, "" for nothing)."""
    paths = [path for path in checkout_paths(workspace, ref, record) if _exists(path)]
    return tuple(plan_disposal(workspace, path, force) for path in paths)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()
