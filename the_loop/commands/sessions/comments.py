"""Keyword comments for ``sessions start | pause | resume | stop``: the flag and the post.

The post is best-effort and runs after the local action succeeded: a failure is
one ``note:`` line and a ``comment.failed`` event, never an exception and never a
different exit code. A posted comment is its own output line naming its URL.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from the_loop.commands.common import Context, note
from the_loop.commands.parser import ONCE_BOOLEAN, parent_parser
from the_loop.commands.render import Result
from the_loop.commands.stores import Stores
from the_loop.ref import WorkItemRef


def comment_parent() -> argparse.ArgumentParser:
    """``--comment`` / ``--no-comment`` (None when neither: the default is resolved later)."""
    parent = parent_parser()
    parent.add_argument(
        "--comment",
        action=ONCE_BOOLEAN,
        default=None,
        help="say on the ticket too what was done and who asked (default: on when "
        "$GITHUB_TOKEN or $GH_TOKEN is set, unless integrations.github.comment is false)",
    )
    return parent


#: What each keyword did, as the ticket's readers are told it.
_DONE = {
    "start": "Started an agent session",
    "pause": "Paused the agent session",
    "resume": "Resumed the agent session",
    "stop": "Stopped the agent session",
}


def keyword_comment(keyword: str, actor: str) -> str:
    """The comment for ``keyword``: what happened and who asked, in words (the poster adds
    the marker). It starts with none of the keyword grammar's prefixes: no command."""
    done = _DONE.get(keyword, f"Ran {keyword} on the agent session")
    return (
        f"{done} for this ticket, as {actor} asked on their machine "
        f"(`the-loop sessions {keyword}`)."
    )


def with_keyword_comment(
    result: Result,
    requested: bool | None,
    context: Context,
    stores: Stores,
    ref: WorkItemRef,
    keyword: str,
) -> Result:
    """``result`` after saying ``keyword`` on the ticket (see :func:`post_keyword`): a posted
    comment adds a line ``<ref>: said so on the ticket: <url>`` and ``commentUrl``."""
    url = post_keyword(requested, context, stores, ref, keyword)
    if url is None:
        return result
    items = [{**item, "commentUrl": url} for item in result.items]
    lines = [*result.text(), f"{ref.ref}: said so on the ticket: {url}"]
    return dataclasses.replace(result, items=tuple(items), text=lambda: lines)


def post_keyword(
    requested: bool | None, context: Context, stores: Stores, ref: WorkItemRef, keyword: str
) -> str | None:
    """Say on ``ref``'s ticket that ``keyword`` ran and who asked (:func:`keyword_comment`),
    when ``requested`` (None: the default applies).

    The posted comment's URL (the ticket's when the API named none); None when not posted.
    """
    from the_loop.github import poster as github

    named = context.config.get_str("integrations.github.tokenEnv", "")
    token = github.token_from_environment(os.environ, named)
    wanted = requested
    if wanted is None:
        wanted = bool(token) and context.config.get_bool("integrations.github.comment")
    if not wanted:
        return None
    if ref.provider != "github":
        if requested:
            note(f"{ref.ref}: not a GitHub work item: no comment posted")
        return None
    if not token:
        where = f"${named}" if named else "$GITHUB_TOKEN or $GH_TOKEN"
        note(f"{ref.ref}: no comment posted: set {where}")
        return None
    api_url = github.api_url_for(ref, context.config.get_str("integrations.github.apiUrl"))
    try:
        body = keyword_comment(keyword, context.actor)
        posted = github.post_issue_comment(ref, body, token=token, api_url=api_url)
    except github.GitHubError as error:
        stores.events.emit(
            "comment.failed", level="warning", work_item=ref.ref, command=keyword, error=str(error)
        )
        note(f"{ref.ref}: could not post {keyword!r} on the ticket ({error}); the {keyword} stands")
        return None
    stores.events.emit("comment.posted", work_item=ref.ref, command=keyword)
    return posted or ref.url
