"""An item's process state for the board: the ``nodes`` of its repository file
(``docs/specs/<id>/work-item-state.json`` in its session's checkout), as a list, and the
stat that says when it must be read again. Empty when the item has no checkout here or
the checkout holds no such file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from the_loop.errors import TheLoopError
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.repofile.values import SPECS_DIR
from the_loop.spec.lane import LaneError, read_lane

Stamp = tuple[int, int, int] | None


def nodes_stamp(checkout: str, ref: WorkItemRef) -> tuple[Stamp, Callable[[], list[Any]]]:
    """The stat of ``ref``'s repository file in ``checkout`` (None: none there) and how to
    read its nodes (called only when the stamp changed)."""
    if not checkout or not os.path.isdir(os.path.join(checkout, SPECS_DIR)):
        return None, list
    try:
        found = WorkItemStateFile(Path(checkout), ref)
    except ValueError:
        return None, list
    for path in (found.path, found.legacy_path):
        try:
            info = os.stat(path)
        except OSError:
            continue
        return (info.st_ino, info.st_size, info.st_mtime_ns), lambda: _nodes(found)
    return None, list


def _nodes(found: WorkItemStateFile) -> list[Any]:
    """A spec lane's phases as ``the-loop check`` lists them (``{node, status, by, at,
    link}``, in lane order); for a file holding no lane, ``{"node", ...}`` for each node
    of the file, in its order (a node's value merged in when it is an object, else as its
    ``status``); empty when it cannot be read."""
    try:
        state = found.load()
    except (TheLoopError, OSError):
        return []
    try:
        lane = read_lane(state)
    except LaneError:
        lane = None
    if lane is not None and lane.started:
        return [node.to_dict() for node in lane.nodes]
    nodes: object = state.nodes
    if not isinstance(nodes, dict):
        return []
    listed: list[Any] = []
    for name, value in cast(dict[str, Any], nodes).items():
        if isinstance(value, dict):
            listed.append({"node": name, **cast(dict[str, Any], value)})
        else:
            listed.append({"node": name, "status": value})
    return listed


__all__ = ["nodes_stamp"]
