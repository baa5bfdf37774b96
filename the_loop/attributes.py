"""The attribute rule (``state.md`` §7) as data: which key lives in which file.

``ATTRIBUTES`` declares every top-level key of the three per-work-item files; tests
keep it equal to what the writers produce and to ``docs/cli/state.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

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
    Attribute(
        OPERATOR_FILE,
        "poll",
        OPERATOR_LEDGER,
        "the work item's poll ledger: comments seen, what its agents spent (spend) and its "
        "budget (budget)",
    ),
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
