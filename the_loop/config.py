"""The CLI config: find it, load it, validate it, and read typed values from it.

Search order: ``--config``, ``$THE_LOOP_CLI_CONFIG``, ``./.the-loop/cli-config.yaml``,
``~/.the-loop/cli-config.yaml``; none found means all defaults. A config that
does not parse or fails the JSON Schema raises :class:`ConfigError` whose
message names the file, the key and the problem.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from the_loop.errors import UsageError

ENV_VAR = "THE_LOOP_CLI_CONFIG"
CONFIG_NAME = "cli-config.yaml"


class ConfigError(UsageError):
    """A config file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Config:
    """A validated config document and where it came from (``None``: defaults)."""

    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
    source: Path | None = None

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at ``a.b.c``, or ``default`` when any step is missing."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]  # pyright: ignore[reportUnknownVariableType]
        return node  # pyright: ignore[reportUnknownVariableType]

    def get_str(self, dotted: str, default: str = "") -> str:
        value = self.get(dotted, default)
        return value if isinstance(value, str) else default

    def get_bool(self, dotted: str, default: bool) -> bool:
        value = self.get(dotted, default)
        return value if isinstance(value, bool) else default

    def get_float(self, dotted: str, default: float) -> float:
        value = self.get(dotted, default)
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if is_number else default

    def get_str_list(self, dotted: str) -> list[str]:
        value = self.get(dotted, [])
        if not isinstance(value, list):
            return []
        return [str(item) for item in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

    def get_str_map(self, dotted: str) -> dict[str, str]:
        value = self.get(dotted, {})
        if not isinstance(value, Mapping):
            return {}
        return {str(k): str(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def find_config(explicit: str | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The config path by the search order, or None for all defaults.

    An explicit ``--config`` or ``$THE_LOOP_CLI_CONFIG`` that does not exist is an error.
    """
    for chosen, origin in ((explicit, "--config"), (environ.get(ENV_VAR), f"${ENV_VAR}")):
        if chosen:
            path = Path(chosen)
            if not path.is_file():
                raise ConfigError(f"{path}: config file named by {origin} does not exist")
            return path
    candidates = [cwd / ".the-loop" / CONFIG_NAME]
    home = environ.get("HOME")
    if home:
        candidates.append(Path(home) / ".the-loop" / CONFIG_NAME)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


SCHEMA_PATH = Path(__file__).parent / "schemas" / "cli-config.schema.json"


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _key_path(parts: Sequence[Any]) -> str:
    return ".".join(str(part) for part in parts) or "(top level)"


def validate(data: Any, source: Path) -> None:
    """Raise :class:`ConfigError` naming file, key and problem when ``data`` is invalid."""
    from the_loop.schema import Validator

    first = next(Validator(_schema()).violations(data), None)
    if first is not None:
        message = first.message.replace("\n", " ")
        raise ConfigError(f"{source}: {_key_path(list(first.path))}: {message}")


def load_file(path: Path) -> Config:
    """Parse and validate one config file."""
    import yaml  # deferred: start-up stays light when no config is used

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from error
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        problem = str(error).replace("\n", " ")
        raise ConfigError(f"{path}: (top level): not valid YAML: {problem}") from error
    document: Any = {} if data is None else data
    validate(document, path)
    return Config(data=document, source=path)


def load_config(
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Find and load the config by the search order; all defaults when none is found."""
    env = os.environ if environ is None else environ
    path = find_config(explicit, env, cwd or Path.cwd())
    return Config() if path is None else load_file(path)
