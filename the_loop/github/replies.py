"""What GitHub answered: a response, a listing of pages, the rate limit, the one error.

Plain values with no I/O (and no ``http.client``), so the pacing policy and the
poller's tests can use them without loading the HTTP stack.
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

    ``status`` is None when no answer came (unreachable, timed out, cut off).
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
            where = urllib.parse.urlsplit(self.url).netloc
            raise GitHubHTTPError(f"{where} answered with something that is not JSON") from error


@dataclass(frozen=True)
class Listing:
    """Every page of a paginated GET, in order."""

    pages: tuple[GitHubResponse, ...]

    @property
    def items(self) -> list[Any]:
        """The entries of every page whose body is known (fetched, or kept from before)."""
        items: list[Any] = []
        for page in self.pages:
            if page.has_body:
                data = page.json()
                items.extend(cast(list[Any], data) if isinstance(data, list) else [data])
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
    for part in header.split(","):
        target, _, params = part.partition(";")
        rels = {
            value.strip().strip('"')
            for name, _, value in (p.partition("=") for p in params.split(";"))
            if name.strip().lower() == "rel"
        }
        if "next" in {rel for value in rels for rel in value.split()}:
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
    return " ".join(text.split())[:_DETAIL_LIMIT]


def header_integer(headers: Mapping[str, str], name: str) -> int | None:
    """The header ``name`` as an integer; None when absent or not a number."""
    try:
        return int(headers[name].strip())
    except (KeyError, ValueError):
        return None
