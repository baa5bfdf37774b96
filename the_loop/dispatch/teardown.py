"""Ending sessions: the close path (retention settings apply) and the cleanup callables.

:class:`Teardown` ends every endpoint's tmux session and removes the work item's
checkout(s), only ever inside the workspace root. The :class:`Dispatcher` owns one
and exposes it as ``close_session``; the cleanup command passes its callables to the
cleanup domain.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.errors import CloseIncomplete, RemovalIncomplete, TheLoopError
from the_loop.eventlog import NO_EVENTS, EventLog

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
    says whether a checkout was removed before the failure."""


@dataclass(frozen=True)
class Teardown:
    """Ends tmux sessions and removes checkouts for the dispatcher."""

    registry: SessionRegistry
    tmux: TmuxRunner
    workspace: Workspace
    settings: DispatchSettings
    events: EventLog = NO_EVENTS

    def close(self, session: Session, reason: str = "", *, keep_tmux: bool | None = None) -> bool:
        """Close the record, end every endpoint's tmux session, remove the checkout(s).

        ``keep_tmux`` (default ``routing.tmux.keepSessionOnClose``) keeps each tmux
        session for its transcript after ending the harness. Returns True exactly when a
        checkout was removed. Failures raise :class:`SessionCloseError` once every step
        was tried; the record is closed by then.
        """
        ref = session.work_item
        self.registry.close(ref, reason)
        record = self.registry.find_by_work_item(ref, include_closed=True) or session
        keep = self.settings.keep_session_on_close if keep_tmux is None else keep_tmux
        errors: list[str] = []
        for endpoint in (*record.pull_requests, record):
            if endpoint.tmux_target:
                try:
                    self._release_tmux(endpoint, keep)
                except STEP_ERRORS as error:
                    errors.append(f"tmux session {endpoint.tmux_target}: {error}")
        removed: list[str] = []
        if not self.settings.keep_checkout_on_close:
            removed = self._remove_checkouts(ref, record, errors)
        if errors:
            raise SessionCloseError(
                f"closed the session of {ref.ref}, but " + "; ".join(errors),
                checkout_removed=bool(removed),
            )
        return bool(removed)

    def end_tmux_session(self, name: str) -> bool:
        """End the harness, then kill the session; True when one was there (cleanup)."""
        try:
            if self.tmux.liveness(name) == "absent":
                return False
            self.tmux.terminate_harness(name, self.settings.harness_kill_grace_seconds)
            return self.tmux.kill(name)
        except ValueError as error:
            raise TheLoopError(str(error)) from error

    def remove_checkouts_of(self, ref: WorkItemRef) -> list[str]:
        """Remove every checkout of ``ref`` (cleanup); every one is tried before a
        :class:`RemovalIncomplete` reports the failures and carries what was removed."""
        errors: list[str] = []
        record = self.registry.find_by_work_item(ref, include_closed=True)
        removed = self._remove_checkouts(ref, record, errors)
        if errors:
            raise RemovalIncomplete("; ".join(errors), removed=tuple(removed))
        return removed

    def existing_checkouts_of(self, ref: WorkItemRef) -> list[str]:
        """The checkouts of ``ref`` that exist now (what a cleanup would remove)."""
        record = self.registry.find_by_work_item(ref, include_closed=True)
        return [str(path) for path in self.checkout_paths(ref, record) if path.exists()]

    def checkout_paths(self, ref: WorkItemRef, record: Session | None = None) -> list[Path]:
        """The checkouts a close removes: those an endpoint's ``cwd`` lies in (checkouts of
        the record's refs only), then ``ref``'s own under either strategy."""
        if not self.workspace.enabled:
            return []
        endpoints = record.endpoints() if record is not None else ()
        refs = dict.fromkeys([ref, *(endpoint.work_item for endpoint in endpoints)])
        known = [path for item in refs for path in self.workspace.checkout_paths(item)]
        chosen: list[Path] = []
        for endpoint in endpoints:
            if endpoint.cwd:
                cwd = Path(os.path.abspath(endpoint.cwd))
                chosen += [path for path in known if cwd == path or cwd.is_relative_to(path)]
        chosen += self.workspace.checkout_paths(ref)
        return list(dict.fromkeys(chosen))

    def _release_tmux(self, endpoint: Session, keep: bool) -> None:
        """Kill the endpoint's tmux session, or end its harness and keep it (retained)."""
        target = endpoint.tmux_target
        if not keep:
            self.tmux.kill(target)
            return
        if self.settings.kill_harness_on_close:
            if self.tmux.liveness(target) == "live":
                self.tmux.keep_panes(target)  # a hand-started session may not keep them
            self.tmux.terminate_harness(target, self.settings.harness_kill_grace_seconds)
        if self.tmux.liveness(target) in ("live", "dead"):
            self.events.emit("session.retained", work_item=endpoint.ref, tmux_target=target)

    def _remove_checkouts(
        self, ref: WorkItemRef, record: Session | None, errors: list[str]
    ) -> list[str]:
        """Remove each checkout of ``ref``; failures go to ``errors``; the paths removed."""
        removed: list[str] = []
        for path in self.checkout_paths(ref, record):
            try:
                if self.workspace.remove(path):
                    removed.append(str(path))
                    self.events.emit("workspace.cleaned", work_item=ref.ref, path=str(path))
            except STEP_ERRORS as error:
                errors.append(f"checkout {path}: {error}")
        return removed
