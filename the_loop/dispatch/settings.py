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
#: The variables tmux sets in every pane itself: never carried from the spawning process.
TMUX_OWN_VARIABLES = frozenset(
    ("TERM", "TMUX", "TMUX_PANE", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLUMNS", "LINES")
)
#: The most bytes of ``-e NAME=value`` an agent's session is started with: tmux refuses a
#: command of more than about 16 KB.
AGENT_ENV_BUDGET = 12_000
#: The variables an agent's session carries even when the spawning process's whole
#: environment is too big for tmux's command line: who and where it is, how it reaches
#: hosts and keys (git pushes over ssh and proxies), and what the harnesses read.
AGENT_ENV_NAMES = frozenset(
    (
        *("HOME", "PATH", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR"),
        *("EDITOR", "VISUAL", "PAGER", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GNUPGHOME"),
        *("DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "NODE_OPTIONS", "NODE_EXTRA_CA_CERTS"),
        *("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
        *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"),
        *("http_proxy", "https_proxy", "no_proxy", "all_proxy"),
        *("MCP_TIMEOUT", "BASH_DEFAULT_TIMEOUT_MS", "USE_BUILTIN_RIPGREP", "IS_SANDBOX"),
    )
)
#: Prefixes of the variables an agent's session carries: locale, XDG, git, and the
#: harnesses' own (Claude Code and its providers, Cursor).
AGENT_ENV_PREFIXES = (
    *("LC_", "XDG_", "GIT_", "ANTHROPIC_", "CLAUDE_", "DISABLE_", "OTEL_", "AWS_"),
    *("CLOUD_ML_", "VERTEX_", "GOOGLE_", "CURSOR_"),
)


def agent_environment(
    environ: Mapping[str, str], *, passed: Iterable[str] = (), withheld: Iterable[str] = ()
) -> dict[str, str]:
    """What an agent's session is started with, from the spawning process's ``environ``:
    all of it but ``withheld`` (the-loop's secrets) and what tmux sets in a pane itself.
    When that would not fit tmux's command line (:data:`AGENT_ENV_BUDGET`), only the names
    and prefixes above and ``passed`` (``passEnv``)."""
    never = frozenset(withheld) | TMUX_OWN_VARIABLES
    carried = {
        name: value
        for name, value in sorted(environ.items())
        if name and "=" not in name and name not in never
    }
    if sum(len(name) + len(value) + 8 for name, value in carried.items()) <= AGENT_ENV_BUDGET:
        return carried
    extra = frozenset(passed)
    return {
        name: value
        for name, value in carried.items()
        if name in AGENT_ENV_NAMES or name in extra or name.startswith(AGENT_ENV_PREFIXES)
    }


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
    #: How long ``sessions start`` watches the agent it started (``0``: not at all).
    start_wait_seconds: float = default_float("routing.tmux.startWaitSeconds")
    keep_checkout_on_close: bool = default_bool("routing.workspace.keepCheckoutOnClose")
    remove_dirty_checkouts: bool = default_bool(REMOVE_DIRTY_KEY)
    #: The-loop continues an agent after its usage limit: the agent's own continue is off.
    resume_after_limit: bool = default_bool("routing.resumeAfterLimit")
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
            start_wait_seconds=config.get_float("routing.tmux.startWaitSeconds"),
            keep_checkout_on_close=config.get_bool("routing.workspace.keepCheckoutOnClose"),
            remove_dirty_checkouts=config.get_bool(REMOVE_DIRTY_KEY),
            resume_after_limit=config.get_bool("routing.resumeAfterLimit"),
            defaults=FrozenChoices(
                session_per_pr=config.get_str("routing.sessionPerPr"),
                model=config.get_str("routing.model"),
                effort=config.get_str("routing.effort"),
            ),
        )
