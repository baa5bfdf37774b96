"""The values of the repository file (``repofile/file.py``): the work item's state,
its frozen choices and the pull requests delivering it, parsed and validated.

Pure values: nothing here reads or writes a file. One unusable entry is skipped with a
problem named, never the whole document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, cast

from the_loop.errors import quoted
from the_loop.ref import WorkItemRef

STATE_FILE = "work-item-state.json"
LEGACY_STATE_FILE = "graph-state.json"
SPECS_DIR = "docs/specs"
STATE_VERSION = 2
SESSION_PER_PR = ("never", "cross-repository", "always")
PR_STATES = ("open", "merged", "closed")
LINKED_BY = ("session", "event")
# (JSON key, attribute) in the order the writer produces them.
_STATE_FIELDS = (
    ("version", "version"),
    ("workItem", "work_item"),
    ("currentNode", "current_node"),
    ("nodes", "nodes"),
    ("decisions", "decisions"),
    ("forced", "forced"),
    ("parked", "parked"),
    ("completions", "completions"),
    ("skips", "skips"),
    ("optIns", "opt_ins"),
    ("surface", "surface"),
    ("sessionPerPr", "session_per_pr"),
    ("model", "model"),
    ("effort", "effort"),
    ("pullRequests", "pull_requests"),
)
STATE_KEYS = tuple(key for key, _ in _STATE_FIELDS)
# Keys an older release wrote that are ignored on load and absent on the next save.
RETIRED_KEYS = ("session",)
# An older portable ``graph`` section may nest the frozen choices under this key.
LEGACY_FROZEN_GRAPH_KEY = "frozenGraph"

_PR_KEYS = ("ref", "repository", "number", "url", "stateDir", "state", "linkedAt", "linkedBy")
SPEC_ID = re.compile(r"[A-Za-z0-9._~-]+\Z")


def validate_repository(repository: str) -> str:
    """Return ``repository`` (``<owner>/<repo>`` or ``<host>/<owner>/<repo>``) unchanged.

    Host, owner and repository follow the :class:`WorkItemRef` rules (names of
    ``[A-Za-z0-9._-]``, not ``.``/``..``, no leading ``-``); anything else is a ``ValueError``.
    """
    problem = (
        f"invalid repository {quoted(repository)}: expected <owner>/<repo> or "
        "<host>/<owner>/<repo>, names of letters, digits, '.', '_' and '-', "
        "not '.' or '..', not starting with '-'"
    )
    if repository.count("/") not in (1, 2):
        raise ValueError(problem)
    try:
        WorkItemRef.parse(f"github:{repository}#1")
    except ValueError as error:
        raise ValueError(problem) from error
    return repository


def _text(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, not {quoted(value)}")
    return value


def check_choice(
    value: str, allowed: tuple[str, ...], name: str, *, empty_ok: bool = False
) -> None:
    if value not in allowed and not (empty_ok and value == ""):
        raise ValueError(f"invalid {name} {quoted(value)}: expected one of {', '.join(allowed)}")


@dataclass(frozen=True)
class LinkedPullRequest:
    """One pull request delivering the work item; ``ref`` is kept in canonical form.

    Construction validates every value (``ValueError``); keys a newer release
    added to an entry are kept in ``extra`` and written back.
    """

    ref: str
    repository: str
    number: int
    url: str
    state_dir: str = ""
    state: str = "open"
    linked_at: str = ""
    linked_by: str = "session"
    extra: Mapping[str, Any] = field(default_factory=dict[str, Any], repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ref", WorkItemRef.parse(self.ref).ref)
        validate_repository(self.repository)
        if isinstance(self.number, bool) or self.number <= 0:
            raise ValueError(f"invalid pull request number {quoted(self.number)}: must be positive")
        check_choice(self.state, PR_STATES, "pull request state")
        check_choice(self.linked_by, LINKED_BY, "linkedBy")

    @property
    def work_item(self) -> WorkItemRef:
        return WorkItemRef.parse(self.ref)

    def to_dict(self) -> dict[str, Any]:
        known = {
            "ref": self.ref,
            "repository": self.repository,
            "number": self.number,
            "url": self.url,
            "stateDir": self.state_dir,
            "state": self.state,
            "linkedAt": self.linked_at,
            "linkedBy": self.linked_by,
        }
        return known | {key: value for key, value in self.extra.items() if key not in known}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkedPullRequest:
        """Read one entry; missing keys take defaults (derived from ``ref`` where they can)."""
        ref = WorkItemRef.parse(_text(data, "ref", ""))
        number = data.get("number", ref.number)
        if not isinstance(number, int):
            raise ValueError(f"number must be an integer, not {quoted(number)}")
        return cls(
            ref=ref.ref,
            repository=_text(data, "repository", ref.path),
            number=number,
            url=_text(data, "url", ref.url),
            state_dir=_text(data, "stateDir", ""),
            state=_text(data, "state", "open"),
            linked_at=_text(data, "linkedAt", ""),
            linked_by=_text(data, "linkedBy", "session"),
            extra={key: value for key, value in data.items() if key not in _PR_KEYS},
        )


@dataclass(frozen=True)
class FrozenChoices:
    """The session choices frozen for a work item; ``""`` means not decided."""

    session_per_pr: str = ""
    model: str = ""
    effort: str = ""

    def __post_init__(self) -> None:
        check_choice(self.session_per_pr, SESSION_PER_PR, "sessionPerPr", empty_ok=True)

    def is_empty(self) -> bool:
        return not (self.session_per_pr or self.model or self.effort)

    def to_dict(self) -> dict[str, str]:
        return {"sessionPerPr": self.session_per_pr, "model": self.model, "effort": self.effort}


# Pointers and decisions the graph engine owns: kept as the opaque JSON values loaded.
_POINTER_FIELDS = _STATE_FIELDS[2:11]


@dataclass
class WorkItemState:
    """The in-memory document. Pointer and decision payloads are opaque JSON values.

    ``extra`` keeps top-level keys from a newer release so a save never drops them.
    :meth:`validate` (run on every save) raises ``ValueError`` for a bad value.
    """

    work_item: str = ""
    version: int = STATE_VERSION
    current_node: Any = None
    nodes: Any = field(default_factory=dict[str, Any])
    decisions: Any = field(default_factory=dict[str, Any])
    forced: Any = field(default_factory=list[Any])
    #: Upstream the-loopy-one 20.10.2 reads ``parked`` as an object or null, and
    #: ``skips`` as an object keyed by node id: a fresh file holds those shapes.
    parked: Any = None
    completions: Any = field(default_factory=dict[str, Any])
    skips: Any = field(default_factory=dict[str, Any])
    opt_ins: Any = field(default_factory=list[Any])
    surface: Any = None
    session_per_pr: str = ""
    model: str = ""
    effort: str = ""
    pull_requests: list[LinkedPullRequest] = field(default_factory=list[LinkedPullRequest])
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    # Read but not honoured: (position, raw entry) of pullRequests[], raw choice values.
    unusable_pull_requests: list[tuple[int, Any]] = field(default_factory=list[tuple[int, Any]])
    unusable_choices: dict[str, Any] = field(default_factory=dict[str, Any])
    problems: list[str] = field(default_factory=list[str], compare=False, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        check_choice(self.session_per_pr, SESSION_PER_PR, "sessionPerPr", empty_ok=True)
        if isinstance(self.version, bool) or self.version < 1:
            raise ValueError(f"invalid version {quoted(self.version)}: must be a positive integer")

    def pull_request(self, pr: WorkItemRef | str) -> LinkedPullRequest | None:
        """The linked entry for ``pr`` (any spelling of its ref), or None."""
        wanted = pr.ref if isinstance(pr, WorkItemRef) else WorkItemRef.parse(pr).ref
        return next((entry for entry in self.pull_requests if entry.ref == wanted), None)

    def choices(self) -> FrozenChoices | None:
        """``sessionPerPr``, ``model`` and ``effort`` when any of them is set."""
        choices = FrozenChoices(self.session_per_pr, self.model, self.effort)
        return None if choices.is_empty() else choices

    def to_dict(self) -> dict[str, Any]:
        """The document as written: :data:`STATE_KEYS` in order, then preserved keys."""
        self.validate()
        document = {key: getattr(self, attribute) for key, attribute in _STATE_FIELDS}
        if document["currentNode"] is None:
            # No pointer is no key: upstream the-loopy-one 20.10.2 reads a null as "None".
            del document["currentNode"]
        entries: list[Any] = [entry.to_dict() for entry in self.pull_requests]
        for position, raw in sorted(self.unusable_pull_requests, key=lambda pair: pair[0]):
            entries.insert(min(position, len(entries)), raw)
        document["pullRequests"] = entries
        for key, raw in self.unusable_choices.items():
            if document.get(key) == "":
                document[key] = raw
        for key, value in self.extra.items():
            if key not in document and key not in RETIRED_KEYS:
                document[key] = value
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, work_item: str = "") -> WorkItemState:
        """Migrate and read a v1 or v2 document; ``ValueError`` when the file as a whole
        is unusable (``version``, ``workItem`` or ``pullRequests`` of the wrong shape).

        One unusable ``pullRequests[]`` entry or frozen choice is skipped, kept raw and
        described in ``problems``. ``session`` is dropped; ``version`` becomes at least
        2 (a newer one is kept); ``workItem`` defaults to ``work_item`` when absent.
        """
        version = data.get("version", 1)
        if not isinstance(version, int):
            raise ValueError(f"version must be an integer, not {quoted(version)}")
        entries: Any = data.get("pullRequests") or []
        if not isinstance(entries, list):
            raise ValueError(f"pullRequests must be a list, not {quoted(entries)}")
        problems: list[str] = []
        values: dict[str, Any] = {
            "version": max(version, STATE_VERSION),
            "work_item": _text(data, "workItem", work_item),
            **_choices_of(data, problems),
            **_pull_requests_of(cast(list[Any], entries), problems),
        }
        for key, attribute in _POINTER_FIELDS:
            if key in data:
                values[attribute] = data[key]
        extra = {k: v for k, v in data.items() if k not in STATE_KEYS and k not in RETIRED_KEYS}
        return cls(**values, extra=extra, problems=problems)


def _choices_of(data: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """``sessionPerPr``, ``model``, ``effort``; an unusable one is ``""`` and kept raw."""
    found: dict[str, Any] = {}
    unusable: dict[str, Any] = {}
    for key, attribute in (
        ("sessionPerPr", "session_per_pr"),
        ("model", "model"),
        ("effort", "effort"),
    ):
        try:
            value = _text(data, key, "")
            if key == "sessionPerPr":
                check_choice(value, SESSION_PER_PR, key, empty_ok=True)
        except ValueError as error:
            problems.append(f"{key} ignored (counts as not decided): {error}")
            unusable[key] = data[key]
            value = ""
        found[attribute] = value
    return {**found, "unusable_choices": unusable}


def _pull_requests_of(entries: list[Any], problems: list[str]) -> dict[str, Any]:
    """The usable ``pullRequests[]`` entries, and the (position, raw) of the others."""
    usable: list[LinkedPullRequest] = []
    unusable: list[tuple[int, Any]] = []
    for position, entry in enumerate(entries):
        try:
            if not isinstance(entry, Mapping):
                raise ValueError(f"not an object: {quoted(entry)}")
            usable.append(LinkedPullRequest.from_dict(entry))  # pyright: ignore[reportUnknownArgumentType]
        except ValueError as error:
            problems.append(f"pullRequests[{position}] skipped: {error}")
            unusable.append((position, entry))  # pyright: ignore[reportUnknownArgumentType]
    return {"pull_requests": usable, "unusable_pull_requests": unusable}


def read_problem(error: Exception) -> str:
    """The reason a state file could not be read, for its message."""
    return "nested too deep" if isinstance(error, RecursionError) else str(error)


def graph_section_choices(graph_section: Mapping[str, Any] | None) -> FrozenChoices:
    """The choices an older release froze in the portable record's ``graph`` section.

    Reads ``sessionPerPr``, ``model`` and ``effort`` at the top of the section, or
    under ``frozenGraph`` when none is at the top; a value of the wrong type or an
    unknown ``sessionPerPr`` counts as not decided.
    """
    if not graph_section:
        return FrozenChoices()
    source: Mapping[str, Any] = graph_section
    nested = graph_section.get(LEGACY_FROZEN_GRAPH_KEY)
    if not any(key in graph_section for key in ("sessionPerPr", "model", "effort")) and (
        isinstance(nested, Mapping)
    ):
        source = nested  # pyright: ignore[reportUnknownVariableType]
    found = {
        name: value if isinstance(value := source.get(key), str) else ""
        for name, key in (
            ("session_per_pr", "sessionPerPr"),
            ("model", "model"),
            ("effort", "effort"),
        )
    }
    if found["session_per_pr"] not in SESSION_PER_PR:
        found["session_per_pr"] = ""
    return FrozenChoices(**found)


def resolve_frozen_choices(
    state_file_choices: FrozenChoices | None,
    graph_section: Mapping[str, Any] | None,
    defaults: FrozenChoices,
) -> FrozenChoices:
    """Per field: the repository file, else the retired ``graph`` section, else ``defaults``."""
    layers = (state_file_choices or FrozenChoices(), graph_section_choices(graph_section), defaults)
    resolved = {
        spec.name: next((value for layer in layers if (value := getattr(layer, spec.name))), "")
        for spec in fields(FrozenChoices)
    }
    return FrozenChoices(**resolved)
