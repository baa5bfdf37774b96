"""The ``routing.*`` settings the dispatcher acts on, read once from the config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from the_loop.config.defaults import default_bool, default_float, default_str
from the_loop.dispatch.disposal import REMOVE_DIRTY_KEY
from the_loop.repofile.file import FrozenChoices

if TYPE_CHECKING:
    from the_loop.config.file import Config


@dataclass(frozen=True)
class DispatchSettings:
    """Spawn and close policy; defaults as ``dispatcher.md`` gives them."""

    default_harness: str = default_str("routing.defaultHarness")
    prompt: str = default_str("routing.prompt")
    spawn_workdir: str = default_str("routing.spawnWorkdir")
    keep_session_on_close: bool = default_bool("routing.tmux.keepSessionOnClose")
    kill_harness_on_close: bool = default_bool("routing.tmux.killHarnessOnClose")
    harness_kill_grace_seconds: float = default_float("routing.tmux.harnessKillGraceSeconds")
    keep_checkout_on_close: bool = default_bool("routing.workspace.keepCheckoutOnClose")
    remove_dirty_checkouts: bool = default_bool(REMOVE_DIRTY_KEY)
    defaults: FrozenChoices = field(default_factory=FrozenChoices)

    @classmethod
    def from_config(cls, config: Config) -> DispatchSettings:
        """The settings of ``config`` (``ValueError`` for an unknown ``sessionPerPr``)."""
        return cls(
            default_harness=config.get_str("routing.defaultHarness") or cls.default_harness,
            prompt=config.get_str("routing.prompt"),
            spawn_workdir=config.get_str("routing.spawnWorkdir") or cls.spawn_workdir,
            keep_session_on_close=config.get_bool("routing.tmux.keepSessionOnClose"),
            kill_harness_on_close=config.get_bool("routing.tmux.killHarnessOnClose"),
            harness_kill_grace_seconds=config.get_float("routing.tmux.harnessKillGraceSeconds"),
            keep_checkout_on_close=config.get_bool("routing.workspace.keepCheckoutOnClose"),
            remove_dirty_checkouts=config.get_bool(REMOVE_DIRTY_KEY),
            defaults=FrozenChoices(
                session_per_pr=config.get_str("routing.sessionPerPr"),
                model=config.get_str("routing.model"),
                effort=config.get_str("routing.effort"),
            ),
        )
