"""What GitHub answered: a response, a listing of pages, the rate limit, the one error.

Plain values with no I/O (and no ``http.client``), so the pacing policy and the
poller's tests can use them without loading the HTTP stack. An answer that is not the
shape GitHub documents (a page that is not a list of objects, an item that is not an
object, a number too long to be one) is a :class:`GitHubHTTPError` with no status,
never an exception of another type; every message is one printable line.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from the_loop.errors import TheLoopError

_DETAIL_LIMIT = 200
_RATE_LIMITED_STATUSES = (403, 429)
#: A header number longer than this is noise, not seconds or a count GitHub would send.
_HEADER_DIGITS = 15


@dataclass(frozen=True)
class RateLimit:
    """The ``x-ratelimit-*`` headers of one response; ``reset`` is in UTC epoch seconds."""

    limit: int
    remaining: int
    used: int
    reset: int
    resource: str

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimit | None:
        """The rate limit the headers state; None without a readable remaining and reset."""
        remaining, reset = (
            header_integer(headers, "x-ratelimit-remaining"),
            header_integer(headers, "x-ratelimit-reset"),
        )
        if remaining is None or reset is None:
            return None
        limit = header_integer(headers, "x-ratelimit-limit")
        used = header_integer(headers, "x-ratelimit-used")
        return cls(
            limit=remaining if limit is None else limit,
            remaining=remaining,
            used=0 if used is None else used,
            reset=reset,
            resource=headers.get("x-ratelimit-resource", ""),
        )


class GitHubHTTPError(TheLoopError):
    """A request GitHub refused or never answered; the message never holds the token.

    ``status`` is None when no usable answer came (unreachable, timed out, cut off, or
    an answer that is not the shape GitHub documents).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        rate: RateLimit | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.rate = rate
        self.detail = detail

    @property
    def rate_limited(self) -> bool:
        """A primary or secondary rate limit (403/429 with a wait or an exhausted budget)."""
        if self.status not in _RATE_LIMITED_STATUSES:
            return False
        exhausted = self.rate is not None and self.rate.remaining == 0
        said = "rate limit" in self.detail.lower()
        return self.status == 429 or self.retry_after is not None or exhausted or said

    @property
    def token_refused(self) -> bool:
        """GitHub refused the token itself: a 401, or a 403 that is not a rate limit."""
        return self.status == 401 or (self.status == 403 and not self.rate_limited)

    @property
    def retryable(self) -> bool:
        """Worth asking again later: rate limited, a 5xx, or no answer at all."""
        return self.rate_limited or self.status is None or self.status >= 500


@dataclass(frozen=True)
class GitHubResponse:
    """One answered request; a 304's ``body`` is the remembered one, or ``b""``."""

    status: int
    url: str
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    next_url: str = ""
    not_modified: bool = False
    #: How many entries the page lists (-1: not a listing, or a 304 of a page cached
    #: before the count was kept).
    entries: int = -1
    #: The status of each redirect followed to ``url``, in order (none: asked there).
    redirects: tuple[int, ...] = ()

    @property
    def moved(self) -> bool:
        """Reached through permanent redirects only (301, 308): what was asked is
        ``url`` now, for every later request too (GitHub's word for a renamed repository
        or a transferred issue)."""
        return bool(self.redirects) and all(s in (301, 308) for s in self.redirects)

    @property
    def rate(self) -> RateLimit | None:
        return RateLimit.from_headers(self.headers)

    @property
    def poll_interval(self) -> int | None:
        """``x-poll-interval``: the fewest seconds GitHub wants between polls."""
        return header_integer(self.headers, "x-poll-interval")

    @property
    def has_body(self) -> bool:
        return not self.not_modified or bool(self.body)

    def json(self) -> Any:
        """The parsed body; :class:`GitHubHTTPError` when it is not JSON."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, RecursionError) as error:
            raise self.malformed("with something that is not JSON") from error

    def object(self) -> dict[str, Any]:
        """The body as a JSON object; :class:`GitHubHTTPError` when it is anything else."""
        data = self.json()
        if not isinstance(data, dict):
            raise self.malformed(f"{_kind(data)} where an object belongs")
        return cast(dict[str, Any], data)

    def objects(self) -> list[dict[str, Any]]:
        """The body as a page of a listing: a JSON list of objects, else
        :class:`GitHubHTTPError` (a page holding anything else is not read in part)."""
        data = self.json()
        if not isinstance(data, list):
            raise self.malformed(f"a page that is not a list of objects ({_kind(data)})")
        entries = cast(list[Any], data)
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                what = f"entry {index + 1} is {_kind(entry)}"
                raise self.malformed(f"a page that is not a list of objects ({what})")
        return cast(list[dict[str, Any]], entries)

    def malformed(self, what: str) -> GitHubHTTPError:
        """The error of an answer that is not what GitHub sends: no status, worth asking again."""
        where = urllib.parse.urlsplit(self.url).netloc
        return GitHubHTTPError(f"{where} answered {what}")


@dataclass(frozen=True)
class Listing:
    """The pages of a paginated GET, in order: every page, or with ``truncated`` only
    the first or the last pages up to the cap the read was given."""

    pages: tuple[GitHubResponse, ...]
    truncated: bool = False

    @property
    def items(self) -> list[dict[str, Any]]:
        """The objects of every page whose body is known (fetched, or kept from before);
        :class:`GitHubHTTPError` when a page is not a list of objects."""
        items: list[dict[str, Any]] = []
        for page in self.pages:
            if page.has_body:
                items.extend(page.objects())
        return items

    @property
    def not_modified(self) -> bool:
        """True when every page answered 304."""
        return all(page.not_modified for page in self.pages)

    @property
    def complete(self) -> bool:
        """False when a 304 page's entries are unknown (its body was not kept)."""
        return all(page.has_body for page in self.pages)

    @property
    def rate(self) -> RateLimit | None:
        return self.pages[-1].rate if self.pages else None

    @property
    def poll_interval(self) -> int | None:
        intervals = [page.poll_interval for page in self.pages if page.poll_interval is not None]
        return max(intervals) if intervals else None


def next_link(header: str) -> str:
    """The ``rel="next"`` URL of a ``Link`` header; ``""`` when there is none."""
    return link_target(header, "next")


def link_target(header: str, relation: str) -> str:
    """The URL a ``Link`` header gives for ``relation`` (``next``, ``prev``, ``last``);
    ``""`` when there is none."""
    for part in header.split(","):
        target, _, params = part.partition(";")
        rels = {
            value.strip().strip('"')
            for name, _, value in (p.partition("=") for p in params.split(";"))
            if name.strip().lower() == "rel"
        }
        if relation in {rel for value in rels for rel in value.split()}:
            return target.strip().removeprefix("<").removesuffix(">")
    return ""


def error_detail(payload: bytes) -> str:
    """GitHub's ``message`` from an error body, else the body's start, on one line."""
    text = payload.decode("utf-8", errors="replace")
    try:
        data: object = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and isinstance(cast(dict[str, Any], data).get("message"), str):
        text = cast(str, cast(dict[str, Any], data)["message"])
    return one_line(text)


def one_line(text: str, limit: int = _DETAIL_LIMIT) -> str:
    """``text`` as one printable line of at most ``limit`` characters: what a server
    said is shown, never a control character or a line break it sent."""
    printable = "".join(char if char.isprintable() else " " for char in text)
    return " ".join(printable.split())[:limit]


def header_integer(headers: Mapping[str, str], name: str) -> int | None:
    """The header ``name`` as an integer; None when absent, not a number, or too long
    to be one GitHub sends (so a wait computed from it is always a float)."""
    text = headers.get(name, "").strip()
    if not text or len(text.lstrip("+-")) > _HEADER_DIGITS:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _kind(data: object) -> str:
    """What a JSON value is, in words (never the value, which may be long or hostile)."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, int | float):
        return "a number"
    if isinstance(data, str):
        return "a string"
    return "a list" if isinstance(data, list) else "an object"
