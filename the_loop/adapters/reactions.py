"""The intake's ``acknowledge`` over the REST client: one 👀 reaction by the token's login.

``POST .../reactions`` with ``{"content": "eyes"}``: GitHub answers 201 for a new
reaction and 200 for one this login already made, so a repeat creates nothing. A
refusal raises (never retried here, never counted against the repository's back-off:
a missing reaction holds no delivery).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from the_loop.errors import TheLoopError
from the_loop.github.client import GitHubClient
from the_loop.ref import WorkItemRef

#: The reaction the-loop gives what it delivered.
EYES = "eyes"
#: Where each kind of subject takes its reactions, under ``/repos/{owner}/{repo}``.
_PATHS = {
    "issue_comment": "issues/comments/{subject}/reactions",
    "review_comment": "pulls/comments/{subject}/reactions",
    "issue": "issues/{subject}/reactions",
}


@dataclass(frozen=True)
class Reactions:
    """Reactions posted through ``client`` (its POSTs are spaced as every POST is)."""

    client: GitHubClient
    #: The name a repository (``owner/repo``) is asked of GitHub by: the one GitHub gives
    #: it now, once known (a renamed repository costs no redirect); by default its own.
    asked_as: Callable[[str], str] = str

    def acknowledge(self, on: WorkItemRef, kind: str, subject: int) -> None:
        """One 👀 on ``kind`` ``subject`` in ``on``'s repository (see
        :data:`~the_loop.intake.ports.Acknowledge`)."""
        where = _PATHS.get(kind)
        if where is None:
            raise TheLoopError(f"no reaction can be posted on a {kind!r}")
        path = f"/repos/{self.asked_as(f'{on.owner}/{on.repo}')}/" + where.format(subject=subject)
        self.client.post_json(path, {"content": EYES})
