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

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from the_loop.github.marker import AGENT_COMMENT_MARKER
from the_loop.intake.events import IssueComment
from the_loop.intake.keywords import KeywordGrammar, commanding_lines

#: The kinds of marked comment a round is decided by: a claim on a start, and the one
#: notice that a start named a machine nobody has seen claiming.
CLAIM, NO_MACHINE = "claim", "no-machine"
#: ``<!-- the-loop:<kind> start=<comment id> machine=<32 hex> nonce=<16 hex> -->``
CLAIM_MARKER = re.compile(
    r"<!-- the-loop:(claim|no-machine) start=([1-9][0-9]{0,17}) machine=([0-9a-f]{32})"
    r" nonce=([0-9a-f]{16}) -->"
)
_ANY_CLAIM = re.compile(r"<!-- the-loop:(?:claim|no-machine) ")
_CLAIM_LINE = "the-loop: starting an agent on "
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
    kind: str = CLAIM


def shown_name(name: str) -> str:
    """``name`` as a claim shows it: letters, digits, ``._ -``, at most :data:`NAME_MAX`."""
    cleaned = _NAME_UNSAFE.sub("-", name.strip())[:NAME_MAX].strip()
    return cleaned or "a machine with no name"


def claim_body(*, name: str, start: int, machine: str, nonce: str) -> str:
    """The claim's body: the line people read, the-loop's marker, the claim's marker."""
    return _marked(f"{_CLAIM_LINE}{shown_name(name)}", CLAIM, start, machine, nonce)


def no_machine_body(
    *, named: str, seen: Iterable[str], start: int, machine: str, nonce: str
) -> str:
    """The notice that a start named a machine not seen claiming on the repository."""
    names = sorted({shown_name(n) for n in seen}, key=str.casefold)
    listed = ", ".join(names) if names else "none yet"
    line = (
        f"the-loop: no machine named {shown_name(named)} has claimed a start on this "
        f"repository, so none starts an agent; machines seen claiming here: {listed}"
    )
    return _marked(line, NO_MACHINE, start, machine, nonce)


def claim_marker(kind: str, start: int, machine: str, nonce: str) -> str:
    """The hidden marker of a claim (or notice) of ``kind`` on ``start``."""
    return f"<!-- the-loop:{kind} start={start} machine={machine} nonce={nonce} -->"


def _marked(line: str, kind: str, start: int, machine: str, nonce: str) -> str:
    marker = claim_marker(kind, start, machine, nonce)
    if CLAIM_MARKER.fullmatch(marker) is None:
        raise ValueError(f"not a claim: start {start}, machine {machine!r}, nonce {nonce!r}")
    return f"{line}\n\n{AGENT_COMMENT_MARKER}\n{marker}"


def looks_like_claim(comment: IssueComment) -> bool:
    """Whether ``comment`` holds a claim's marker at all (before its author is asked)."""
    return _ANY_CLAIM.search(comment.body) is not None


def read_claim(comment: IssueComment, *, own_login: str) -> Claim | None:
    """The claim ``comment`` makes, or None: not by ``own_login``, edited since it was
    posted, or without exactly one well-formed claim marker."""
    if not own_login or comment.login.casefold() != own_login.casefold():
        return None
    if comment.edited:
        return None
    if len(_ANY_CLAIM.findall(comment.body)) != 1:
        return None
    found = CLAIM_MARKER.search(comment.body)
    if found is None:
        return None
    first_line = comment.body.split("\n", 1)[0]
    name = first_line[len(_CLAIM_LINE) :] if first_line.startswith(_CLAIM_LINE) else ""
    kind, start, machine, nonce = found.groups()
    return Claim(comment.id, int(start), machine, nonce, name, kind)


def claims_for(
    start: int, comments: Iterable[IssueComment], *, own_login: str, kind: str = CLAIM
) -> list[Claim]:
    """The claims (or notices: ``kind``) on ``start`` among ``comments``, lowest id first."""
    found = (read_claim(c, own_login=own_login) for c in comments)
    chosen = (c for c in found if c is not None and c.start == start and c.kind == kind)
    return sorted(chosen, key=_order)


def winner(start: int, comments: Iterable[IssueComment], *, own_login: str) -> Claim | None:
    """The claim that wins ``start``: the lowest comment id (None: no claim yet)."""
    claims = claims_for(start, comments, own_login=own_login)
    return claims[0] if claims else None


def named_machine(body: str, grammar: KeywordGrammar) -> str | None:
    """The machine a start names (``<prefix> start on <name>``), else None."""
    pattern = _named(grammar.prefix)
    for line in commanding_lines(body):
        found = pattern.match(line)
        if found is not None:
            return found.group(1)
    return None


@functools.lru_cache(maxsize=16)
def _named(prefix: str) -> re.Pattern[str]:
    return re.compile(
        rf" {{0,3}}(?ai:{re.escape(prefix)})[ \t]+(?ai:start)[ \t]+(?ai:on)[ \t]+(\S+)"
    )


def _order(claim: Claim) -> int:
    return claim.comment_id
