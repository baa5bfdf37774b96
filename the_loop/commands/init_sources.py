"""Where each ``init --repo`` clone source goes: into the config that travels (a URL, a
``~`` path, a local path relative to the config's directory), or, a path of this machine
outside the project, into ``local/clone-sources.json`` beside it (decision 023).
"""

from __future__ import annotations

import os
from pathlib import Path

from the_loop.commands.render import note
from the_loop.config.clone_sources import CLONE_SOURCES_NAME
from the_loop.dispatch.workspace import is_local_path
from the_loop.layout import LOCAL_DIR


def placed_sources(
    given: list[tuple[str, str]], directory: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """The ``--repo`` sources split by where they go: the config's (a URL, a ``~`` path,
    a local path relative to ``directory``), and this machine's (absolute paths outside
    the project, each said in a note)."""
    tracked: dict[str, str] = {}
    machine: dict[str, str] = {}
    for name, source in given:
        written = written_source(source, directory)
        if written is not None:
            tracked[name] = written
            continue
        machine[name] = os.path.normpath(os.path.abspath(source))
        note(
            f"{name} is cloned from {machine[name]}, a path on this machine outside the "
            f"project: kept in {directory / LOCAL_DIR / CLONE_SOURCES_NAME}, which never "
            "travels; another machine clones it from GitHub until its operator sets its own there"
        )
    return tracked, machine


def written_source(source: str, directory: Path) -> str | None:
    """A clone source as the config holds it: a URL or a ``~`` path as given; a local
    path inside the project relative to the config's ``directory``, so it travels; None
    for any other path (given absolute or relative), which is this machine's."""
    if not is_local_path(source) or source.startswith("~"):
        return source
    real, project = os.path.realpath(source), os.path.realpath(directory.parent)
    if os.path.commonpath([real, project]) == project:
        return os.path.relpath(real, os.path.realpath(directory))
    return None
