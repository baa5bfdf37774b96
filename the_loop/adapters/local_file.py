"""The one read of a machine-local JSON file the poller keeps under ``local/``: one map
of its document, empty when the file is absent or unreadable (the next write makes it
anew), and a stranger's file (a link, a FIFO, a directory) refused, never followed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from the_loop.errors import TheLoopError
from the_loop.fsio import read_object


def read_local_map(path: Path, key: str) -> dict[str, Any]:
    """The object under ``key`` in the JSON document at ``path`` (a copy); ``{}`` when
    there is none. :class:`TheLoopError` when ``path`` is not a regular file."""
    status, data, problem = read_object(path)
    if status == "stranger":
        raise TheLoopError(f"{path} is not a regular file ({problem}); remove it")
    if status != "ok" or not isinstance(data, dict):
        return {}
    found = cast(dict[str, Any], data).get(key)
    return dict(cast(dict[str, Any], found)) if isinstance(found, dict) else {}
