"""The ``routing.*`` settings the dispatcher acts on, read once from the config: the spawn
and close policy, and which of the-loop's own secrets an agent's environment may hold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from the_loop.config.defaults import default_bool, default_float, default_str
from the_loop.dispatch.disposal import REMOVE_DIRTY_KEY
from the_loop.repofile.file import FrozenChoices

if TYPE_CHECKING:
    from the_loop.config.file import Config

#: The variables the-loop reads its own secrets from: the GitHub token (``GITHUB_TOKEN``,
#: ``GH_TOKEN``, and whichever ``integrations.github.tokenEnv`` names) and the webhook
#: receiver's secret. An agent is one prompt injection away from any stranger's words.
AGENT_SECRET_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET")
TOKEN_ENV_KEY = "integrations.github.tokenEnv"


@dataclass(frozen=True)
class AgentEnvironment:
    """Which of the-loop's secret variables an agent may inherit: none of them, but those
    its harness lists in ``routing.harnesses.<name>.passEnv``."""

    secrets: tuple[str, ...] = AGENT_SECRET_VARIABLES
    passed: Mapping[str, frozenset[str]] = field(default_factory=dict[str, frozenset[str]])

    @classmethod
    def from_config(cls, config: Config, harnesses: Iterable[str]) -> AgentEnvironment:
        """The secrets of ``config`` and what each of ``harnesses`` (names) lets through."""
        named = config.get_str(TOKEN_ENV_KEY).strip()
        extra = (named,) if named and named not in AGENT_SECRET_VARIABLES else ()
        secrets = (*AGENT_SECRET_VARIABLES, *extra)
        passed = {
            name: frozenset(config.get_str_list(f"routing.harnesses.{name}.passEnv"))
            for name in harnesses
        }
        return cls(secrets, passed)

    def withheld_from(self, harness: str) -> tuple[str, ...]:
        """The secrets the agent of ``harness`` never inherits."""
        passed = self.passed.get(harness, frozenset())
        return tuple(name for name in self.secrets if name not in passed)

    @property
    def withheld_from_every_harness(self) -> tuple[str, ...]:
        """The secrets no harness lets through: no tmux server the-loop starts holds them."""
        passed = frozenset[str]().union(*self.passed.values())
        return tuple(name for name in self.secrets if name not in passed)


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
