"""The ``routing.*`` settings the dispatcher acts on, read once from the config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from the_loop.dispatch.disposal import REMOVE_DIRTY_KEY
from the_loop.repository_file import FrozenChoices

if TYPE_CHECKING:
    from the_loop.config import Config


@dataclass(frozen=True)
class DispatchSettings:
    """Spawn and close policy; defaults as ``dispatcher.md`` gives them."""

    default_harness: str = "claude"
    prompt: str = ""
    spawn_workdir: str = "."
    keep_session_on_close: bool = True
    kill_harness_on_close: bool = True
    harness_kill_grace_seconds: float = 5.0
    keep_checkout_on_close: bool = False
    remove_dirty_checkouts: bool = False
    defaults: FrozenChoices = field(default_factory=FrozenChoices)

    @classmethod
    def from_config(cls, config: Config) -> DispatchSettings:
        """The settings of ``config`` (``ValueError`` for an unknown ``sessionPerPr``)."""
        return cls(
            default_harness=config.get_str("routing.defaultHarness", "claude") or "claude",
            prompt=config.get_str("routing.prompt", ""),
            spawn_workdir=config.get_str("routing.spawnWorkdir", ".") or ".",
            keep_session_on_close=config.get_bool("routing.tmux.keepSessionOnClose", True),
            kill_harness_on_close=config.get_bool("routing.tmux.killHarnessOnClose", True),
            harness_kill_grace_seconds=config.get_float("routing.tmux.harnessKillGraceSeconds", 5),
            keep_checkout_on_close=config.get_bool("routing.workspace.keepCheckoutOnClose", False),
            remove_dirty_checkouts=config.get_bool(REMOVE_DIRTY_KEY, False),
            defaults=FrozenChoices(
                session_per_pr=config.get_str("routing.sessionPerPr", ""),
                model=config.get_str("routing.model", ""),
                effort=config.get_str("routing.effort", ""),
            ),
        )
