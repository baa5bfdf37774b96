"""Build the dispatcher of one invocation from the ``routing.*`` config, once, at the edge."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.dispatch.harnesses import harnesses_from_config
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.dispatch.workspace import Workspace
from the_loop.errors import TheLoopError

if TYPE_CHECKING:
    from the_loop.config.file import Config
    from the_loop.dispatch.process import Relay
    from the_loop.eventlog.log import EventLog
    from the_loop.portable.control import ControlStore
    from the_loop.portable.store import WorkItemStore
    from the_loop.sessions.registry import SessionRegistry


class Adapters:
    """The tmux runner and the workspace of one invocation, each built on first use, once;
    ``progress`` receives git's progress of the workspace's clones and fetches.

    A command that needs them before (or without) a dispatcher reads them here and
    passes the same object to :func:`build_dispatcher`. ``ValueError`` for a refused
    setting (not cached: the next use raises it again).
    """

    def __init__(self, config: Config, *, owner: str = "", progress: Relay | None = None) -> None:
        self.config = config
        self.owner = owner
        self.progress = progress

    @cached_property
    def tmux(self) -> TmuxRunner:
        return TmuxRunner.from_config(self.config, owner=self.owner)

    @cached_property
    def workspace(self) -> Workspace:
        return Workspace.from_config(self.config, progress=self.progress)


def build_dispatcher(
    config: Config,
    *,
    registry: SessionRegistry,
    control_store: ControlStore,
    events: EventLog | None,
    portable: WorkItemStore | None = None,
    on_warning: Callable[[str], None] | None = None,
    adapters: Adapters | None = None,
    owner: str = "",
) -> Dispatcher:
    """The dispatcher of ``config``: tmux runner, workspace and harnesses from ``routing.*``
    (the runner and workspace of ``adapters`` when given); ``owner`` is the state root
    its tmux sessions are tagged with.

    Raises :class:`TheLoopError` with a sentence when it cannot be built: a setting
    is refused, the tmux binary is missing, or workspaces are on and git is missing.
    """
    built = adapters if adapters is not None else Adapters(config, owner=owner)
    try:
        tmux = built.tmux
        workspace = built.workspace
        harnesses = harnesses_from_config(config)
        dispatcher = Dispatcher(
            config,
            registry=registry,
            control_store=control_store,
            tmux=tmux,
            workspace=workspace,
            harnesses=harnesses,
            events=events,
            portable=portable,
            on_warning=on_warning,
            state_root=owner,
        )
    except ValueError as error:
        raise TheLoopError(f"cannot set up the dispatcher: {error}") from error
    _require_binary(tmux.binary, "tmux", "routing.tmux.binary")
    if workspace.enabled:
        _require_binary(workspace.git_binary, "git", "routing.workspace.gitBinary")
    return dispatcher


def _require_binary(binary: str, what: str, key: str) -> None:
    if shutil.which(binary) is None:
        raise TheLoopError(
            f"cannot set up the dispatcher: the {what} binary {binary!r} is not on PATH "
            f"(install it, or set {key})"
        )
