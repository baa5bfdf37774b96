"""Which state root an invocation uses, and the rule that chose it (decision 013).

Found the way git finds ``.git``: an explicit ``--state-root``, else
``$THE_LOOP_STATE_ROOT``, else ``state.root`` from the config (relative to the
config file's own directory, never to the working directory), else the nearest
``.the-loop/`` at or above the working directory, else ``~/.the-loop``. Choosing
creates nothing. The config's other relative paths (the workspace root, a local clone
source) resolve the same way: :func:`against_config_directory`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.config.file import STATE_DIR_NAME
from the_loop.errors import UsageError

if TYPE_CHECKING:
    from the_loop.config.file import Config

ROOT_ENV_VAR = "THE_LOOP_STATE_ROOT"
ROOT_KEY = "state.root"

RULE_FLAG = "--state-root"
RULE_ENV = f"${ROOT_ENV_VAR}"
RULE_CONFIG = "state.root"
RULE_NEAREST = "nearest"
RULE_HOME = "home"


@dataclass(frozen=True)
class RootChoice:
    """The chosen state root, the rule that chose it, and that rule in words."""

    root: Path
    rule: str
    reason: str


def choose_state_root(
    config: Config, explicit: Path | None, environ: Mapping[str, str], cwd: Path
) -> RootChoice:
    """The state root by the rule above; ``UsageError`` when no rule yields one."""
    here = Path(os.path.abspath(cwd))
    from_env = environ.get(ROOT_ENV_VAR, "")
    if explicit is not None:
        return RootChoice(_absolute(explicit, here), RULE_FLAG, "named by --state-root")
    if from_env:
        return RootChoice(_absolute(Path(from_env), here), RULE_ENV, f"named by {RULE_ENV}")
    configured = config.get_str(ROOT_KEY, "")
    if configured:
        return _from_config(config, Path(configured))
    for directory in (here, *here.parents):
        candidate = directory / STATE_DIR_NAME
        if candidate.is_dir():
            reason = "the nearest .the-loop/ at or above the working directory"
            return RootChoice(candidate, RULE_NEAREST, reason)
    home = environ.get("HOME", "")
    if not home:
        raise UsageError(
            "no state root: no .the-loop/ at or above the working directory and HOME is "
            f"not set; pass --state-root or set {ROOT_ENV_VAR}"
        )
    reason = "the per-user default: no .the-loop/ at or above the working directory"
    return RootChoice(Path(home) / STATE_DIR_NAME, RULE_HOME, reason)


def _from_config(config: Config, configured: Path) -> RootChoice:
    """``state.root`` as is when absolute, else against the config file's directory."""
    source = config.source
    if configured.is_absolute() or source is None:
        return RootChoice(configured, RULE_CONFIG, f"state.root in {source or 'the config'}")
    reason = f"state.root in {source}, relative to that file's directory"
    return RootChoice(against_config_directory(config, configured), RULE_CONFIG, reason)


def against_config_directory(config: Config, path: Path) -> Path:
    """A path the config names: as is when absolute or when the config has no file,
    else resolved against the directory of the file that holds it (never the cwd)."""
    if path.is_absolute() or config.source is None:
        return path
    base = Path(os.path.abspath(config.source)).parent
    return Path(os.path.abspath(base / path))


def _absolute(path: Path, cwd: Path) -> Path:
    return path if path.is_absolute() else cwd / path
