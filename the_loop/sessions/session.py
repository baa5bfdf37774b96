"""One session record in memory, and its on-disk shape (``local/<slug>.json``, v2).

:func:`record_from_json` reads v2 and the flat v1 shape of older releases
(through :func:`migrate_v1`, the one migration, read side only);
:func:`record_to_json` always writes v2. A document of the wrong shape raises
``ValueError``: the store calls such a file "unreadable".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import Any, cast

from the_loop.errors import quoted
from the_loop.ref import WorkItemRef, as_ref

VERSION = 2
ACTIVE = "active"
PAUSED = "paused"
CLOSED = "closed"
STATUSES = (ACTIVE, PAUSED, CLOSED)
LIVE_STATUSES = (ACTIVE, PAUSED)

_NO_CHANNELS: Mapping[str, Any] = MappingProxyType({})

#: Optional endpoint keys: written only when set.
_OPTIONAL_KEYS = ("model", "effort", "harnessArgs")


@dataclass(frozen=True)
class Session:
    """One endpoint's handles; as a whole record also its PR endpoints and channel cursors.

    The item's own endpoint carries ``pull_requests`` (each a ``Session`` for a
    pull request) and ``channels`` (the record's read cursors). Change it with
    ``dataclasses.replace``.
    """

    work_item: WorkItemRef
    harness: str
    harness_session_id: str
    cwd: str = ""
    status: str = ACTIVE
    created_at: str = ""
    last_event_at: str | None = None
    tmux_target: str = ""
    recent_deliveries: tuple[str, ...] = ()
    model: str = ""
    effort: str = ""
    harness_args: tuple[str, ...] = ()
    pull_requests: tuple[Session, ...] = ()
    channels: Mapping[str, Any] = field(default_factory=lambda: _NO_CHANNELS, hash=False)

    def __post_init__(self) -> None:
        # Callers may pass lists or dicts; keep the value immutable and detached.
        if type(self.recent_deliveries) is not tuple:
            object.__setattr__(self, "recent_deliveries", tuple(self.recent_deliveries))
        if type(self.harness_args) is not tuple:
            object.__setattr__(self, "harness_args", tuple(self.harness_args))
        if type(self.pull_requests) is not tuple:
            object.__setattr__(self, "pull_requests", tuple(self.pull_requests))
        if not isinstance(self.channels, MappingProxyType):
            channels = copy.deepcopy(dict(self.channels))
            object.__setattr__(self, "channels", MappingProxyType(channels))

    @property
    def ref(self) -> str:
        """The canonical ref of this endpoint."""
        return self.work_item.ref

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def is_paused(self) -> bool:
        return self.status == PAUSED

    def endpoints(self) -> tuple[Session, ...]:
        """This endpoint, then every pull request's endpoint."""
        return (self, *self.pull_requests)

    def endpoint_for(self, ref: WorkItemRef | str) -> Session | None:
        """The endpoint keyed by ``ref`` in this record (itself or a PR's), or None."""
        wanted = as_ref(ref)
        return next((item for item in self.endpoints() if item.work_item == wanted), None)

    def owns(self, ref: WorkItemRef | str) -> bool:
        """True when ``ref`` is this record's work item or one of its pull requests."""
        return self.endpoint_for(ref) is not None

    def with_endpoint(self, endpoint: Session) -> Session:
        """This record with ``endpoint`` stored under its ref (own handles or a PR's)."""
        if endpoint.work_item == self.work_item:
            return _with_handles(self, endpoint)
        bare = _with_handles(Session(endpoint.work_item, "", ""), endpoint)
        others = [item for item in self.pull_requests if item.work_item != endpoint.work_item]
        if len(others) == len(self.pull_requests):
            return replace(self, pull_requests=(*self.pull_requests, bare))
        merged = [
            bare if item.work_item == endpoint.work_item else item for item in self.pull_requests
        ]
        return replace(self, pull_requests=tuple(merged))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report: every handle (camelCase), ``pullRequests`` and ``channels``."""
        data = {"workItem": self.ref, **_handles(self, every_key=True)}
        data["pullRequests"] = [
            {"workItem": item.ref, **_handles(item, every_key=True)} for item in self.pull_requests
        ]
        data["channels"] = copy.deepcopy(dict(self.channels)) if self.channels else {}
        return data


def _with_handles(target: Session, source: Session) -> Session:
    """``target`` with the handles of ``source`` (ref, PRs and channels kept)."""
    return replace(
        target,
        harness=source.harness,
        harness_session_id=source.harness_session_id,
        cwd=source.cwd,
        status=source.status,
        created_at=source.created_at,
        last_event_at=source.last_event_at,
        tmux_target=source.tmux_target,
        recent_deliveries=source.recent_deliveries,
        model=source.model,
        effort=source.effort,
        harness_args=source.harness_args,
    )


def _handles(endpoint: Session, *, every_key: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "harness": endpoint.harness,
        "harnessSessionId": endpoint.harness_session_id,
        "cwd": endpoint.cwd,
        "status": endpoint.status,
        "createdAt": endpoint.created_at,
        "lastEventAt": endpoint.last_event_at,
        "tmuxTarget": endpoint.tmux_target,
        "recentDeliveries": list(endpoint.recent_deliveries),
    }
    if every_key or endpoint.model:
        data["model"] = endpoint.model
    if every_key or endpoint.effort:
        data["effort"] = endpoint.effort
    if every_key or endpoint.harness_args:
        data["harnessArgs"] = list(endpoint.harness_args)
    return data


def record_to_json(record: Session) -> dict[str, Any]:
    """The v2 document for a whole record (``channels`` only when non-empty)."""
    data: dict[str, Any] = {"version": VERSION, "workItem": record.ref}
    if record.channels:
        data["channels"] = copy.deepcopy(dict(record.channels))
    data["sessions"] = {item.ref: _handles(item) for item in record.endpoints()}
    return data


def record_from_json(data: object) -> Session:
    """A whole record from a v2 or v1 document; ``ValueError`` when the shape is wrong."""
    document = _mapping(data, "the record")
    if document.get("version") == VERSION or "sessions" in document:
        return _from_v2(document)
    if document.get("version", 1) == 1:
        return _from_v2(migrate_v1(document))
    raise ValueError(f"unknown record version {quoted(document.get('version'))}")


def stored_ref(data: object) -> str | None:
    """The canonical ref a v2 or v1 document names, or None when it names none."""
    if not isinstance(data, dict):
        return None
    try:
        return _ref_of(cast(dict[str, Any], data).get("workItem")).ref
    except ValueError:
        return None


def migrate_v1(document: Mapping[str, Any]) -> dict[str, Any]:
    """The v2 document for a flat v1 one (handles at top level, ``pullRequests`` a list)."""
    own = _ref_of(document.get("workItem"))
    sessions: dict[str, Any] = {own.ref: _v1_handles(document)}
    entries = document.get("pullRequests", [])
    if not isinstance(entries, list):
        raise ValueError("pullRequests is not a list")
    for entry in cast(list[Any], entries):
        handles = _mapping(entry, "a pull request entry")
        sessions[_ref_of(handles.get("workItem")).ref] = _v1_handles(handles)
    migrated: dict[str, Any] = {"version": VERSION, "workItem": own.ref, "sessions": sessions}
    if "channels" in document:
        migrated["channels"] = document["channels"]
    return migrated


_HANDLE_KEYS = (
    "harness",
    "harnessSessionId",
    "cwd",
    "status",
    "createdAt",
    "lastEventAt",
    "tmuxTarget",
    "recentDeliveries",
    *_OPTIONAL_KEYS,
)


def _v1_handles(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {key: entry[key] for key in _HANDLE_KEYS if key in entry}


def _from_v2(document: Mapping[str, Any]) -> Session:
    stored = document.get("workItem")
    own = _ref_of(stored)
    sessions = _mapping(document.get("sessions"), "sessions")
    channels = _mapping(document.get("channels") or {}, "channels") or _NO_CHANNELS
    own_entry: tuple[str, object] | None = None
    pull_requests: dict[WorkItemRef, Session] = {}
    for key, value in sessions.items():
        # The own entry is almost always keyed by the very spelling of ``workItem``.
        ref = own if key == stored else _ref_of(key)
        if ref is own or ref == own:
            own_entry = (key, value)
        else:
            pull_requests[ref] = _endpoint(key, value, ref)
    if own_entry is None:
        raise ValueError(f"sessions has no entry for the work item {own.ref}")
    key, value = own_entry
    return _endpoint(key, value, own, tuple(pull_requests.values()), channels)


def _endpoint(
    key: str,
    value: object,
    ref: WorkItemRef,
    pull_requests: tuple[Session, ...] = (),
    channels: Mapping[str, Any] = _NO_CHANNELS,
) -> Session:
    """One endpoint's handles (a whole record's own one with its PRs and channels)."""
    entry = _mapping(value, f"the session of {key}")
    get = entry.get
    texts = tuple(map(get, _TEXT_NAMES, _TEXT_DEFAULTS))
    last_event_at = get("lastEventAt")
    recent, harness_args = get("recentDeliveries", []), get("harnessArgs", [])
    if not (
        set(map(type, texts)) == _STR
        and type(last_event_at) in _OPTIONAL_STR
        and _all_strings(recent)
        and _all_strings(harness_args)
    ):
        _check_endpoint(key, entry)  # raises with the first problem; accepts str subclasses
        texts = tuple(map(partial(_text, entry), _TEXT_NAMES, _TEXT_DEFAULTS))
    harness, session_id, cwd, status, created_at, tmux_target, model, effort = texts
    return Session(
        work_item=ref,
        harness=harness,
        harness_session_id=session_id,
        cwd=cwd,
        status=status,
        created_at=created_at,
        last_event_at=last_event_at,
        tmux_target=tmux_target,
        recent_deliveries=tuple(recent),
        model=model,
        effort=effort,
        harness_args=tuple(harness_args),
        pull_requests=pull_requests,
        channels=channels,
    )


#: The string handles of an endpoint, in :func:`_endpoint` order, with their defaults.
_TEXT_NAMES = (
    "harness",
    "harnessSessionId",
    "cwd",
    "status",
    "createdAt",
    "tmuxTarget",
    "model",
    "effort",
)
_TEXT_DEFAULTS = ("", "", "", ACTIVE, "", "", "", "")
_STR = {str}
_OPTIONAL_STR = (str, type(None))


def _all_strings(value: object) -> bool:
    return type(value) is list and set(map(type, cast(list[object], value))) <= _STR


def _check_endpoint(key: str, entry: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first handle of ``key`` that has the wrong type."""
    last_event_at = entry.get("lastEventAt")
    if last_event_at is not None and not isinstance(last_event_at, str):
        raise ValueError(f"lastEventAt of {key} is not a string")
    for name, default in zip(_TEXT_NAMES, _TEXT_DEFAULTS, strict=True):
        _text(entry, name, default)
    _texts(entry, "recentDeliveries")
    _texts(entry, "harnessArgs")


def _mapping(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return cast(dict[str, Any], value)


def _ref_of(value: object) -> WorkItemRef:
    """A ref stored as a string, or (v1) as an object with ``ref``."""
    if isinstance(value, dict):
        value = cast(dict[str, Any], value).get("ref")
    if not isinstance(value, str):
        raise ValueError("workItem names no work item")
    return WorkItemRef.parse(value)


def _text(entry: Mapping[str, Any], key: str, default: str = "") -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return value


def _texts(entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    items = cast(list[object], value) if isinstance(value, list) else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise ValueError(f"{key} is not a list of strings")
    return tuple(cast(list[str], items))
