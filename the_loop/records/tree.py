"""Parsed JSON values as trees: how deeply they nest, and copying them, without recursion.

A record file may hold anything another program wrote, so nothing here recurses:
a value nested a thousand deep is measured and copied with an explicit stack, and
the stores refuse (read as unreadable) a record nested deeper than
:data:`MAX_NESTING`, so that no later step — a copy, a comparison, an encode — can
run out of stack on it.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, TypeVar, cast

#: How many containers (objects and arrays) may nest in one record file, the file's
#: own top-level object included. Our records nest at most five deep.
MAX_NESTING = 64

T = TypeVar("T")


_CONTAINERS = frozenset((dict, list))


def _is_container(value: object) -> bool:
    return type(value) in _CONTAINERS


def _members(container: object) -> Collection[object]:
    """The members of an object (its values) or of an array."""
    if isinstance(container, dict):
        return cast(dict[object, object], container).values()
    return cast(list[object], container)


def nesting_exceeds(value: object, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` deep (a scalar: 0)."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[object] = []
        for container in level:
            members = _members(container)
            # Most containers hold only scalars: tell that without a Python-level loop.
            if not _CONTAINERS.isdisjoint(map(type, members)):
                below.extend(member for member in members if type(member) in _CONTAINERS)
        level = below
    return False


def _shallow(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(cast(dict[Any, Any], value))
    if isinstance(value, list):
        return list(cast(list[Any], value))
    return value


def copy_json(value: T) -> T:
    """A deep copy of a parsed JSON value: every object and array new, scalars shared."""
    root: Any = _shallow(value)
    stack: list[Any] = [root] if _is_container(root) else []
    while stack:
        container: Any = stack.pop()
        keys: list[Any] = (
            [*container.keys()] if hasattr(container, "keys") else [*range(len(container))]
        )
        for key in keys:
            child: Any = container[key]
            if _is_container(child):
                copied: Any = _shallow(child)
                container[key] = copied
                stack.append(copied)
    return cast(T, root)


def _openings(raw: str | bytes) -> int:
    if isinstance(raw, bytes):
        return raw.count(b"{") + raw.count(b"[")
    return raw.count("{") + raw.count("[")


def nesting_problem(value: object, raw: str | bytes | None = None) -> str:
    """Why a parsed state file is unreadable for its nesting, or "" when it is not.

    The one rule every reader of a state file applies. With the file's ``raw`` bytes,
    a file with too few brackets to nest that deep is passed without walking it.
    """
    if raw is not None and _openings(raw) <= MAX_NESTING:
        return ""
    if nesting_exceeds(value):
        return f"it nests deeper than {MAX_NESTING} levels"
    return ""


def parse_state_json(raw: str | bytes) -> tuple[object, str]:
    """``(value, "")`` for a state file's bytes; ``(value, problem)`` when it nests too
    deeply (the value kept, so a reader can still name the ref it stores); ``(None,
    problem)`` when it is not JSON."""
    try:
        value = json.loads(_as_text(raw))
    except ValueError as error:
        return None, f"it is not valid JSON ({error})"
    except RecursionError:
        return None, "it is not valid JSON (nested too deeply to read)"
    return value, nesting_problem(value, raw)


def _as_text(raw: str | bytes) -> str | bytes:
    """``raw`` as ``json.loads`` would decode it: a record's bytes (``{`` then a byte that is
    not NUL) are UTF-8, surrogates passed, which ``json.detect_encoding`` would only confirm."""
    if isinstance(raw, bytes) and raw[:1] == b"{" and raw[1:2] != b"\0":
        return raw.decode("utf-8", "surrogatepass")
    return raw
