"""The CLI config: find it, load it, validate it, and read typed values from it.

Search order: ``--config``, ``$THE_LOOP_CLI_CONFIG``, the nearest
``.the-loop/cli-config.yaml`` at or above the working directory (as git finds
``.git``), ``~/.the-loop/cli-config.yaml``; none found means all defaults. A config that
does not parse or fails the JSON Schema raises :class:`ConfigError` whose
message names the file, the key and the problem.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.config.defaults import DEFAULTS, default_bool, default_float, default_str
from the_loop.errors import ELLIPSIS, QUOTE_LIMIT, UsageError, quoted

if TYPE_CHECKING:
    from the_loop.config.yaml import YamlRefused

ENV_VAR = "THE_LOOP_CLI_CONFIG"
CONFIG_NAME = "cli-config.yaml"
STATE_DIR_NAME = ".the-loop"
MAX_CONFIG_BYTES = 1 << 20


class ConfigError(UsageError):
    """A config file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Config:
    """A validated config document and where it came from (``None``: defaults), with this
    machine's clone sources read from beside it (:func:`read_clone_sources`)."""

    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
    source: Path | None = None
    clone_sources: Mapping[str, str] = field(default_factory=dict[str, str])

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at ``a.b.c``, or ``default`` when any step is missing."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]  # pyright: ignore[reportUnknownVariableType]
        return node  # pyright: ignore[reportUnknownVariableType]

    def keys_set(self) -> list[str]:
        """The dotted keys (of every key there is) this document gives a value."""
        unset = object()
        return [key for key in DEFAULTS if self.get(key, unset) is not unset]

    def get_str(self, dotted: str, default: str | None = None) -> str:
        """The text at ``dotted``; ``default`` when absent, else the declared default
        (:mod:`the_loop.config.defaults`), as for :meth:`get_bool` and :meth:`get_float`."""
        fallback = default_str(dotted) if default is None else default
        value = self.get(dotted, fallback)
        return value if isinstance(value, str) else fallback

    def get_bool(self, dotted: str, default: bool | None = None) -> bool:
        fallback = default_bool(dotted) if default is None else default
        value = self.get(dotted, fallback)
        return value if isinstance(value, bool) else fallback

    def get_float(self, dotted: str, default: float | None = None) -> float:
        fallback = default_float(dotted) if default is None else default
        value = self.get(dotted, fallback)
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if is_number else fallback

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

    An explicit ``--config`` or ``$THE_LOOP_CLI_CONFIG`` that does not exist is an
    error; so is any candidate that exists but is not a regular file (a directory,
    a FIFO, ...): it is named for what it is, never silently skipped or read.
    """
    if explicit is not None and not explicit:
        raise ConfigError("--config: an empty path names no config file")
    for chosen, origin in ((explicit, "--config"), (environ.get(ENV_VAR), f"${ENV_VAR}")):
        if chosen:
            path = Path(chosen)
            problem = _not_a_config_file(path)
            if problem is not None:
                raise ConfigError(f"{_shown(path)}: config file named by {origin} {problem}")
            return path
    candidates = [directory / STATE_DIR_NAME / CONFIG_NAME for directory in _upward(cwd)]
    home = environ.get("HOME")
    if home:
        candidates.append(Path(home) / STATE_DIR_NAME / CONFIG_NAME)
    for candidate in candidates:
        problem = _not_a_config_file(candidate)
        if problem is None:
            return candidate
        if not problem.startswith(_MISSING):
            raise ConfigError(f"{_shown(candidate)}: config file {problem}")
    return None


_MISSING = "does not exist"


def _upward(cwd: Path) -> list[Path]:
    """``cwd`` (made absolute) and each of its parents, nearest first."""
    start = Path(os.path.abspath(cwd))
    return [start, *start.parents]


def _not_a_config_file(path: Path) -> str | None:
    """Why ``path`` cannot be a config file (``does not exist``, ``is a directory``, ...)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "is a link to nothing" if path.is_symlink() else _MISSING
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"is not a regular file (it is a {_kind(mode)})"
    return None


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"))
    return next((name for test, name in kinds if test(mode)), "special file")


def _shown(path: Path) -> str:
    """``path`` for a one-line message: as is, or quoted when it holds control characters."""
    text = str(path)
    return text if text.isprintable() else quoted(text)


SCHEMA_PATH = Path(__file__).parent.parent / "schemas" / "cli-config.schema.json"


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _key_path(parts: Sequence[Any]) -> str:
    return ".".join(str(part) for part in parts) or "(top level)"


def validate(data: Any, source: Path) -> None:
    """Raise :class:`ConfigError` naming file, key and problem when ``data`` is invalid."""
    first = next(violations(data, source), None)
    if first is not None:
        raise ConfigError(first)


def violations(data: Any, source: Path) -> Iterator[str]:
    """Every problem the schema finds in ``data``, in document order, one line each
    naming the file, the key and the problem."""
    from the_loop.config.schema import Validator

    for violation in Validator(_schema()).violations(data):
        message = violation.message.replace("\n", " ")
        yield f"{_shown(source)}: {quoted_key(violation.path)}: {message}"


def quoted_key(parts: Sequence[Any]) -> str:
    """The key path for a message, each part bounded like a quoted value."""
    shown = [part if isinstance(part, int) else _bounded(str(part)) for part in parts]
    return _key_path(shown)


def _bounded(text: str) -> str:
    if text.isprintable() and len(text) <= QUOTE_LIMIT:
        return text
    return quoted(text)


def load_file(path: Path) -> Config:
    """Read, parse and validate one config file; any problem is one :class:`ConfigError` line
    (the first :func:`check_file` finds)."""
    checked = check_file(path)
    if checked.config is None:
        raise ConfigError(checked.problems[0])
    return checked.config


@dataclass(frozen=True)
class CheckedConfig:
    """One config file as read: its config when it can be used, else its problems."""

    path: Path
    config: Config | None
    problems: tuple[str, ...] = ()


def check_file(path: Path) -> CheckedConfig:
    """Read, parse and validate one config file, naming every problem on a line of its own.

    At most :data:`MAX_CONFIG_BYTES` are read, as UTF-8; YAML nesting and alias
    expansion are bounded (see :mod:`the_loop.config.yaml`). A file that cannot be read
    or parsed has one problem, but every key given twice is one; past the YAML, every
    value the schema refuses is one.
    """
    from the_loop.config.yaml import RepeatedKeys, YamlRefused, parse_yaml

    try:
        data = parse_yaml(_read_text(path))
    except ConfigError as error:
        return CheckedConfig(path, None, (str(error),))
    except YamlRefused as error:
        each = error.each if isinstance(error, RepeatedKeys) else (error,)
        return CheckedConfig(path, None, tuple(_refusal_line(path, one) for one in each))
    document: Any = {} if data is None else data
    sources, machine_problems = read_clone_sources(path)
    problems = (*violations(document, path), *machine_problems)
    config = None if problems else Config(document, path, sources)
    return CheckedConfig(path, config, problems)


def read_clone_sources(config_path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """This machine's clone sources, from ``local/clone-sources.json`` beside the config
    (none when it is absent), and one line per problem of that file, as for the config."""
    from the_loop.config.clone_sources import clone_sources_path, sources_of, sources_schema
    from the_loop.config.schema import Validator
    from the_loop.fsio import read_object

    path = clone_sources_path(config_path)
    status, document, problem = read_object(path)
    if status == "absent":
        return {}, ()
    if status != "ok":
        return {}, (f"{_shown(path)}: cannot read: {problem}",)
    found = Validator(sources_schema(_schema())).violations(document)
    problems = tuple(
        f"{_shown(path)}: {quoted_key(one.path)}: {one.message.replace(chr(10), ' ')}"
        for one in found
    )
    return ({} if problems else sources_of(document)), problems


def _refusal_line(path: Path, error: YamlRefused) -> str:
    problem = _one_line(str(error))
    where = "(top level)" if error.line is None else f"line {error.line}, column {error.column}"
    return f"{_shown(path)}: {where}: {problem}"


def _read_text(path: Path) -> str:
    """The file's text: opened without blocking, a regular file, bounded, UTF-8."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ConfigError(f"{_shown(path)}: cannot read: {error.strerror or error}") from error
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else f"a {_kind(mode)}"
            raise ConfigError(f"{_shown(path)}: cannot read: it is {kind}, not a file")
        try:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as error:
            raise ConfigError(f"{_shown(path)}: cannot read: {error.strerror or error}") from error
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{_shown(path)}: larger than {MAX_CONFIG_BYTES} bytes; not a config")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = raw[error.start]
        raise ConfigError(
            f"{_shown(path)}: not UTF-8 text: byte 0x{byte:02x} at offset {error.start}"
        ) from error


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + ELLIPSIS


def load_config(
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Find and load the config by the search order; all defaults when none is found."""
    env = os.environ if environ is None else environ
    path = find_config(explicit, env, cwd or Path.cwd())
    return Config() if path is None else load_file(path)
