"""A ticket's facts as GitHub has them: one ``GET /repos/{o}/{r}/issues/{n}`` through the
REST client (which loads ``http.client``: import this module only when a ticket is read)."""

from __future__ import annotations

import urllib.parse
from typing import Any, cast

from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError
from the_loop.intake.events import issue_from_json
from the_loop.intake.ports import ItemFacts
from the_loop.ref import WorkItemRef


def read_ticket(ref: WorkItemRef, *, api_url: str, token: str) -> ItemFacts:
    """The ticket's title, body and author, and its web URL; ``GitHubHTTPError`` when
    GitHub cannot be asked, refuses, or answers with something that is not an issue."""
    owner, repo = (urllib.parse.quote(part, safe="") for part in (ref.owner, ref.repo))
    with GitHubClient(api_url, token) as client:
        data = client.get(f"/repos/{owner}/{repo}/issues/{ref.number}").json()
    if not isinstance(data, dict):
        raise GitHubHTTPError(f"{ref.ref}: GitHub answered with something that is not an issue")
    issue = issue_from_json(cast(dict[str, Any], data), ref)
    return ItemFacts(ref, title=issue.title, url=ref.url, body=issue.body, author=issue.author)
