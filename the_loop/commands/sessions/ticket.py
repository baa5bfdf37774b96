"""The first prompt of a session that ``sessions start`` spawns: ``routing.prompt`` filled in
with the ticket's title, URL and body, framed as untrusted input when its author is not
in ``routing.authorizedUsers``.

The URL comes from the ref. The title and body are one ``GET /repos/{o}/{r}/issues/{n}``
through the REST client (with its timeout: :mod:`the_loop.adapters.ticket`); when that
cannot be done (no token, the API unreachable or refusing) the start goes on with them
empty, after one warning saying why. The GitHub modules are imported here only when
needed: they load ``http.client``.
"""

from __future__ import annotations

import os

from the_loop.commands.common import Context, warn
from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.ports import ItemFacts
from the_loop.intake.prompt import render_prompt
from the_loop.ref import WorkItemRef


def first_prompt(context: Context, ref: WorkItemRef) -> str:
    """``routing.prompt`` (or the poller's default) with ``{title}``, ``{url}``, ``{body}``."""
    config = context.config
    authorized = AuthorizedUsers.of(config.get_str_list("routing.authorizedUsers"))
    return render_prompt(
        config.get_str("routing.prompt", ""), ticket_facts(context, ref), authorized
    )


def ticket_facts(context: Context, ref: WorkItemRef) -> ItemFacts:
    """The ticket's title, body and author as GitHub has them, and its web URL; empty
    title and body (and one warning) when they cannot be read. Other providers: the URL
    alone."""
    if ref.provider != "github":
        return ItemFacts(ref, url=ref.url)
    from the_loop.github import poster as github
    from the_loop.github.replies import GitHubHTTPError

    named = context.config.get_str("integrations.github.tokenEnv", "")
    token = github.token_from_environment(os.environ, named)
    if not token:
        where = f"${named}" if named else "$GITHUB_TOKEN or $GH_TOKEN"
        return _unread(ref, f"no token: set {where}")
    api_url = github.api_url_for(ref, context.config.get_str("integrations.github.apiUrl", ""))
    from the_loop.adapters.ticket import read_ticket  # loads http.client: only with a token

    try:
        return read_ticket(ref, api_url=api_url, token=token)
    except GitHubHTTPError as error:
        return _unread(ref, str(error))


def _unread(ref: WorkItemRef, why: str) -> ItemFacts:
    warn(f"{ref.ref}: could not read the ticket ({why}); the agent's prompt has no title or body")
    return ItemFacts(ref, url=ref.url)
