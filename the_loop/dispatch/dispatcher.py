"""The dispatcher: spawn, resume, close and clean up a work item's sessions for real.

It composes the stores (session registry, control store) with the process layer
(tmux, git checkouts, harness adapters). ``close_session`` is the one close path
shared by ``stop``, ``close`` and ``reset``; ``teardown`` lends the cleanup command
its callables (the command calls the cleanup domain). See ``dispatcher.md``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.agent.hooks import hook_log_path, hook_settings
from the_loop.dispatch.settings import AgentEnvironment, DispatchSettings, agent_environment
from the_loop.dispatch.startup import EarlyExit, watch_start
from the_loop.dispatch.teardown import STEP_ERRORS, CloseReport, SessionCloseError, Teardown
from the_loop.dispatch.tmux import tmux_session_name
from the_loop.errors import TheLoopError, or_ignore_warnings
from the_loop.eventlog.log import or_no_events
from the_loop.portable.control import START, ControlRecord
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import FrozenChoices, WorkItemStateFile, resolve_frozen_choices
from the_loop.sessions.session import Session
from the_loop.spec.checkouts import with_lane

#: What an agent's session is told of the-loop's own state root and config file.
STATE_ROOT_VARIABLE = "THE_LOOP_STATE_ROOT"
CONFIG_VARIABLE = "THE_LOOP_CLI_CONFIG"

if TYPE_CHECKING:
    from the_loop.config.file import Config
    from the_loop.dispatch.harnesses import Harness
    from the_loop.dispatch.tmux import TmuxRunner
    from the_loop.dispatch.workspace import Checkout, Workspace
    from the_loop.eventlog.log import EventLog
    from the_loop.portable.control import ControlStore
    from the_loop.portable.store import WorkItemStore
    from the_loop.sessions.registry import SessionRegistry

__all__ = ["CloseReport", "DispatchSettings", "Dispatcher", "SessionCloseError", "SpawnResult"]

_STEP_NAMES = {
    "lock": "taking the spawn lock",
    "control": "recording the start command",
    "session record": "checking the session record",
    "harness": "choosing the harness",
    "tmux": "starting the harness in tmux",
    "checkout": "preparing the checkout",
    "register": "registering the session",
}


@dataclass(frozen=True)
class SpawnResult:
    """A spawned session; ``checkout`` is None when workspaces are disabled."""

    session: Session
    checkout: Path | None
    created_checkout: bool
    #: The tmux name a previous (dead) session's transcript was kept under, if any.
    kept_transcript: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session.to_dict(),
            "checkout": None if self.checkout is None else str(self.checkout),
            "createdCheckout": self.created_checkout,
            "keptTranscript": self.kept_transcript,
        }


@dataclass
class _Spawning:
    """A spawn in progress: the step it is in and what it has made so far (the control
    record it wrote, with the one it replaced; a checkout; a tmux session)."""

    step: str = "lock"
    checkout: Checkout | None = None
    tmux_target: str = ""
    recorded: ControlRecord | None = None
    previous: ControlRecord | None = None
    undo_problems: tuple[str, ...] = ()

    def result(self, session: Session) -> SpawnResult:
        checkout = self.checkout
        return SpawnResult(
            session=session,
            checkout=None if checkout is None else checkout.path,
            created_checkout=checkout is not None and checkout.created,
        )


class Dispatcher:
    """Spawns, resumes and closes sessions; every collaborator is injected.

    Failures raise :class:`TheLoopError` (exit 1) with the sentence the operator reads.
    Warnings (e.g. an unreadable work-item state file) go to ``on_warning``.
    """

    def __init__(
        self,
        config: Config,
        *,
        registry: SessionRegistry,
        control_store: ControlStore,
        tmux: TmuxRunner,
        workspace: Workspace,
        harnesses: Mapping[str, Harness],
        events: EventLog | None = None,
        portable: WorkItemStore | None = None,
        on_warning: Callable[[str], None] | None = None,
        environ: Mapping[str, str] | None = None,
        state_root: str = "",
    ) -> None:
        self.config = config
        #: The state root this dispatcher's records are in: an agent's ``the-loop done``
        #: reaches the same one (``$THE_LOOP_STATE_ROOT`` in its environment).
        self.state_root = state_root
        #: The spawning process's environment, what an agent's session carries of it.
        self.environ = os.environ if environ is None else environ
        self.settings = DispatchSettings.from_config(config)
        self.registry = registry
        self.control_store = control_store
        self.tmux = tmux
        self.workspace = workspace
        self.harnesses = dict(harnesses)
        self.events = or_no_events(events)
        self.portable = portable if portable is not None else control_store.store
        self._warn = or_ignore_warnings(on_warning)
        self.teardown = Teardown(registry, tmux, workspace, self.settings, self.events)

    # -- spawn and resume ----------------------------------------------------------

    def spawn(
        self,
        ref: WorkItemRef,
        *,
        harness: str | None = None,
        prompt: str = "",
        branch: str | None = None,
        actor: str = "",
        record_control: bool = True,
    ) -> SpawnResult:
        """Refuse a live session, record ``start``, prepare the checkout, start the harness in
        tmux, register it: all under the item's spawn lock, so two spawns never interleave.

        On any failure what this call made and nobody adopted is undone (its tmux session,
        a checkout it created, its ``start`` unless a command was recorded since),
        ``session.spawn_failed`` is emitted and :class:`TheLoopError` is raised.
        """
        progress = _Spawning()
        try:
            with self.registry.spawn_lock(ref):
                try:
                    progress.step = "session record"
                    self._refuse_live_record(ref)
                    if record_control:
                        self._record_start(ref, progress, actor)
                    prompt = prompt or self.settings.prompt
                    return self._spawn_steps(ref, progress, harness, prompt, branch)
                except BaseException:
                    progress.undo_problems = tuple(self._undo_spawn(ref, progress))
                    raise
        except BaseException as error:
            what = _STEP_NAMES.get(progress.step, progress.step)
            message = f"cannot start a session for {ref.ref}: {what} failed: {error}"
            message += "".join(f"; and {problem}" for problem in progress.undo_problems)
            self.events.emit(
                "session.spawn_failed",
                "error",
                work_item=ref.ref,
                error=message,
                step=progress.step,
            )
            if isinstance(error, STEP_ERRORS):
                raise TheLoopError(message) from error
            raise

    def _spawn_steps(
        self,
        ref: WorkItemRef,
        progress: _Spawning,
        harness: str | None,
        prompt: str,
        branch: str | None,
    ) -> SpawnResult:
        progress.step = "harness"
        harness_name, chosen = self._harness(harness)
        self.refuse_unready(harness_name, chosen)
        progress.step = "tmux"
        target = self._free_tmux_target(ref)
        progress.step = "checkout"
        cwd = self._prepare(ref, branch, progress)
        progress.step = "harness"
        choices = self.frozen_choices(ref, cwd)
        prompt = with_lane(prompt, cwd, ref, on_warning=self._warn)
        session = Session(
            ref,
            harness_name,
            chosen.new_session_id(),
            cwd=str(cwd),
            tmux_target=target,
            model=choices.model,
            effort=choices.effort,
        )
        argv = chosen.start_argv(
            session_id=session.harness_session_id,
            work_item=ref,
            prompt=prompt,
            model=session.model,
            effort=session.effort,
            hooks=self.hooks_for(ref, chosen, fresh=True),
        )
        progress.step = "tmux"
        kept = self.tmux.spawn(target, cwd, argv, self.agent_env(harness_name))
        progress.tmux_target = target
        progress.step = "register"
        session = self.registry.register(session)
        self._emit_spawned(session, session_per_pr=choices.session_per_pr)
        return replace(progress.result(session), kept_transcript=kept)

    def _record_start(self, ref: WorkItemRef, progress: _Spawning, actor: str) -> None:
        """Record ``start``, remembering what it replaced (for the undo)."""
        progress.step = "control"
        progress.previous = self.control_store.get(ref)
        progress.recorded = self.control_store.record(ref, START, source="cli", actor=actor)

    def resume_session(
        self, session: Session, *, actor: str = "", prompt: Callable[[], str] | None = None
    ) -> Session:
        """Resume a paused session; restart its harness (resume argv, same id and cwd) when
        its tmux target is no longer live: afresh (start argv, same id, ``prompt()`` again)
        when the harness says its session cannot be resumed (a Claude Code session that
        never had a turn). Returns the record as it is now.

        Raises :class:`TheLoopError` when there is no live session or the restart fails
        (a session this call resumed is paused again). Runs under the item's spawn lock, so
        a concurrent start or resume sees the restarted harness instead of starting another.
        """
        ref = session.work_item
        with self.registry.spawn_lock(ref):
            return self._resume_locked(ref, actor, prompt)

    def _resume_locked(
        self, ref: WorkItemRef, actor: str, prompt: Callable[[], str] | None
    ) -> Session:
        record = self.registry.find_by_work_item(ref)
        if record is None:
            raise TheLoopError(
                f"{ref.ref} has no live session to resume; "
                f"start one with `the-loop sessions start --work-item '{ref.ref}'`"
            )
        resumed = self.registry.resume(ref) if record.is_paused else None
        record = resumed or record
        if record.tmux_target and self.liveness(record) in ("dead", "absent"):
            try:
                self._restart(record, actor, prompt)
            except STEP_ERRORS as error:
                if resumed is not None:
                    self.registry.pause(ref)
                raise TheLoopError(f"cannot restart the session of {ref.ref}: {error}") from error
        return self.registry.find_by_work_item(ref) or record

    def _restart(self, record: Session, actor: str, prompt: Callable[[], str] | None) -> None:
        _, harness = self._harness(record.harness)
        cwd = Path(record.cwd)
        if not cwd.is_dir():
            raise TheLoopError(
                f"its working directory {cwd} is gone; "
                f"run `the-loop sessions reset --work-item '{record.ref}'` and start again"
            )
        env = self.agent_env(record.harness)
        session_id, hooks = record.harness_session_id, self.hooks_for(record.work_item, harness)
        resumable = harness.can_resume(session_id, cwd=cwd, env=env)
        if resumable:
            argv = harness.resume_argv(
                session_id=session_id,
                work_item=record.work_item,
                model=record.model,
                effort=record.effort,
                hooks=hooks,
            )
        else:
            argv = harness.start_argv(
                session_id=session_id,
                work_item=record.work_item,
                prompt=self._prompt_again(record, prompt),
                model=record.model,
                effort=record.effort,
                hooks=hooks,
            )
        kept = self.tmux.spawn(record.tmux_target, cwd, argv, env)
        if kept:
            self._warn(f"{record.ref}: kept the previous transcript as tmux session {kept}")
        fresh = {} if resumable else {"fresh_start": True}
        self._emit_spawned(record, resumed=True, actor=actor, **fresh)

    def _prompt_again(self, record: Session, prompt: Callable[[], str] | None) -> str:
        """The first prompt again, for an agent started afresh (``""`` and a warning when
        the caller has none to give)."""
        if prompt is not None:
            first = prompt()
            if not record.cwd:
                return first
            return with_lane(first, Path(record.cwd), record.work_item, on_warning=self._warn)
        self._warn(
            f"{record.ref}: its agent never had a turn to resume: started afresh as session "
            f"{record.harness_session_id}, without the ticket's prompt"
        )
        return ""

    def wait_until_up(self, session: Session, seconds: float) -> EarlyExit | None:
        """Watch the agent just started for ``session`` for ``seconds``: an
        :class:`~the_loop.dispatch.startup.EarlyExit` (its status, its pane's last lines)
        when it exited, or its tmux session ended, within them; None when it is still up
        (or tmux did not answer, or ``seconds`` is 0)."""
        if not session.tmux_target:
            return None
        target = session.tmux_target
        view, history = partial(self.tmux.pane_view, target), partial(self.tmux.capture, target)
        return watch_start(view, seconds, history=history)

    def hook_log(self, ref: WorkItemRef) -> Path:
        """Where the hooks of ``ref``'s agent write (:mod:`the_loop.agent.hooks`)."""
        record = self.registry.path_for(ref)
        return hook_log_path(record.parent, record.stem)

    def hooks_for(self, ref: WorkItemRef, harness: Harness, *, fresh: bool = False) -> str:
        """The hooks' ``--settings`` for an agent of ``harness`` (``""``: it takes none);
        the hook log's directory is made here, so the first hook finds it. A ``fresh``
        spawn (a new session, not a restart) starts a new log: what an earlier session
        of the item did says nothing of this one. With ``routing.resumeAfterLimit`` the
        agent's own continue at a usage limit is turned off: the-loop continues it."""
        if not harness.takes_hooks:
            return ""
        log = self.hook_log(ref)
        log.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            log.unlink(missing_ok=True)
        own_continue = False if self.settings.resume_after_limit else None
        return hook_settings(sys.executable, log, continue_at_limit=own_continue)

    def refuse_unready(self, name: str, harness: Harness) -> None:
        """Refuse to start a Claude Code agent that would sit at a first-run dialog nobody
        answers (onboarding, the API key's approval, the bypass warning, bypass mode as
        root): one line naming the missing piece and `the-loop doctor`."""
        if not harness.takes_hooks:
            return
        from the_loop.agent.firstrun import (
            API_KEY_VARIABLE,
            claude_files,
            read_answers,
            refuses_bypass_as_root,
            unattended_gaps,
        )

        env = self.agent_env(name)
        args = tuple(getattr(harness, "args", ()))
        try:
            claude_json, settings, problem = read_answers(claude_files(env))
        except KeyError:  # no HOME: Claude Code cannot run either
            claude_json, settings, problem = {}, {}, "HOME is not set"
        gaps = [problem] if problem else []
        gaps += unattended_gaps(
            claude_json, api_key=env.get(API_KEY_VARIABLE), args=args, settings=settings
        )
        if refuses_bypass_as_root(args, uid=os.getuid(), environ=env):
            gaps.append("Claude Code refuses bypass mode as root outside a sandbox (IS_SANDBOX=1)")
        if gaps:
            raise TheLoopError(
                f"the claude agent would wait at a dialog nobody answers: {'; '.join(gaps)}; "
                "run `the-loop doctor` (`--fix` settles what it safely can)"
            )

    def agent_env(self, harness: str) -> dict[str, str]:
        """The environment an agent of ``harness`` starts with: this process's, as
        :func:`~the_loop.dispatch.settings.agent_environment` carries it, never a secret
        its ``passEnv`` does not list."""
        secrets = AgentEnvironment.from_config(self.config, (harness,))
        env = agent_environment(
            self.environ,
            passed=secrets.passed.get(harness, frozenset()),
            withheld=secrets.withheld_from(harness),
        )
        # The agent's own commands (``the-loop done``) find this state root and config.
        if self.state_root:
            env[STATE_ROOT_VARIABLE] = self.state_root
        if self.config.source is not None:
            env[CONFIG_VARIABLE] = os.path.abspath(self.config.source)
        return env

    # -- close ---------------------------------------------------------------------

    def close_session(
        self,
        session: Session,
        reason: str = "",
        *,
        keep_tmux: bool | None = None,
        force: bool = False,
        keep_checkouts: bool | None = None,
    ) -> CloseReport:
        """Close the record, end every endpoint's tmux session (kept for its transcript
        when ``keep_tmux``, default ``routing.tmux.keepSessionOnClose``), remove the
        checkout(s) unless ``keep_checkouts`` (default: as configured), each only when
        clean or forced. Failures raise :class:`SessionCloseError` after the record is
        closed."""
        return self.teardown.close(
            session, reason, keep_tmux=keep_tmux, force=force, keep_checkouts=keep_checkouts
        )

    def checkout_paths(self, ref: WorkItemRef, record: Session | None = None) -> list[Path]:
        """The checkouts a close of ``record`` removes (see :meth:`Teardown.checkout_paths`)."""
        return self.teardown.checkout_paths(ref, record)

    # -- lookups ---------------------------------------------------------------------

    def tmux_target_for(self, ref: WorkItemRef) -> str:
        """``loop-<slug>``, or ``loop-<slug>~<hash>`` when the record's name is disambiguated."""
        return tmux_session_name(self.registry.path_for(ref).stem)

    def frozen_choices(self, ref: WorkItemRef, checkout: Path) -> FrozenChoices:
        """Per field: the state file in ``checkout``, the retired ``graph`` section, config."""
        try:
            from_file = WorkItemStateFile(checkout, ref, on_warning=self._warn).frozen_choices()
        except STEP_ERRORS as error:
            self._warn(f"{ref.ref}: ignoring the work item state file: {error}")
            from_file = None
        graph = self.control_store.frozen_graph(ref)
        return resolve_frozen_choices(from_file, graph, self.settings.defaults)

    def liveness(self, session: Session) -> str:
        """``live``, ``dead``, ``absent`` or ``unknown`` of the session's own tmux target."""
        if not session.tmux_target:
            return "absent"
        try:
            return self.tmux.liveness(session.tmux_target)
        except ValueError:
            return "unknown"

    def attach_argv(self, session: Session, *, read_only: bool) -> list[str]:
        """The argv attaching a terminal to the session's tmux target."""
        if not session.tmux_target:
            raise TheLoopError(f"the session of {session.ref} has no tmux session to attach to")
        try:
            return self.tmux.attach_argv(session.tmux_target, read_only)
        except ValueError as error:
            raise TheLoopError(str(error)) from error

    # -- spawn helpers -------------------------------------------------------------

    def _refuse_live_record(self, ref: WorkItemRef) -> None:
        existing = self.registry.find_by_work_item(ref)
        if existing is not None:
            raise TheLoopError(
                f"{ref.ref} already has a live {existing.harness} session ({existing.status}); "
                f"attach to it with `the-loop sessions attach --work-item '{ref.ref}'`, "
                "or see it in `the-loop sessions list`"
            )

    def _free_tmux_target(self, ref: WorkItemRef) -> str:
        """The item's tmux name, refused while a live tmux session holds it."""
        target = self.tmux_target_for(ref)
        if self.tmux.liveness(target) == "live":
            owner = self.tmux.foreign_owner(target)
            if owner is not None:
                raise TheLoopError(
                    f"tmux session {target} is already running for the state root {owner}; "
                    "run the-loop from that project, or give each project its own "
                    "`routing.tmux.socket`"
                )
            raise TheLoopError(
                f"tmux session {target} is already running, with no live session record of "
                f"{ref.ref} here; see `the-loop sessions list`, and when nothing uses it, "
                f"`the-loop sessions cleanup --work-item '{ref.ref}'` ends it"
            )
        return target

    def _harness(self, name: str | None) -> tuple[str, Harness]:
        """The named (default: configured) harness, refused when it cannot run here."""
        from the_loop.dispatch.harnesses import cannot_run

        chosen = name or self.settings.default_harness
        harness = self.harnesses.get(chosen)
        if harness is None:
            if chosen == "command":
                raise TheLoopError(cannot_run(chosen, None))
            known = ", ".join(sorted(self.harnesses)) or "none"
            raise TheLoopError(f"unknown harness {chosen!r} (configured: {known})")
        if not harness.available():
            raise TheLoopError(cannot_run(chosen, harness.binary))
        return chosen, harness

    def _prepare(self, ref: WorkItemRef, branch: str | None, progress: _Spawning) -> Path:
        """The checkout (prepared when workspaces are enabled) or ``routing.spawnWorkdir``."""
        if not self.workspace.enabled:
            workdir = Path(os.path.abspath(Path(self.settings.spawn_workdir).expanduser()))
            if not workdir.is_dir():
                raise TheLoopError(f"routing.spawnWorkdir {workdir} is not a directory")
            return workdir
        checkout = self.workspace.prepare(ref, branch=branch)
        progress.checkout = checkout
        self.events.emit(
            "workspace.prepared",
            work_item=ref.ref,
            path=str(checkout.path),
            strategy=checkout.strategy,
            created=checkout.created,
        )
        return checkout.path

    def _undo_spawn(self, ref: WorkItemRef, progress: _Spawning) -> list[str]:
        """Undo what this spawn made and nobody adopted; the problems met (never raised).

        Its tmux session is killed; a checkout it created is removed unless a live record
        has its working directory there; its ``start`` is rolled back unless a command was
        recorded since.
        """
        checkout = progress.checkout
        undo: list[tuple[str, Callable[[], object]]] = []
        if progress.tmux_target:
            undo.append(("kill its tmux session", partial(self.tmux.kill, progress.tmux_target)))
        if checkout is not None and checkout.created:
            remove = partial(self._remove_unadopted_checkout, ref, checkout.path)
            undo.append(("remove its checkout", remove))
        if progress.recorded is not None:
            restore = partial(
                self.control_store.restore, ref, progress.previous, replacing=progress.recorded
            )
            undo.append(("restore the control record", restore))
        problems: list[str] = []
        for what, action in undo:
            try:
                action()
            except STEP_ERRORS as error:
                problems.append(f"could not {what}: {error}")
        return problems

    def _remove_unadopted_checkout(self, ref: WorkItemRef, path: Path) -> bool:
        """Remove the checkout at ``path`` unless a live record of ``ref`` works in it."""
        record = self.registry.find_by_work_item(ref)
        if record is not None and any(
            endpoint.cwd and Path(endpoint.cwd) == path for endpoint in record.endpoints()
        ):
            return False
        return self.workspace.remove(path)

    # -- output ----------------------------------------------------------------------

    def _emit_spawned(self, session: Session, **extra: Any) -> None:
        self.events.emit(
            "session.spawned",
            work_item=session.ref,
            harness=session.harness,
            session_id=session.harness_session_id,
            tmux_target=session.tmux_target,
            cwd=session.cwd,
            model=session.model,
            effort=session.effort,
            **extra,
        )
