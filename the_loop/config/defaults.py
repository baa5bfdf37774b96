"""The default of every CLI config key, declared once.

Readers take a key's default from :data:`DEFAULTS` (through the ``Config.get_*``
accessors called without a default); ``docs/cli/config.md`` shows the same values and
a test keeps the two, and the schema's keys, equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: A default: a string, a boolean, a number, or an empty list or map.
Default = str | bool | float | list[str] | dict[str, str]

_HARNESS_BINARIES = {"claude": "claude", "cursor": "cursor-agent", "command": ""}


def _harness_defaults() -> dict[str, Default]:
    defaults: dict[str, Default] = {}
    for name, binary in _HARNESS_BINARIES.items():
        prefix = f"routing.harnesses.{name}"
        defaults |= {
            f"{prefix}.binary": binary,
            f"{prefix}.args": [],
            f"{prefix}.argv": [],
            f"{prefix}.resumeArgv": [],
            f"{prefix}.passEnv": [],
            f"{prefix}.trustCheckouts": True,
        }
    return defaults


DEFAULTS: Mapping[str, Default] = MappingProxyType(
    {
        "state.root": "",
        "state.followLinkedDirectories": False,
        "eventLog.path": "",
        "webhook.pidfile": "gh-webhook.pid",
        "webhook.host": "127.0.0.1",
        "webhook.port": 8787,
        "webhook.path": "/gh-webhook",
        "webhook.secretEnv": "THE_LOOP_GH_WEBHOOK_SECRET",
        "webhook.finishSeconds": 20.0,
        "poll.pidfile": "poll.pid",
        "api.host": "127.0.0.1",
        "api.port": 8788,
        "api.maxStreams": 8,
        "routing.registryDir": "",
        "routing.defaultHarness": "claude",
        **_harness_defaults(),
        "routing.prompt": "",
        "routing.model": "",
        "routing.effort": "",
        "routing.resumeAfterLimit": False,
        "routing.stallMinutes": 15.0,
        "routing.sessionPerPr": "",
        "routing.spawnOnUnmatched": "never",
        "routing.spawnWorkdir": ".",
        "routing.machineName": "",
        "routing.claim": "always",
        "routing.dispatchTimeoutSeconds": 1800.0,
        "routing.budget.usd": 0.0,
        "routing.budget.hours": 0.0,
        "routing.budget.turns": 0.0,
        "routing.budget.warnAt": 0.8,
        "routing.workspace.root": "",
        "routing.workspace.strategy": "worktree",
        "routing.workspace.keepCheckoutOnClose": False,
        "routing.workspace.removeDirtyCheckouts": False,
        "routing.workspace.gitBinary": "git",
        "routing.workspace.cloneProtocol": "https",
        "routing.workspace.defaultHost": "github.com",
        "routing.workspace.repositories": {},
        "routing.tmux.keepSessionOnClose": True,
        "routing.tmux.killHarnessOnClose": True,
        "routing.tmux.harnessKillGraceSeconds": 5.0,
        "routing.tmux.startWaitSeconds": 1.5,
        "routing.tmux.binary": "tmux",
        "routing.tmux.socket": "",
        "routing.control.enabled": True,
        "routing.control.requireStartCommand": True,
        "integrations.github.apiUrl": "",
        "integrations.github.acknowledge": True,
        "integrations.github.comment": True,
        "integrations.github.tokenEnv": "",
        "routing.control.keywordPrefix": "the-loop",
        "routing.authorizedUsers": [],
        "routing.requireWriteAccess": True,
        "polling.intervalSeconds": 60.0,
        "polling.reconcileSeconds": 600.0,
        "polling.repositories": [],
        "polling.labels": [],
        "polling.maxRetries": 3.0,
        "polling.maxDeliveriesPerHour": 30.0,
        "polling.deliverFrom": "authorized",
        "polling.requestDeadlineSeconds": 30.0,
        "polling.ci.maxFailingPushes": 3.0,
    }
)


def default_str(dotted: str) -> str:
    """The declared default of a text key (``""`` for a key not declared here)."""
    value = DEFAULTS.get(dotted, "")
    return value if isinstance(value, str) else ""


def default_bool(dotted: str) -> bool:
    """The declared default of a boolean key (``False`` for a key not declared here)."""
    value = DEFAULTS.get(dotted, False)
    return value if isinstance(value, bool) else False


def default_float(dotted: str) -> float:
    """The declared default of a number key (``0.0`` for a key not declared here)."""
    value = DEFAULTS.get(dotted, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)
