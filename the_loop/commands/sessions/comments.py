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
        help="post the keyword on the ticket too (default: on when $GITHUB_TOKEN or "
        "$GH_TOKEN is set, unless integrations.github.comment is false)",
    )
    return parent


def with_keyword_comment(
    result: Result,
    requested: bool | None,
    context: Context,
    stores: Stores,
    ref: WorkItemRef,
    keyword: str,
) -> Result:
    """``result`` after posting ``keyword`` (see :func:`post_keyword`): a posted comment adds
    a line ``<ref>: posted '<keyword>' on <url>`` and ``commentUrl`` to the item."""
    url = post_keyword(requested, context, stores, ref, keyword)
    if url is None:
        return result
    items = [{**item, "commentUrl": url} for item in result.items]
    lines = [*result.text(), f"{ref.ref}: posted {keyword!r} on {url}"]
    return dataclasses.replace(result, items=tuple(items), text=lambda: lines)


def post_keyword(
    requested: bool | None, context: Context, stores: Stores, ref: WorkItemRef, keyword: str
) -> str | None:
    """Post ``keyword`` on ``ref``'s ticket when ``requested`` (None: the default applies).

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
        posted = github.post_issue_comment(ref, keyword, token=token, api_url=api_url)
    except github.GitHubError as error:
        stores.events.emit(
            "comment.failed", level="warning", work_item=ref.ref, command=keyword, error=str(error)
        )
        note(f"{ref.ref}: could not post {keyword!r} on the ticket ({error}); the {keyword} stands")
        return None
    stores.events.emit("comment.posted", work_item=ref.ref, command=keyword)
    return posted or ref.url
