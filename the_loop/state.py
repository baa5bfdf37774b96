"""Where the-loop's generated state lives: the state root and its declared paths.

``GENERATED_PATHS`` declares every path the CLI writes under the state root and
``ATTRIBUTES`` every top-level key of the three per-work-item files (the attribute
rule, ``state.md`` §7); tests keep both equal to what the writers produce and to
``docs/cli/state.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.config import Config

DEFAULT_STATE_ROOT = ".the-loop"
PORTABLE_DIR = "portable"
LOCAL_DIR = "local"
LOCKS_DIR = "locks"
EVENT_LOG = "logs/events.jsonl"
WEBHOOK_PIDFILE = "gh-webhook.pid"
POLL_PIDFILE = "poll.pid"
LEGACY_DIR = "sessions"


@dataclass(frozen=True)
class StateLayout:
    """The paths of one state root, with the per-invocation overrides applied.

    ``local_dir``, ``portable_dir`` and ``event_log`` default to their places
    under ``root``; an overridden directory keeps its locks beside it
    (``<dir>.locks``) so two roots never share lock files by accident.
    """

    root: Path
    local_override: Path | None = None
    portable_override: Path | None = None
    event_log_override: Path | None = None
    pidfile_name: str = WEBHOOK_PIDFILE
    poll_pidfile_name: str = POLL_PIDFILE

    @property
    def root_path(self) -> Path:
        return self.root

    @property
    def portable_dir(self) -> Path:
        return self.portable_override or self.root / PORTABLE_DIR

    @property
    def portable_index(self) -> Path:
        return self.portable_dir / "index.json"

    @property
    def local_dir(self) -> Path:
        return self.local_override or self.root / LOCAL_DIR

    @property
    def event_log(self) -> Path:
        return self.event_log_override or self.root / EVENT_LOG

    @property
    def pidfile(self) -> Path:
        return self.root / self.pidfile_name

    @property
    def poll_pidfile(self) -> Path:
        return self.root / self.poll_pidfile_name

    @property
    def locks_dir(self) -> Path:
        return self.root / LOCKS_DIR

    @property
    def local_locks_dir(self) -> Path:
        if self.local_override is not None:
            return _beside(self.local_override)
        return self.locks_dir / LOCAL_DIR

    @property
    def portable_locks_dir(self) -> Path:
        if self.portable_override is not None:
            return _beside(self.portable_override)
        return self.locks_dir / PORTABLE_DIR

    def with_overrides(
        self, *, local_dir: Path | None = None, portable_dir: Path | None = None
    ) -> StateLayout:
        """A copy with the ``--registry-dir`` / ``--portable-dir`` overrides applied."""
        return StateLayout(
            root=self.root,
            local_override=local_dir or self.local_override,
            portable_override=portable_dir or self.portable_override,
            event_log_override=self.event_log_override,
            pidfile_name=self.pidfile_name,
            poll_pidfile_name=self.poll_pidfile_name,
        )


def _beside(directory: Path) -> Path:
    return directory.with_name(directory.name + ".locks")


@dataclass(frozen=True)
class LegacyLayout:
    """The read-only tree older releases wrote: ``<root>/sessions/``."""

    root: Path

    @property
    def sessions_dir(self) -> Path:
        return self.root / LEGACY_DIR

    @property
    def control_dir(self) -> Path:
        return self.sessions_dir / "control"

    @property
    def poll_state(self) -> Path:
        return self.sessions_dir / "poll-state.json"


def legacy_layout(layout: StateLayout) -> LegacyLayout:
    """The legacy tree that belongs to ``layout``'s state root."""
    return LegacyLayout(layout.root)


def layout_from_config(config: Config) -> StateLayout:
    """Build the layout from ``state.root``, ``routing.registryDir``, ``eventLog.path``."""
    root = Path(config.get_str("state.root", DEFAULT_STATE_ROOT) or DEFAULT_STATE_ROOT)
    registry_dir = config.get_str("routing.registryDir", "")
    event_log = config.get_str("eventLog.path", "")
    return StateLayout(
        root=root,
        local_override=Path(registry_dir) if registry_dir else None,
        event_log_override=Path(event_log) if event_log else None,
        pidfile_name=config.get_str("webhook.pidfile", WEBHOOK_PIDFILE) or WEBHOOK_PIDFILE,
        poll_pidfile_name=config.get_str("poll.pidfile", POLL_PIDFILE) or POLL_PIDFILE,
    )


@dataclass(frozen=True)
class GeneratedPath:
    """One path the CLI generates: its name, where (relative to the root), whether it travels."""

    name: str
    where: str
    portable: bool
    holds: str
    why: str


GENERATED_PATHS: tuple[GeneratedPath, ...] = (
    GeneratedPath(
        "work-item record",
        "portable/<slug>.json",
        True,
        "one record per work item: control, poll, pullRequests, channels sections",
        "what people decided and what was seen travels with the operator",
    ),
    GeneratedPath(
        "work-item index",
        "portable/index.json",
        True,
        "derived listing of the records beside it",
        "a reviewable summary of the portable records; never read by the-loop",
    ),
    GeneratedPath(
        "session record",
        "local/<slug>.json",
        False,
        "that item's session handles on this machine",
        "tmux targets, checkouts and harness ids only make sense on this machine",
    ),
    GeneratedPath(
        "event log",
        "logs/events.jsonl",
        False,
        "the append-only JSONL event log",
        "the audit trail of every decision; never rewritten",
    ),
    GeneratedPath(
        "webhook pidfile",
        "gh-webhook.pid",
        False,
        "the pid of a running webhook receiver",
        "lets reset warn that a receiver may write state back",
    ),
    GeneratedPath(
        "poller pidfile",
        "poll.pid",
        False,
        "the pid of a running poller",
        "lets reset warn that a poller may write state back",
    ),
    GeneratedPath(
        "lock files",
        "locks/<store>/<slug>.lock",
        False,
        "one empty lock file per record, held with flock",
        "serialises read-modify-write across processes",
    ),
)


# -- the attribute rule (state.md §7) ------------------------------------------

#: The three per-work-item files, by the short name ``Attribute.file`` uses.
REPOSITORY_FILE = "repository"
OPERATOR_FILE = "operator"
MACHINE_FILE = "machine"

POINTER = "pointer"
HUMAN_DECISION = "human-decision"
REPOSITORY_ENTITY = "repository-entity"
WORKSPACE_ENTITY = "workspace-entity"
OPERATOR_LEDGER = "operator-ledger"
MACHINE_HANDLE = "machine-handle"
DERIVED = "derived"

#: Every kind of truth a top-level key can hold, with what it means.
ATTRIBUTE_KINDS: Mapping[str, str] = MappingProxyType(
    {
        POINTER: "where the work is",
        HUMAN_DECISION: "a choice a person made for the work item",
        REPOSITORY_ENTITY: "something that exists in a repository, e.g. a pull request",
        WORKSPACE_ENTITY: "something that exists in the operator's workspace, e.g. a conversation",
        OPERATOR_LEDGER: "what the operator's tools asked for and saw",
        MACHINE_HANDLE: "a handle that only means something on this machine",
        DERIVED: "computed from the other keys or the file's name; never a source of truth",
    }
)


@dataclass(frozen=True)
class AttributeFile:
    """One of the three per-work-item files: where it lives, whether git tracks it, where
    it travels."""

    name: str
    where: str
    tracked: bool
    travels: str


ATTRIBUTE_FILES: tuple[AttributeFile, ...] = (
    AttributeFile(
        REPOSITORY_FILE,
        "<checkout>/docs/specs/<id>/work-item-state.json",
        True,
        "with the branch",
    ),
    AttributeFile(
        OPERATOR_FILE, "<root>/portable/<slug>.json", True, "when the operator tracks portable/"
    ),
    AttributeFile(MACHINE_FILE, "<root>/local/<slug>.json", False, "never"),
)

#: The kinds the rule allows in each file (``derived`` is allowed everywhere).
ALLOWED_KINDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        REPOSITORY_FILE: (POINTER, HUMAN_DECISION, REPOSITORY_ENTITY, DERIVED),
        OPERATOR_FILE: (OPERATOR_LEDGER, WORKSPACE_ENTITY, DERIVED),
        MACHINE_FILE: (MACHINE_HANDLE, DERIVED),
    }
)


@dataclass(frozen=True)
class Attribute:
    """One top-level key of a per-work-item file: which file, the key, its kind, what it holds."""

    file: str
    key: str
    kind: str
    holds: str


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(REPOSITORY_FILE, "version", DERIVED, "the format version (2)"),
    Attribute(REPOSITORY_FILE, "workItem", DERIVED, "the ref of the work item the file is for"),
    Attribute(REPOSITORY_FILE, "currentNode", POINTER, "the process node the work is at"),
    Attribute(REPOSITORY_FILE, "nodes", POINTER, "the state of each process node"),
    Attribute(REPOSITORY_FILE, "decisions", HUMAN_DECISION, "the answers given at decision nodes"),
    Attribute(REPOSITORY_FILE, "forced", HUMAN_DECISION, "the transitions a person forced"),
    Attribute(REPOSITORY_FILE, "parked", HUMAN_DECISION, "the nodes a person parked"),
    Attribute(REPOSITORY_FILE, "completions", POINTER, "the nodes completed, with when and how"),
    Attribute(REPOSITORY_FILE, "skips", HUMAN_DECISION, "the nodes a person chose to skip"),
    Attribute(REPOSITORY_FILE, "optIns", HUMAN_DECISION, "the optional nodes a person opted into"),
    Attribute(REPOSITORY_FILE, "surface", HUMAN_DECISION, "where people work on the item"),
    Attribute(
        REPOSITORY_FILE,
        "sessionPerPr",
        HUMAN_DECISION,
        "whether a pull request gets a session of its own: never, cross-repository, always",
    ),
    Attribute(REPOSITORY_FILE, "model", HUMAN_DECISION, "the model the agent runs with"),
    Attribute(REPOSITORY_FILE, "effort", HUMAN_DECISION, "the effort the agent runs with"),
    Attribute(
        REPOSITORY_FILE,
        "pullRequests",
        REPOSITORY_ENTITY,
        "the pull requests delivering the item: ref, repository, number, url, state, linkedAt",
    ),
    Attribute(OPERATOR_FILE, "ref", DERIVED, "the ref of the work item the record is for"),
    Attribute(OPERATOR_FILE, "url", DERIVED, "the work item's web URL, derived from the ref"),
    Attribute(
        OPERATOR_FILE, "control", OPERATOR_LEDGER, "the last command an authorized person gave"
    ),
    Attribute(OPERATOR_FILE, "poll", OPERATOR_LEDGER, "the work item's poll ledger: comments seen"),
    Attribute(
        OPERATOR_FILE,
        "pullRequests",
        OPERATOR_LEDGER,
        "one poll ledger per pull request delivering it",
    ),
    Attribute(
        OPERATOR_FILE,
        "channels",
        WORKSPACE_ENTITY,
        "the conversation that carries the item, per channel",
    ),
    Attribute(
        OPERATOR_FILE, "sealed", DERIVED, "a tombstone: the legacy tree may not resurrect the item"
    ),
    Attribute(MACHINE_FILE, "version", DERIVED, "the format version (2)"),
    Attribute(MACHINE_FILE, "workItem", DERIVED, "the ref of the work item the record is for"),
    Attribute(
        MACHINE_FILE,
        "channels",
        MACHINE_HANDLE,
        "per channel, the read cursor of each thread this machine mirrored",
    ),
    Attribute(
        MACHINE_FILE,
        "sessions",
        MACHINE_HANDLE,
        "per endpoint (the item and each pull request): harness, session id, cwd, tmux target",
    ),
)
