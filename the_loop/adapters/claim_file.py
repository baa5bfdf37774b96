"""The claim book in ``local/claims.json``: this machine's pending rounds, who holds each
item it lost, the machines it has seen claiming on each repository, and the login each
token was learned to have from a claim it posted (by the token's one-way fingerprint).

Machine-local (a claim names this machine; it never travels with ``portable/``). Every
change is one locked read-modify-write, written atomically and durably; a file that is
not one this release wrote is refused with a sentence naming it, never replaced, since
replacing it would forget a claim already posted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from the_loop.errors import TheLoopError
from the_loop.fsio import locked, read_object, write_json
from the_loop.intake.claim_ports import Holder, PendingClaim
from the_loop.intake.claims import CLAIM, NO_MACHINE
from the_loop.intake.events import parse_timestamp
from the_loop.ref import WorkItemRef

CLAIMS_FILE = "claims.json"
_NONCE = re.compile(r"[0-9a-f]{16}")
FORMAT_VERSION = 1
#: The tokens whose learned logins are kept (the newest).
_LOGINS_KEPT = 8
Data = dict[str, Any]


@dataclass(frozen=True)
class FileClaimBook:
    """The :class:`~the_loop.intake.claim_ports.ClaimBook` in one local file."""

    path: Path
    lock_path: Path

    # -- reads ---------------------------------------------------------------

    def pending(self) -> list[PendingClaim]:
        return [claim for row in _rows(self._read()) if (claim := _pending(row)) is not None]

    def holders(self) -> dict[WorkItemRef, Holder]:
        found: dict[WorkItemRef, Holder] = {}
        for ref, row in _holder_rows(self._read()).items():
            holder = _holder(row)
            parsed = _ref(ref)
            if holder is not None and parsed is not None:
                found[parsed] = holder
        return found

    def machines(self, repository: str) -> dict[str, str]:
        return dict(_machine_rows(self._read()).get(repository.casefold(), {}))

    def login(self, token: str) -> str:
        """The login learned for ``token`` (a fingerprint, never a token); ``""``: none."""
        logins = self._read().get("logins")
        found = cast(dict[str, Any], logins).get(token) if isinstance(logins, dict) else None
        return found if isinstance(found, str) else ""

    # -- changes -------------------------------------------------------------

    def begin(self, claim: PendingClaim) -> None:
        def change(data: Data) -> None:
            data["pending"] = [r for r in _rows(data) if r.get("ref") != claim.ref.ref]
            data["pending"].append(_pending_row(claim))

        self._change(change)

    def update(self, claim: PendingClaim) -> None:
        def change(data: Data) -> None:
            rows = _rows(data)
            data["pending"] = [
                _pending_row(claim)
                if r.get("ref") == claim.ref.ref and r.get("start") == claim.start
                else r
                for r in rows
            ]

        self._change(change)

    def settle(self, ref: WorkItemRef, start: int, holder: Holder | None) -> None:
        def change(data: Data) -> None:
            data["pending"] = [r for r in _rows(data) if not _settled_by(r, ref, start)]
            holders = _holder_rows(data)
            if holder is None:
                holders.pop(ref.ref, None)
            else:
                holders[ref.ref] = _holder_row(holder)
            data["holders"] = holders

        self._change(change)

    def release(self, ref: WorkItemRef) -> None:
        def change(data: Data) -> None:
            data["pending"] = [r for r in _rows(data) if r.get("ref") != ref.ref]
            holders = _holder_rows(data)
            holders.pop(ref.ref, None)
            data["holders"] = holders

        self._change(change)

    def remember_login(self, token: str, login: str) -> None:
        """Keep ``login`` as ``token``'s (written only when new; the newest few kept)."""
        if self.login(token) == login:
            return

        def change(data: Data) -> None:
            logins = data.get("logins")
            kept = cast(dict[str, Any], logins) if isinstance(logins, dict) else {}
            others = [(k, v) for k, v in kept.items() if k != token and isinstance(v, str)]
            data["logins"] = dict([*others[-(_LOGINS_KEPT - 1) :], (token, login)])

        self._change(change)

    def note_machines(self, repository: str, seen: Mapping[str, str]) -> None:
        key = repository.casefold()
        if all(self.machines(key).get(m) == n for m, n in seen.items()):
            return  # nothing new: nothing written

        def change(data: Data) -> None:
            machines = _machine_rows(data)
            machines[key] = {**machines.get(key, {}), **seen}
            data["machines"] = machines

        self._change(change)

    # -- internals -----------------------------------------------------------

    def _read(self) -> Data:
        status, data, problem = read_object(self.path)
        if status == "absent":
            return {}
        if status != "ok":
            raise TheLoopError(f"{self.path}: the claim book cannot be read: {problem}")
        version = cast(Data, data).get("version") if isinstance(data, dict) else None
        if type(version) is not int or version != FORMAT_VERSION:
            raise TheLoopError(
                f"{self.path}: not a claim book this release wrote (expected version "
                f"{FORMAT_VERSION}); move it away to start a new one"
            )
        return cast(Data, data)

    def _change(self, change: Callable[[Data], None]) -> None:
        try:
            with locked(self.lock_path):
                data = dict(self._read())
                change(data)
                data["version"] = FORMAT_VERSION
                write_json(self.path, data)
        except OSError as error:
            message = f"{self.path}: the claim book was not written: {error}"
            raise TheLoopError(message) from error


def _settled_by(row: Data, ref: WorkItemRef, start: int) -> bool:
    """Whether ``row`` is a round of ``ref`` that the end of ``start``'s round ends: its
    own, or an earlier start's (a later start supersedes it)."""
    earlier = _int(row.get("start"))
    return row.get("ref") == ref.ref and (earlier is None or earlier <= start)


def _rows(data: Data) -> list[Data]:
    rows = data.get("pending")
    items = cast(list[Any], rows) if isinstance(rows, list) else []
    return [cast(Data, r) for r in items if isinstance(r, dict)]


def _holder_rows(data: Data) -> dict[str, Data]:
    rows = data.get("holders")
    items = cast(dict[str, Any], rows) if isinstance(rows, dict) else {}
    return {k: cast(Data, v) for k, v in items.items() if isinstance(v, dict)}


def _machine_rows(data: Data) -> dict[str, dict[str, str]]:
    rows = data.get("machines")
    items = cast(dict[str, Any], rows) if isinstance(rows, dict) else {}
    found: dict[str, dict[str, str]] = {}
    for key, value in items.items():
        if isinstance(value, dict):
            names = cast(dict[str, Any], value)
            found[key] = {m: n for m, n in names.items() if isinstance(n, str)}
    return found


def _ref(text: object) -> WorkItemRef | None:
    if not isinstance(text, str):
        return None
    try:
        return WorkItemRef.parse(text)
    except ValueError:
        return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(row: Data, key: str) -> str:
    value = row.get(key)
    return value if isinstance(value, str) else ""


def _pending_row(claim: PendingClaim) -> Data:
    return {
        "ref": claim.ref.ref,
        "start": claim.start,
        "since": claim.since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "actor": claim.actor,
        "nonce": claim.nonce,
        "kind": claim.kind,
        "named": claim.named,
        "posting": claim.posting,
        "commentId": claim.comment_id,
    }


def _pending(row: Data) -> PendingClaim | None:
    ref, start = _ref(row.get("ref")), _int(row.get("start"))
    kind, nonce = _text(row, "kind"), _text(row, "nonce")
    try:
        since: datetime | None = parse_timestamp(_text(row, "since"))
    except ValueError:
        since = None
    if ref is None or start is None or since is None or kind not in (CLAIM, NO_MACHINE):
        return None
    if not 0 < start < 10**18 or _NONCE.fullmatch(nonce) is None:
        return None  # not a round this release began: no claim could carry it
    return PendingClaim(
        ref,
        start,
        since,
        _text(row, "actor"),
        nonce,
        kind,
        _text(row, "named"),
        row.get("posting") is True,
        _int(row.get("commentId")),
    )


def _holder_row(holder: Holder) -> Data:
    return {
        "start": holder.start,
        "machine": holder.machine,
        "name": holder.name,
        "commentId": holder.comment_id,
    }


def _holder(row: Data) -> Holder | None:
    start, machine = _int(row.get("start")), _text(row, "machine")
    if start is None or not machine:
        return None
    return Holder(start, machine, _text(row, "name"), _int(row.get("commentId")))
