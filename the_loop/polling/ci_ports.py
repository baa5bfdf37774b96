"""What the poll reader is given to read CI: GitHub's check reads, and its memory of heads.

GitHub reaches the reader's CI step only through :class:`CheckReads`; what it keeps
between cycles (each watched pull request's head SHA, what each of its two answers said
last, whose turn it is) through :class:`HeadsCache`, machine-local. An adapter factory
builds them; every collaborator raises :class:`~the_loop.errors.TheLoopError` with a
sentence on failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from the_loop.intake.ci import PartState
from the_loop.intake.ports import Json

#: The two answers a head has: its check runs, its combined commit status.
Part = Literal["runs", "statuses"]
_STATES: tuple[PartState, ...] = ("", "none", "active", "failing", "green", "other")


@dataclass(frozen=True)
class ObjectPage:
    """An answer that is one object (a conditional GET); ``data`` is empty when it was
    not modified since it was last read."""

    data: Json
    not_modified: bool


@dataclass(frozen=True)
class HeadState:
    """What the reader keeps of one watched pull request: its head, whether it is open,
    what each answer said when last read (``""``: not read yet), and which answer an
    idle head asks next."""

    sha: str
    is_open: bool = True
    runs: PartState = ""
    statuses: PartState = ""
    turn: Part = "runs"

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"sha": self.sha, "turn": self.turn}
        if not self.is_open:
            document["open"] = False
        if self.runs:
            document["runs"] = self.runs
        if self.statuses:
            document["statuses"] = self.statuses
        return document

    @classmethod
    def from_dict(cls, data: object) -> HeadState:
        """The state; ``ValueError`` for anything that is not one (a hand edit)."""
        if not isinstance(data, Mapping):
            raise ValueError("a head's entry must be an object")
        entry = cast(Mapping[str, Any], data)
        sha, runs, statuses = entry.get("sha"), entry.get("runs", ""), entry.get("statuses", "")
        if not isinstance(sha, str) or runs not in _STATES or statuses not in _STATES:
            raise ValueError("a head's entry needs its SHA, and states GitHub's answers have")
        turn: Part = "statuses" if entry.get("turn") == "statuses" else "runs"
        return cls(sha, entry.get("open") is not False, runs, statuses, turn)


class CheckReads(Protocol):
    """The reads of a pull request's CI: its head, its check runs and combined status
    (each every page of it, conditionally; ``fresh`` asks in full), the statuses posted
    on a commit (the newest, with who posted each), an Actions job and its log."""

    def pull_request(self, repository: str, number: int) -> Json: ...

    def check_runs(self, repository: str, sha: str, *, fresh: bool = False) -> ObjectPage: ...

    def combined_status(self, repository: str, sha: str, *, fresh: bool = False) -> ObjectPage: ...

    def statuses(self, repository: str, sha: str) -> Sequence[Json]: ...

    def job(self, repository: str, job_id: int) -> Json: ...

    def job_log(self, repository: str, job_id: int) -> str: ...


class HeadsCache(Protocol):
    """The machine-local state of each watched pull request (by its ref's text): changes
    are staged, then written together by :meth:`save`."""

    def get(self, pull_request: str) -> HeadState | None: ...

    def put(self, pull_request: str, state: HeadState | None) -> None: ...

    def known(self) -> list[str]: ...

    def save(self) -> None: ...


class MemoryHeads:
    """Heads kept for the life of the process."""

    def __init__(self) -> None:
        self.heads: dict[str, HeadState] = {}

    def get(self, pull_request: str) -> HeadState | None:
        return self.heads.get(pull_request)

    def put(self, pull_request: str, state: HeadState | None) -> None:
        if state is None:
            self.heads.pop(pull_request, None)
        else:
            self.heads[pull_request] = state

    def known(self) -> list[str]:
        return list(self.heads)

    def save(self) -> None:
        """Nothing to write."""
