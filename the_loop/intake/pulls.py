"""Pull requests as GitHub describes them, and which work items one delivers.

A pull request is linked to a work item with a live session here when its head
branch is the branch the checkout made for the item (``loop/<slug>``) or its body
closes the item with one of GitHub's closing keywords (``Closes #15``, ``fixes
octo/app#15``). Either counts only for a pull request whose head branch lives in the
repository itself: pushing a branch there takes write access, while anyone can open a
pull request from a fork and write any body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from the_loop.intake.delivery import visible_text
from the_loop.ref import WorkItemRef

#: GitHub's closing keywords, an optional colon, then ``#N`` or ``owner/repo#N``.
_CLOSING = re.compile(
    r"(?<![\w/-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+"
    r"(?:(?P<owner>[A-Za-z0-9-]+)/(?P<repo>[\w.-]+))?#(?P<number>[0-9]+)\b",
    re.IGNORECASE,
)
#: The branch a checkout is made on for a work item (``dispatch.workspace.BRANCH_PREFIX``).
BRANCH_PREFIX = "loop/"


@dataclass(frozen=True)
class PullRequest:
    """One pull request of a listing: where its head is and what its body closes."""

    ref: WorkItemRef
    head_branch: str
    #: ``owner/repo`` of the head branch (a fork's, or the repository's own).
    head_repository: str
    head_sha: str
    body: str
    author: str
    is_open: bool

    def from_own_repository(self) -> bool:
        base = f"{self.ref.owner}/{self.ref.repo}"
        return self.head_repository.casefold() == base.casefold()


def pull_from_json(data: Mapping[str, Any], *, repository: WorkItemRef) -> PullRequest:
    """The pull request ``data`` describes (an entry of ``GET /repos/{o}/{r}/pulls``);
    ``ValueError`` without a number or a head."""
    number = data.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        raise ValueError(f"a pull request needs a positive number, not {number!r}")
    head = _object(data, "head")
    branch = _text(head, "ref")
    if not branch:
        raise ValueError(f"pull request {number} has no head branch")
    return PullRequest(
        ref=repository.with_number(number),
        head_branch=branch,
        head_repository=_text(_object(head, "repo"), "full_name"),
        head_sha=_text(head, "sha"),
        body=_text(data, "body"),
        author=_text(_object(data, "user"), "login"),
        is_open=data.get("state") == "open",
    )


def pulls_from_json(
    entries: Iterable[Mapping[str, Any]], *, repository: WorkItemRef, warn: Callable[[str], None]
) -> list[PullRequest]:
    """A listing's pull requests as values, in GitHub's order; an entry without what
    linking needs is skipped with a warning."""
    pulls: list[PullRequest] = []
    for data in entries:
        try:
            pulls.append(pull_from_json(data, repository=repository))
        except ValueError as error:
            warn(f"{repository.owner}/{repository.repo}: skipping a pull request: {error}")
    return pulls


def closed_items(body: str, repository: WorkItemRef) -> list[WorkItemRef]:
    """The items of ``repository`` a body closes by GitHub's keywords, in order, once
    each (what GitHub's page hides, such as an HTML comment, closes nothing)."""
    shown, _hidden = visible_text(body)
    found: list[WorkItemRef] = []
    for match in _CLOSING.finditer(shown):
        owner, repo = match["owner"], match["repo"]
        if owner is not None and repo is not None:
            same = (owner.casefold(), repo.casefold())
            if same != (repository.owner.casefold(), repository.repo.casefold()):
                continue  # another repository's item: not one this round links
        ref = repository.with_number(int(match["number"]))
        if ref not in found:
            found.append(ref)
    return found


def branch_of(ref: WorkItemRef) -> str:
    """The branch a checkout is made on for ``ref`` when no ``--branch`` was asked for."""
    return BRANCH_PREFIX + ref.slug


def owners_of(pr: PullRequest, live: Iterable[WorkItemRef]) -> list[tuple[WorkItemRef, str]]:
    """The work items among ``live`` that ``pr`` delivers, and how it says so
    (``branch`` or ``closes``); none for a pull request from a fork."""
    if not pr.from_own_repository():
        return []
    candidates = [ref for ref in live if ref != pr.ref]
    owners = [(ref, "branch") for ref in candidates if branch_of(ref) == pr.head_branch]
    named = {ref for ref, _how in owners}
    closes = closed_items(pr.body, pr.ref)
    owners += [(ref, "closes") for ref in candidates if ref in closes and ref not in named]
    return owners


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""
