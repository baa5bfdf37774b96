"""The GitHub REST client the poller reads with (and the poster can post with).

Over ``http.client`` only: one kept-alive connection per host, reopened after a
failure; a timeout on every connect and read, and a deadline on each whole request
(a connection still busy at it is cut off, however slowly the answer trickles in);
conditional GETs through an injected :class:`~the_loop.github.etags.EtagCache`;
``Link: rel="next"`` followed across pages; a redirect GitHub answers (a renamed
repository, a transferred issue) followed on the API's own host, at most
:data:`MAX_REDIRECTS` hops, the token never sent elsewhere. Every failure, whatever
the server sent, is one :class:`~the_loop.github.replies.GitHubHTTPError` carrying the
status, the ``retry-after`` and the rate limit; no message ever holds the token. The
only module that imports ``http.client``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

from the_loop.github.etags import CachedPage, EtagCache, MemoryEtagCache, token_fingerprint
from the_loop.github.poster import API_VERSION, DEFAULT_TIMEOUT_SECONDS, USER_AGENT
from the_loop.github.replies import (
    GitHubHTTPError,
    GitHubResponse,
    Listing,
    RateLimit,
    error_detail,
    header_integer,
    link_target,
    one_line,
)

#: A listing longer than this many pages is refused (a ``Link`` loop, or a runaway),
#: unless the caller asks for its first or its last pages.
MAX_PAGES = 1000
#: No walk reads more pages than this, not even one kept to its last pages.
MAX_WALKED_PAGES = 10 * MAX_PAGES
#: The longest one request may take, from its connect to the last byte of its answer.
DEFAULT_DEADLINE_SECONDS = 30.0
#: A larger body is refused: no page of GitHub's comes near it.
MAX_BODY_BYTES = 64 * 1024 * 1024
#: The longest each request of a download (see :meth:`GitHubClient.download`) may take.
DOWNLOAD_DEADLINE_SECONDS = 60.0
#: The statuses of a redirect a GET follows (a download's, once, to another host).
_REDIRECTS = (301, 302, 303, 307, 308)
#: The redirects a write follows: each repeats the request as it was (GitHub's advice).
_WRITE_REDIRECTS = (301, 302, 307, 308)
#: The most redirects one request follows on the API's host before it is refused.
MAX_REDIRECTS = 5

#: What a listing longer than its cap gives: an error, its first pages, or its last.
Beyond = Literal["refuse", "first", "last"]

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
    will_close: bool = False


class _Watchdog:
    """Cuts ``connection`` off once ``seconds`` pass, unless the request ended first;
    ``expired`` says whether it did (send, status line, headers and body alike)."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._finished = False
        self.expired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._finished = True

    def check(self) -> None:
        """``TimeoutError`` once expired (it may have fired before the socket existed)."""
        if self.expired:
            raise TimeoutError("the request's deadline passed")

    def _expire(self) -> None:
        with self._lock:
            if self._finished:
                return
            self.expired = True
            sock = self._connection.sock
        if sock is not None:  # the plain socket's shutdown: a blocked read, TLS or not, returns
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


_Origin = tuple[str, str, int]


@dataclass
class GitHubClient:
    """A REST client for one API root and one token; close it (or use ``with``) when done.

    ``timeout`` bounds each connect and socket read, ``deadline`` each whole request
    (seconds). ``before_post`` is called before every POST (the spacing of
    :class:`~the_loop.github.backoff.PostSpacer`). Raises :class:`GitHubHTTPError`
    for an API URL that is not plain http(s).
    """

    api_url: str
    token: str
    etags: EtagCache = field(default_factory=MemoryEtagCache)
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    deadline: float = DEFAULT_DEADLINE_SECONDS
    before_post: Callable[[], None] | None = None
    #: Added to the message of a refused token (401, or a 403 that is no rate limit).
    token_advice: str = ""
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
        max_pages: int = MAX_PAGES,
        beyond: Beyond = "refuse",
    ) -> Listing:
        """Every page of ``path``, following ``rel="next"`` until a page has none (each page
        a conditional GET, unless ``conditional`` is False: then every page is read in full).

        Past ``max_pages`` pages: an error (``refuse``), the first ``max_pages`` pages
        (``first``), or the last ones (``last``: the walk goes on by ``rel="next"`` and
        keeps the newest ``max_pages`` pages, in order); the listing is then ``truncated``.
        No other relation is needed (GitHub leaves ``last`` out when it cannot count the
        pages). A link back to a page already read, or a walk past
        :data:`MAX_WALKED_PAGES` pages, is an error.
        """
        pages: deque[GitHubResponse] = deque(maxlen=max_pages if beyond == "last" else None)
        url, seen = self.url_for(path, params), set[str]()
        first: GitHubResponse | None = None
        while url:
            if url in seen or len(seen) >= MAX_WALKED_PAGES:
                raise GitHubHTTPError(f"{_where(url)} keeps linking to more pages; stopped")
            if len(seen) >= max_pages and beyond == "first":
                return Listing(tuple(pages), truncated=True)
            if len(seen) >= max_pages and beyond == "refuse":
                raise GitHubHTTPError(f"{_where(url)} keeps linking to more pages; stopped")
            seen.add(url)
            page = self._page(url, first, keep_bodies=keep_bodies, conditional=conditional)
            first = first or page
            pages.append(page)
            url = page.next_url
        return Listing(tuple(pages), truncated=len(seen) > len(pages))

    def _page(
        self, url: str, first: GitHubResponse | None, *, keep_bodies: bool, conditional: bool
    ) -> GitHubResponse:
        """One page of a walk whose first page was ``first`` (None: this is the first)."""
        page = self.get_url(url, keep_body=keep_bodies, conditional=conditional)
        if page.not_modified and not page.next_url and _may_have_grown(page, first):
            # A full last page unchanged: a new entry may have started the page after
            # it, and the Link a 304 stands for is the old one. Asked again in full;
            # still the last page, and the same: it stays not modified.
            kept = self.etags.lookup(self._fingerprint, url)
            fresh = self.get_url(url, keep_body=keep_bodies, conditional=False)
            same = kept is not None and fresh.headers.get("etag", "") == kept.etag
            page = page if same and not fresh.next_url else fresh
        return page

    def get_url(
        self, url: str, *, keep_body: bool = False, conditional: bool = True
    ) -> GitHubResponse:
        """A conditional GET of an absolute URL on the API's own host (a plain one when
        ``conditional`` is False; its ETag is still kept for the next read). A redirect
        on that host is followed (see :meth:`_redirected`): the answer's ``url`` is where
        it led, its ``redirects`` the statuses on the way, its ETag kept under that URL."""
        redirects: list[int] = []
        while True:
            cached = self.etags.lookup(self._fingerprint, url) if conditional else None
            headers = self._headers()
            if cached is not None:
                headers["If-None-Match"] = cached.etag
            answer = self._exchange("GET", url, None, headers)
            if answer.status not in _REDIRECTS:
                break
            url = self._redirected(url, answer, redirects)
        moved = tuple(redirects)
        if answer.status == 304 and cached is not None:
            self.stats.not_modified += 1
            body = (cached.body or "").encode("utf-8")
            return GitHubResponse(
                304, url, answer.headers, body, cached.next_url, True, cached.entries, moved
            )
        if not 200 <= answer.status < 300:
            raise _refusal(url, answer, self.token_advice)
        next_url = self._linked(url, answer.headers, "next")
        etag, entries = answer.headers.get("etag", ""), _entries(answer.body)
        if etag:
            kept = answer.body.decode("utf-8", errors="replace") if keep_body else None
            self.etags.store(self._fingerprint, url, CachedPage(etag, next_url, kept, entries))
        status, headers, body = answer.status, answer.headers, answer.body
        return GitHubResponse(status, url, headers, body, next_url, False, entries, moved)

    def post_json(self, path: str, payload: object) -> GitHubResponse:
        """POST ``payload`` as JSON to ``path`` (never retried: it may have been done;
        a redirect, which says it was not, is followed as :meth:`_write` says)."""
        url, answer = self._write("POST", path, payload)
        if not 200 <= answer.status < 300:
            raise _refusal(url, answer, self.token_advice)
        return GitHubResponse(answer.status, url, answer.headers, answer.body)

    def patch_json(self, path: str, payload: object) -> GitHubResponse:
        """PATCH ``payload`` as JSON to ``path`` (never retried); refused as a POST is."""
        url, answer = self._write("PATCH", path, payload)
        if not 200 <= answer.status < 300:
            raise _refusal(url, answer, self.token_advice)
        return GitHubResponse(answer.status, url, answer.headers, answer.body)

    def delete(self, path: str) -> int:
        """DELETE ``path`` (never retried); GitHub's status: 2xx done, 404 nothing there
        (already deleted); any other answer is refused as a POST's is."""
        url, answer = self._write("DELETE", path, None)
        if not (200 <= answer.status < 300 or answer.status == 404):
            raise _refusal(url, answer, self.token_advice)
        return answer.status

    def _write(self, method: str, path: str, payload: object) -> tuple[str, _Answer]:
        """One write (JSON ``payload``, None for none) after its turn: the URL that
        answered and its answer. A redirect on the API's host repeats the request there
        as it was (a 301, 302, 307 or 308 says it was not done where it was sent)."""
        if self.before_post is not None:
            self.before_post()
        url, redirects = self.url_for(path), list[int]()
        headers = self._headers()
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        if data is not None:
            headers["Content-Type"] = "application/json"
        while True:
            answer = self._exchange(method, url, data, headers)
            if answer.status not in _WRITE_REDIRECTS:
                return url, answer
            url = self._redirected(url, answer, redirects)

    def _redirected(self, url: str, answer: _Answer, redirects: list[int]) -> str:
        """Where the redirect ``answer`` to ``url`` leads, its status added to
        ``redirects``; refused past :data:`MAX_REDIRECTS` hops, without a Location, or
        to another host (the token goes to the API's host only), with no status: no
        usable answer came."""
        redirects.append(answer.status)
        status = f"{answer.status} {one_line(answer.reason)}"
        if len(redirects) > MAX_REDIRECTS:
            raise GitHubHTTPError(
                f"{_where(url)} redirected more than {MAX_REDIRECTS} times; stopped"
            )
        location = answer.headers.get("location", "")
        target = urllib.parse.urljoin(url, location) if location else ""
        split = urllib.parse.urlsplit(target)
        if split.scheme not in ("http", "https") or not split.hostname or split.username:
            raise GitHubHTTPError(f"{_where(url)} answered {status} to no usable URL; stopped")
        if _origin_of(split) != self._origin:
            raise GitHubHTTPError(
                f"{_where(url)} answered {status} to another host ({_where(target)}); not "
                "followed: the token goes to the API's host only"
            )
        return target

    def download(self, path: str, *, deadline: float = DOWNLOAD_DEADLINE_SECONDS) -> bytes:
        """The body GET ``path`` leads to: GitHub answers some (a job's log) with a redirect
        to a short-lived URL on another host, followed once and without the token (the URL
        carries its own grant). Each of the two requests has ``deadline`` seconds; any
        other answer, a second redirect, or a target that is not plain http(s) raises
        :class:`GitHubHTTPError` (naming hosts only: a signed URL's query is a secret)."""
        url = self.url_for(path)
        answer = self._exchange("GET", url, None, self._headers(), deadline=deadline)
        if 200 <= answer.status < 300:
            return answer.body
        if answer.status not in _REDIRECTS:
            raise _refusal(url, answer, self.token_advice)
        target = urllib.parse.urljoin(url, answer.headers.get("location", ""))
        split = urllib.parse.urlsplit(target)
        if split.scheme not in ("http", "https") or not split.hostname or split.username:
            raise GitHubHTTPError(f"{_where(url)} redirected the download to no usable URL")
        plain = {k: v for k, v in self._headers().items() if k != "Authorization"}
        plain["Accept"] = "*/*"
        try:
            found = self._exchange("GET", target, None, plain, deadline=deadline)
        finally:
            if _origin_of(split) != self._origin:
                self._drop(_origin_of(split))  # a blob host: not kept alive
        if found.status in _REDIRECTS:
            raise GitHubHTTPError(f"{_where(target)} redirected the download again; stopped")
        if not 200 <= found.status < 300:
            raise _refusal(target, found)
        return found.body

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _linked(self, url: str, headers: Mapping[str, str], relation: str) -> str:
        """The ``Link`` URL for ``relation``; refused off the API's host (the token would
        follow) or when it is not a URL at all."""
        target = link_target(headers.get("link", ""), relation)
        try:
            origin = _origin_of(urllib.parse.urlsplit(target)) if target else self._origin
        except ValueError:
            origin = None
        if origin is None:
            raise GitHubHTTPError(f"{_where(url)} linked its {relation} page to no URL; stopped")
        if origin != self._origin:
            raise GitHubHTTPError(
                f"{_where(url)} linked its {relation} page to another host; stopped"
            )
        return target

    def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: dict[str, str],
        *,
        deadline: float | None = None,
    ) -> _Answer:
        """One request on the host's kept-alive connection, within one deadline (the
        client's unless given); a GET on a stale connection is resent once (inside the same
        deadline). Only a request without the token may go to another host."""
        split = urllib.parse.urlsplit(url)
        origin, target = _origin_of(split), split.path + (f"?{split.query}" if split.query else "")
        if origin != self._origin and "Authorization" in headers:
            raise GitHubHTTPError(f"refusing to send the token to {_where(url)}")
        allowed = self.deadline if deadline is None else deadline
        ends_at = time.monotonic() + allowed
        for attempt in (1, 2):
            connection, reused = self._connection(origin)
            self.stats.requests += 1
            watchdog = _Watchdog(connection, ends_at - time.monotonic())
            try:
                with watchdog:
                    answer = _ask(connection, method, target, body, headers, watchdog)
            except (OSError, http.client.HTTPException, ValueError) as error:
                # ValueError: http.client's word for some garbled answers (a chunk size).
                self._drop(origin)
                slow = watchdog.expired or isinstance(error, TimeoutError)
                if reused and method == "GET" and attempt == 1 and not slow:
                    continue  # the server closed the idle connection: ask once more, afresh
                passed = allowed if watchdog.expired else None
                raise self._no_answer(url, error, deadline_passed=passed) from error
            if watchdog.expired or answer.will_close or len(answer.body) > MAX_BODY_BYTES:
                self._drop(origin)
            if len(answer.body) > MAX_BODY_BYTES:
                raise GitHubHTTPError(f"{_where(url)} answered more than {MAX_BODY_BYTES} bytes")
            return answer
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _no_answer(
        self, url: str, error: BaseException, *, deadline_passed: float | None
    ) -> GitHubHTTPError:
        """The error of a request that got no usable answer: the deadline (the seconds
        it allowed, when it passed), the read timeout, or what went wrong, in one line."""
        if deadline_passed is not None:
            return GitHubHTTPError(
                f"{_where(url)} did not answer within the {deadline_passed:g}s deadline"
            )
        if isinstance(error, TimeoutError):
            return GitHubHTTPError(f"{_where(url)} did not answer within {self.timeout:g}s")
        return GitHubHTTPError(f"could not talk to {_where(url)}: {_reason(error)}")

    def _connection(self, origin: _Origin) -> tuple[http.client.HTTPConnection, bool]:
        connection = self._connections.get(origin)
        if connection is not None:
            return connection, True
        scheme, host, port = origin
        factory = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        # No read may outlast the deadline either (the watchdog cuts the rest off).
        connection = factory(host, port, timeout=min(self.timeout, self.deadline))
        self._connections[origin] = connection
        self.stats.connections_opened += 1
        return connection, False

    def _drop(self, origin: _Origin) -> None:
        connection = self._connections.pop(origin, None)
        if connection is not None:
            connection.close()


def _ask(
    connection: http.client.HTTPConnection,
    method: str,
    target: str,
    body: bytes | None,
    headers: dict[str, str],
    watchdog: _Watchdog,
) -> _Answer:
    """Send the request and read its answer (one byte past :data:`MAX_BODY_BYTES` at most);
    ``TimeoutError`` once the deadline cut it off, ``IncompleteRead`` for a body cut short."""
    connection.request(method, target, body=body, headers=headers)
    watchdog.check()
    response = connection.getresponse()
    data = response.read(MAX_BODY_BYTES + 1)
    watchdog.check()  # a read cut off returns what came, as a closed connection would
    if len(data) <= MAX_BODY_BYTES and response.length:  # a Content-Length not met
        raise http.client.IncompleteRead(data, response.length)
    headers_read = _header_map(response)
    return _Answer(response.status, response.reason, headers_read, data, response.will_close)


def _entries(body: bytes) -> int:
    """How many entries a listing's body holds (-1: it is not a JSON array)."""
    if not body.startswith(b"["):
        return -1
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return -1
    return len(cast(list[Any], parsed)) if isinstance(parsed, list) else -1


def _may_have_grown(page: GitHubResponse, first: GitHubResponse | None) -> bool:
    """Whether a last page answered 304 was full, so a new entry would be on a page it
    does not link to: as full as the walk's ``first`` page was (that one had a next), or,
    alone, as long as the ``per_page`` asked for (GitHub's default 30, at most 100)."""
    if page.entries <= 0:
        return False
    if first is not None:
        return page.entries >= first.entries > 0
    asked = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query).get("per_page", ["30"])
    size = int(asked[0]) if asked[0].isdigit() else 30
    return page.entries >= min(max(size, 1), 100)


def _reason(error: BaseException) -> str:
    """Why a talk failed, on one printable line: the error's kind and what it says."""
    kind, said = type(error).__name__, one_line(str(error))
    return f"{kind}: {said}" if said and kind not in said else said or kind


def _refusal(url: str, answer: _Answer, token_advice: str = "") -> GitHubHTTPError:
    detail = error_detail(answer.body)
    suffix = f": {detail}" if detail else ""
    retry_after = header_integer(answer.headers, "retry-after")
    error = GitHubHTTPError(
        f"{_where(url)} answered {answer.status} {one_line(answer.reason)}{suffix}",
        status=answer.status,
        retry_after=None if retry_after is None else float(retry_after),
        rate=RateLimit.from_headers(answer.headers),
        detail=detail,
    )
    if not (token_advice and error.token_refused):
        return error
    message = f"{error}: GitHub refused the token ({token_advice})"
    return GitHubHTTPError(
        message, status=error.status, retry_after=error.retry_after, rate=error.rate, detail=detail
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
