"""This machine's clone sources: ``local/clone-sources.json`` beside the config file.

A local path to clone a repository from is a fact of one machine, so ``init`` keeps one
that lies outside the project here, on the untracked ``local/`` side of the state root,
never in the config that travels (decision 023). The config reader lays these over
``routing.workspace.repositories``; a config that names an absolute path itself (an
older one, or upstream's) is still read as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from the_loop.errors import UsageError
from the_loop.fsio import locked, read_object, write_json
from the_loop.layout import LOCAL_DIR, LOCKS_DIR

CLONE_SOURCES_NAME = "clone-sources.json"
CLONE_SOURCES_VERSION = 1
REPOSITORIES_KEY = "routing.workspace.repositories"


def clone_sources_path(config_path: Path) -> Path:
    """``local/clone-sources.json`` in the directory of the config file ``config_path``."""
    return Path(os.path.abspath(config_path)).parent / LOCAL_DIR / CLONE_SOURCES_NAME


def sources_schema(config_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The file's JSON Schema: ``version`` 1 and ``repositories`` as the config's own
    ``routing.workspace.repositories`` declares it (names, paths), nothing else."""
    routing = config_schema["properties"]["routing"]["properties"]
    repositories = routing["workspace"]["properties"]["repositories"]
    return {
        "$defs": config_schema["$defs"],
        "type": "object",
        "properties": {
            "version": {"description": "the format version", "enum": [CLONE_SOURCES_VERSION]},
            "repositories": repositories,
        },
        "additionalProperties": False,
    }


def sources_of(document: object) -> dict[str, str]:
    """The ``repositories`` of a document :func:`sources_schema` accepted."""
    if not isinstance(document, dict):
        return {}
    repositories = cast(dict[str, object], document).get("repositories", {})
    if not isinstance(repositories, dict):
        return {}
    return {
        str(name): str(source) for name, source in cast(dict[object, object], repositories).items()
    }


def add_clone_sources(config_path: Path, sources: Mapping[str, str]) -> Path:
    """Write ``sources`` into the file beside ``config_path``, keeping the entries it holds
    for other repositories (a name differing only in case is replaced), under the
    file's lock in ``locks/local/``, atomically; its path. A file there that is not
    such a document raises :class:`UsageError` and is left as it is; ``OSError``
    propagates."""
    path = clone_sources_path(config_path)
    lock = path.parent.parent / LOCKS_DIR / LOCAL_DIR / f"{path.stem}.lock"
    with locked(lock):
        merged = _kept(path, {name.lower() for name in sources})
        merged.update(sources)
        write_json(path, {"version": CLONE_SOURCES_VERSION, "repositories": merged})
    return path


def _kept(path: Path, replaced: set[str]) -> dict[str, Any]:
    status, value, problem = read_object(path)
    if status == "absent":
        return {}
    kept: object = None
    if status == "ok" and isinstance(value, dict):
        kept = cast(dict[str, object], value).get("repositories", {})
    if not isinstance(kept, dict):
        why = problem or "it is not an object of repositories"
        raise UsageError(f"{path}: cannot add to it: {why}; fix it or move it away")
    entries = cast(dict[object, object], kept)
    return {
        name: source
        for name, source in entries.items()
        if isinstance(name, str) and name.lower() not in replaced
    }
