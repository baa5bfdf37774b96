"""What the intake needs to claim a start on the ticket: this machine, the token's own
login (and where to keep it once learned from a claim), the thread after a start, a
delete, and the claim book (what this machine keeps of its rounds between cycles, so a
claim a crash cut short is finished next cycle).

Each collaborator raises :class:`~the_loop.errors.TheLoopError` with a sentence when
GitHub (or the disk) did not do what was asked; a round that could not be decided is
kept for the next cycle, and never spawns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from the_loop.intake.events import IssueComment
from the_loop.ref import WorkItemRef


@dataclass(frozen=True)
class Machine:
    """This state root's machine: its id (32 hex digits, made once) and its name."""

    id: str
    name: str


@dataclass(frozen=True)
class PendingClaim:
    """A round this machine has begun and not yet decided: the start it answers (its
    comment's id and time), who gave it, the nonce of this machine's claim, and the
    claim's comment once posted (``posting``: a POST was sent, its answer maybe lost)."""

    ref: WorkItemRef
    start: int
    since: datetime
    actor: str
    nonce: str
    #: ``claim``, or ``no-machine`` (the start named a machine nobody has seen claiming).
    kind: str = "claim"
    #: The machine the start named (``""``: none).
    named: str = ""
    posting: bool = False
    comment_id: int | None = None


@dataclass(frozen=True)
class Holder:
    """Who won an item's latest round, as this machine knows it."""

    start: int
    machine: str
    name: str
    #: The winning claim's comment (None: the start named the machine; nobody claimed).
    comment_id: int | None = None


class ClaimBook(Protocol):
    """This machine's rounds, kept in ``local/`` (each change one locked write)."""

    def pending(self) -> Sequence[PendingClaim]: ...

    def begin(self, claim: PendingClaim) -> None:
        """Keep ``claim`` as its item's round (a round begun before is replaced); written
        just before its claim is posted, so a crash finds the POST it may have sent."""
        ...

    def update(self, claim: PendingClaim) -> None:
        """Replace the item's pending round by ``claim`` when it answers the same start."""
        ...

    def settle(self, ref: WorkItemRef, start: int, holder: Holder | None) -> None:
        """End the round of ``start`` (and an earlier start's still pending): ``holder``
        won it (None: nobody holds the item)."""
        ...

    def release(self, ref: WorkItemRef) -> None:
        """Forget the item's round and holder (a stop, a cleanup, a closure ended it)."""
        ...

    def holders(self) -> Mapping[WorkItemRef, Holder]: ...

    def machines(self, repository: str) -> Mapping[str, str]:
        """The machines (id to name) seen claiming on ``repository`` (``owner/repo``)."""
        ...

    def note_machines(self, repository: str, seen: Mapping[str, str]) -> None:
        """Add to the machines seen claiming on ``repository`` (written only when new)."""
        ...


@dataclass(frozen=True)
class ClaimPorts:
    """The claim's collaborators; the intake has None when ``routing.claim`` is never."""

    machine: Machine
    #: The login of the token's own user: GitHub's ``GET /user`` (asked once, then kept),
    #: else the one learned from a claim this machine posted with the token; None while
    #: neither is known (GitHub refuses a GitHub App's installation token ``GET /user``,
    #: and says whose it is only as the author of what it posts).
    own_login: Callable[[], str | None]
    #: ``comments_after(ref, since)``: the item's comments updated at or after ``since``.
    comments_after: Callable[[WorkItemRef, datetime], Sequence[IssueComment]]
    delete_comment: Callable[[WorkItemRef, int], None]
    book: ClaimBook
    nonce: Callable[[], str]
    #: Keep ``login`` as the token's own: the author GitHub gave this machine's claim.
    learn_login: Callable[[str], None]
