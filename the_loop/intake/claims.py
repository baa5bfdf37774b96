"""Claims on a ticket: how machines sharing a repository agree which one takes a start.

A machine about to spawn for a start posts one **claim** comment on the ticket: a line
for people (``the-loop: starting an agent on <name>``) and, in an HTML comment they do
not see, the start it answers, the machine's id and a nonce. The ticket's thread is the
log every machine reads, and GitHub numbers its comments in the order it took them: the
claim with the lowest comment id for a start wins it.

Only a claim that the token's own login posted, that carries exactly one well-formed
marker, and that was never edited counts: a stranger's comment with a forged marker, or
an edited claim, decides nothing. This module is the rule, over plain values; posting,
reading and deleting are the intake's collaborators'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from the_loop.github.marker import AGENT_COMMENT_MARKER
from the_loop.intake.events import IssueComment

#: ``<!-- the-loop:claim start=<comment id> machine=<32 hex> nonce=<16 hex> -->``
CLAIM_MARKER = re.compile(
    r"<!-- the-loop:claim start=([1-9][0-9]{0,17}) machine=([0-9a-f]{32}) nonce=([0-9a-f]{16}) -->"
)
_ANY_CLAIM = "<!-- the-loop:claim "
#: What a machine's name may show of itself on a ticket (the rest is replaced).
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]")
NAME_MAX = 64


@dataclass(frozen=True)
class Claim:
    """One claim as first posted: its comment, the start it answers, who made it."""

    comment_id: int
    start: int
    machine: str
    nonce: str
    #: The machine's name as the claim's text gives it (for people; ``""``: unreadable).
    name: str = ""


def shown_name(name: str) -> str:
    """``name`` as a claim shows it: letters, digits, ``._ -``, at most :data:`NAME_MAX`."""
    cleaned = _NAME_UNSAFE.sub("-", name.strip())[:NAME_MAX].strip()
    return cleaned or "a machine with no name"


def claim_body(*, name: str, start: int, machine: str, nonce: str) -> str:
    """The claim's body: the line people read, the-loop's marker, the claim's marker."""
    marker = f"<!-- the-loop:claim start={start} machine={machine} nonce={nonce} -->"
    if CLAIM_MARKER.fullmatch(marker) is None:
        raise ValueError(f"not a claim: start {start}, machine {machine!r}, nonce {nonce!r}")
    return f"the-loop: starting an agent on {shown_name(name)}\n\n{AGENT_COMMENT_MARKER}\n{marker}"


def read_claim(comment: IssueComment, *, own_login: str) -> Claim | None:
    """The claim ``comment`` makes, or None: not by ``own_login``, edited since it was
    posted, or without exactly one well-formed claim marker."""
    if not own_login or comment.login.casefold() != own_login.casefold():
        return None
    if comment.edited:
        return None
    if comment.body.count(_ANY_CLAIM) != 1:
        return None
    found = CLAIM_MARKER.search(comment.body)
    if found is None:
        return None
    first_line = comment.body.split("\n", 1)[0]
    prefix = "the-loop: starting an agent on "
    name = first_line[len(prefix) :] if first_line.startswith(prefix) else ""
    return Claim(comment.id, int(found.group(1)), found.group(2), found.group(3), name)


def claims_for(start: int, comments: Iterable[IssueComment], *, own_login: str) -> list[Claim]:
    """The claims on ``start`` among ``comments``, lowest comment id first."""
    found = (read_claim(c, own_login=own_login) for c in comments)
    return sorted((c for c in found if c is not None and c.start == start), key=_order)


def winner(start: int, comments: Iterable[IssueComment], *, own_login: str) -> Claim | None:
    """The claim that wins ``start``: the lowest comment id (None: no claim yet)."""
    claims = claims_for(start, comments, own_login=own_login)
    return claims[0] if claims else None


def _order(claim: Claim) -> int:
    return claim.comment_id
