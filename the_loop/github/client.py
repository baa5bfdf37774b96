"""The GitHub REST client the poller reads with (and the poster can post with).

Over ``http.client`` only: one kept-alive connection per host, reopened after a
failure; a timeout on every connect and read; conditional GETs through an injected
:class:`~the_loop.github.etags.EtagCache`; ``Link: rel="next"`` followed across
pages. Every failure is one :class:`~the_loop.github.replies.GitHubHTTPError`
carrying the status, the ``retry-after`` and the rate limit; no message ever holds
the token. The only module that imports ``http.client``.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from the_loop.github.etags import CachedPage, EtagCache, MemoryEtagCache, token_fingerprint
from the_loop.github.poster import API_VERSION, DEFAULT_TIMEOUT_SECONDS, USER_AGENT
from the_loop.github.replies import (
    GitHubHTTPError,
    GitHubResponse,
    Listing,
    RateLimit,
    error_detail,
    header_integer,
    next_link,
)

#: A listing longer than this many pages is refused (a ``Link`` loop, or a runaway).
MAX_PAGES = 1000

Params = Mapping[str, str | int]


@dataclass
class ClientStats:
    """What a client did, for a cycle's report."""

    requests: int = 0
    not_modified: int = 0
    connections_opened: int = 0


class _Answer(NamedTuple):
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes


_Origin = tuple[str, str, int]


@dataclass
class GitHubClient:
    """A REST client for one API root and one token; close it (or use ``with``) when done.

    ``before_post`` is called before every POST (the spacing of
    :class:`~the_loop.github.backoff.PostSpacer`). Raises :class:`GitHubHTTPError`
    for an API URL that is not plain http(s).
    """

    api_url: str
    token: str
    etags: EtagCache = field(default_factory=MemoryEtagCache)
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    before_post: Callable[[], None] | None = None
    stats: ClientStats = field(default_factory=ClientStats)
    _connections: dict[_Origin, http.client.HTTPConnection] = field(
        default_factory=dict[_Origin, http.client.HTTPConnection], init=False, repr=False
    )

    def __post_init__(self) -> None:
        split = urllib.parse.urlsplit(self.api_url)
        if split.scheme not in ("http", "https") or not split.hostname or split.username:
            raise GitHubHTTPError(f"refusing GitHub API URL {self.api_url!r}: it must be http(s)")
        self._origin = _origin_of(split)
        self._prefix = split.path.rstrip("/")
        self._fingerprint = token_fingerprint(self.token)

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every kept-alive connection."""
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def url_for(self, path: str, params: Params | None = None) -> str:
        """The absolute URL of ``path`` under the API root, with ``params`` as its query."""
        scheme, host, port = self._origin
        query = f"?{urllib.parse.urlencode(dict(params))}" if params else ""
        return f"{scheme}://{_netloc(scheme, host, port)}{self._prefix}{path}{query}"

    def get(
        self, path: str, params: Params | None = None, *, keep_body: bool = False
    ) -> GitHubResponse:
        """A conditional GET of ``path``; ``keep_body`` remembers the body for a later 304."""
        return self.get_url(self.url_for(path, params), keep_body=keep_body)

    def get_all_pages(
        self,
        path: str,
        params: Params | None = None,
        *,
        keep_bodies: bool = False,
        conditional: bool = True,
    ) -> Listing:
        """Every page of ``path``, following ``rel="next"`` (each page a conditional GET,
        unless ``conditional`` is False: then every page is read in full)."""
        pages: list[GitHubResponse] = []
        url, seen = self.url_for(path, params), set[str]()
        while url:
            if url in seen or len(pages) >= MAX_PAGES:
                raise GitHubHTTPError(f"{_where(url)} keeps linking to more pages; stopped")
            seen.add(url)
            page = self.get_url(url, keep_body=keep_bodies, conditional=conditional)
            pages.append(page)
            url = page.next_url
        return Listing(tuple(pages))

    def get_url(
        self, url: str, *, keep_body: bool = False, conditional: bool = True
    ) -> GitHubResponse:
        """A conditional GET of an absolute URL on the API's own host (a plain one when
        ``conditional`` is False; its ETag is still kept for the next read)."""
        cached = self.etags.lookup(self._fingerprint, url) if conditional else None
        headers = self._headers()
        if cached is not None:
            headers["If-None-Match"] = cached.etag
        answer = self._exchange("GET", url, None, headers)
        if answer.status == 304 and cached is not None:
            self.stats.not_modified += 1
            body = (cached.body or "").encode("utf-8")
            return GitHubResponse(304, url, answer.headers, body, cached.next_url, True)
        if not 200 <= answer.status < 300:
            raise _refusal(url, answer)
        next_url = self._next_link(url, answer.headers)
        etag = answer.headers.get("etag", "")
        if etag:
            kept = answer.body.decode("utf-8", errors="replace") if keep_body else None
            self.etags.store(self._fingerprint, url, CachedPage(etag, next_url, kept))
        return GitHubResponse(answer.status, url, answer.headers, answer.body, next_url)

    def post_json(self, path: str, payload: object) -> GitHubResponse:
        """POST ``payload`` as JSON to ``path`` (never retried: it may have been done)."""
        if self.before_post is not None:
            self.before_post()
        url = self.url_for(path)
        headers = {**self._headers(), "Content-Type": "application/json"}
        answer = self._exchange("POST", url, json.dumps(payload).encode("utf-8"), headers)
        if not 200 <= answer.status < 300:
            raise _refusal(url, answer)
        return GitHubResponse(answer.status, url, answer.headers, answer.body)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _next_link(self, url: str, headers: Mapping[str, str]) -> str:
        """The ``rel="next"`` URL; refused off the API's host (the token would follow)."""
        target = next_link(headers.get("link", ""))
        if target and _origin_of(urllib.parse.urlsplit(target)) != self._origin:
            raise GitHubHTTPError(f"{_where(url)} linked its next page to another host; stopped")
        return target

    def _exchange(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> _Answer:
        """One request on the host's kept-alive connection; a GET on a stale one is resent once."""
        split = urllib.parse.urlsplit(url)
        origin, target = _origin_of(split), split.path + (f"?{split.query}" if split.query else "")
        if origin != self._origin:
            raise GitHubHTTPError(f"refusing to send the token to {_where(url)}")
        for attempt in (1, 2):
            connection, reused = self._connection(origin)
            self.stats.requests += 1
            try:
                connection.request(method, target, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except TimeoutError as error:
                self._drop(origin)
                message = f"{_where(url)} did not answer within {self.timeout:g}s"
                raise GitHubHTTPError(message) from error
            except (OSError, http.client.HTTPException) as error:
                self._drop(origin)
                if reused and method == "GET" and attempt == 1:
                    continue  # the server closed the idle connection: ask once more, afresh
                reason = str(error) or type(error).__name__
                raise GitHubHTTPError(f"could not talk to {_where(url)}: {reason}") from error
            if response.will_close:
                self._drop(origin)
            return _Answer(response.status, response.reason, _header_map(response), data)
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _connection(self, origin: _Origin) -> tuple[http.client.HTTPConnection, bool]:
        connection = self._connections.get(origin)
        if connection is not None:
            return connection, True
        scheme, host, port = origin
        factory = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        connection = factory(host, port, timeout=self.timeout)
        self._connections[origin] = connection
        self.stats.connections_opened += 1
        return connection, False

    def _drop(self, origin: _Origin) -> None:
        connection = self._connections.pop(origin, None)
        if connection is not None:
            connection.close()


def _refusal(url: str, answer: _Answer) -> GitHubHTTPError:
    detail = error_detail(answer.body)
    suffix = f": {detail}" if detail else ""
    retry_after = header_integer(answer.headers, "retry-after")
    return GitHubHTTPError(
        f"{_where(url)} answered {answer.status} {answer.reason}{suffix}",
        status=answer.status,
        retry_after=None if retry_after is None else float(retry_after),
        rate=RateLimit.from_headers(answer.headers),
        detail=detail,
    )


def _header_map(response: http.client.HTTPResponse) -> dict[str, str]:
    """Response headers by lower-case name; a repeated header's values joined by ``, ``."""
    headers: dict[str, str] = {}
    for name, value in response.getheaders():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _origin_of(split: urllib.parse.SplitResult) -> _Origin:
    scheme = split.scheme.lower()
    try:
        port = split.port
    except ValueError:
        port = None
    return scheme, (split.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _netloc(scheme: str, host: str, port: int) -> str:
    default = 443 if scheme == "https" else 80
    shown = f"[{host}]" if ":" in host else host
    return shown if port == default else f"{shown}:{port}"


def _where(url: str) -> str:
    """The host (and port) of ``url``: what a message names, never a query or a credential."""
    split = urllib.parse.urlsplit(url)
    scheme, host, port = _origin_of(split)
    return _netloc(scheme, host, port)
