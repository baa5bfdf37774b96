"""Posting a keyword comment on a GitHub issue or pull request (the REST API, no dependency).

:func:`post_issue_comment` sends ``POST /repos/{owner}/{repo}/issues/{n}/comments``
with a bearer token and raises :class:`GitHubError` (a sentence without the token)
when anything goes wrong. Every body it posts carries :data:`AGENT_COMMENT_MARKER`
after its text, so the poller never takes the-loop's own words for a person's. It
never reads the config or the environment itself: the caller passes the token
(:func:`token_from_environment`) and the API URL.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, cast

from the_loop import __version__
from the_loop.errors import TheLoopError
from the_loop.github.marker import AGENT_COMMENT_MARKER
from the_loop.ref import DEFAULT_GITHUB_HOST, WorkItemRef

DEFAULT_API_URL = "https://api.github.com"
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
API_VERSION = "2022-11-28"
DEFAULT_TIMEOUT_SECONDS = 10.0
USER_AGENT = f"the-loop/{__version__}"
#: How much of an error response body is quoted in the message.
_DETAIL_LIMIT = 200

#: ``urllib.request.urlopen``-like: (request, timeout=...) -> a response context manager.
Opener = Callable[..., Any]


class GitHubError(TheLoopError):
    """A comment that could not be posted; the message never holds the token."""


#: What a token must be allowed to do, for the messages about a missing or refused one.
TOKEN_ACCESS = (
    "the token needs read access to the repositories' issues, and write access to "
    "issues to post notices and to react to what it delivers (pull requests too, for "
    "reviews)"
)


def token_sources(variable: str = "") -> str:
    """The variables :func:`token_from_environment` reads, for a message."""
    if variable:
        return f"${variable} (integrations.github.tokenEnv)"
    return " and ".join(f"${name}" for name in TOKEN_VARIABLES)


def token_help(variable: str = "") -> str:
    """Where the token is read from and what it needs, for a refused token's message."""
    return f"the-loop reads the token from {token_sources(variable)}; {TOKEN_ACCESS}"


def token_from_environment(environ: Mapping[str, str], variable: str = "") -> str:
    """``$<variable>`` when one is named (``integrations.github.tokenEnv``), else
    ``$GITHUB_TOKEN``, else ``$GH_TOKEN``; ``""`` when the one(s) looked at are unset."""
    for name in (variable,) if variable else TOKEN_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return ""


def api_url_for(ref: WorkItemRef, override: str = "") -> str:
    """The REST API root for ``ref``'s host: ``override``, api.github.com, or ``<host>/api/v3``."""
    if override:
        return override.rstrip("/")
    host = ref.effective_host
    return DEFAULT_API_URL if host == DEFAULT_GITHUB_HOST else f"https://{host}/api/v3"


def issue_comments_url(ref: WorkItemRef, api_url: str) -> str:
    """``<api>/repos/{owner}/{repo}/issues/{n}/comments`` (``ValueError`` for a non-GitHub ref)."""
    if ref.provider != "github":
        raise ValueError(f"{ref.ref} is not a GitHub work item: only github refs get comments")
    owner = urllib.parse.quote(ref.owner, safe="")
    repo = urllib.parse.quote(ref.repo, safe="")
    return f"{api_url.rstrip('/')}/repos/{owner}/{repo}/issues/{ref.number}/comments"


def marked_body(body: str) -> str:
    """``body`` as the-loop posts it: its text first (what people read), then, on a line
    of its own, the marker (an HTML comment, invisible on GitHub). Idempotent."""
    if AGENT_COMMENT_MARKER in body:
        return body
    return f"{body.rstrip(chr(10))}\n\n{AGENT_COMMENT_MARKER}"


def post_issue_comment(
    ref: WorkItemRef,
    body: str,
    *,
    token: str,
    api_url: str = "",
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    urlopen: Opener = urllib.request.urlopen,
) -> str:
    """Post ``body`` (with the marker: :func:`marked_body`) as a comment on ``ref``; return
    the comment's web URL (``""`` if unsaid).

    Raises :class:`GitHubError` for a refused request, an unreachable host, a
    timeout, a missing token or a non-GitHub ref.
    """
    if not token:
        raise GitHubError("no GitHub token: set $GITHUB_TOKEN or $GH_TOKEN")
    try:
        url = issue_comments_url(ref, api_url or api_url_for(ref))
    except ValueError as error:
        raise GitHubError(str(error)) from error
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise GitHubError(f"refusing GitHub API URL {api_url!r}: it must be http(s)")
    request = urllib.request.Request(
        url,
        data=json.dumps({"body": marked_body(body)}).encode("utf-8"),
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        },
    )
    return _send(request, timeout, urlopen)


def _send(request: urllib.request.Request, timeout: float, urlopen: Opener) -> str:
    where = urllib.parse.urlsplit(request.full_url).netloc
    try:
        with urlopen(request, timeout=timeout) as response:
            payload = cast(bytes, response.read())
    except urllib.error.HTTPError as error:
        detail = _detail(error.read())
        suffix = f": {detail}" if detail else ""
        raise GitHubError(f"{where} answered {error.code} {error.reason}{suffix}") from error
    except urllib.error.URLError as error:
        raise GitHubError(f"could not reach {where}: {error.reason}") from error
    except TimeoutError as error:
        raise GitHubError(f"{where} did not answer within {timeout:g}s") from error
    except OSError as error:
        raise GitHubError(f"could not talk to {where}: {error}") from error
    return _comment_url(payload)


def _detail(payload: bytes) -> str:
    """GitHub's ``message`` from an error body, else the body's start, on one line."""
    text = payload.decode("utf-8", errors="replace")
    try:
        data: object = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(cast(dict[str, Any], data).get("message"), str):
        text = cast(str, cast(dict[str, Any], data)["message"])
    return " ".join(text.split())[:_DETAIL_LIMIT]


def _comment_url(payload: bytes) -> str:
    try:
        data: object = json.loads(payload.decode("utf-8", errors="replace"))
    except ValueError:
        return ""
    url = cast(dict[str, Any], data).get("html_url") if isinstance(data, dict) else None
    return url if isinstance(url, str) else ""
