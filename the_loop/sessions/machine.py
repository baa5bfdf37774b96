"""This machine's identity: a stable id made once, kept in ``local/machine.json``.

The id names the state root's machine to the other machines that share a repository
(their claims on a ticket, issue 21); it never travels (``local/``, not ``portable/``).
It is 32 lowercase hex digits, made from the system's random source the first time it
is asked for (under a lock, so two processes make one), and never changed after: a file
that cannot be read as one is refused with a sentence naming it, not replaced, since a
new id would make this machine a stranger to its own claims.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import cast

from the_loop.errors import TheLoopError
from the_loop.fsio import locked, read_object, write_json

MACHINE_FILE = "machine.json"
FORMAT_VERSION = 1
_ID = re.compile(r"[0-9a-f]{32}\Z")


def read_machine_id(path: Path) -> str | None:
    """The id kept in ``path``; None when there is none yet. ``TheLoopError`` when the
    file is there but is not one (or is not a regular file)."""
    status, data, problem = read_object(path)
    if status == "absent":
        return None
    if status != "ok":
        raise TheLoopError(f"{path}: the machine's id cannot be read: {problem}")
    found = cast(dict[str, object], data).get("id") if isinstance(data, dict) else None
    if not isinstance(found, str) or _ID.fullmatch(found) is None:
        raise TheLoopError(
            f"{path}: not a machine id this release wrote (expected 32 hex digits under "
            '"id"); move it away to make a new one'
        )
    return found


def machine_id(path: Path, lock_path: Path) -> str:
    """The id kept in ``path``, made and written durably the first time."""
    found = read_machine_id(path)
    if found is not None:
        return found
    with locked(lock_path):
        found = read_machine_id(path)  # another process may have made it meanwhile
        if found is None:
            found = secrets.token_hex(16)
            write_json(path, {"version": FORMAT_VERSION, "id": found})
    return found
