"""A loopback stand-in for the GitHub REST API: a real HTTP/1.1 server on 127.0.0.1.

The test drives the in-memory state (repositories, issues, pull requests, comments,
rate budgets, injected failures) and reads the request log; the pull-request loop's
state (reviews and their inline comments, check runs, commit statuses, Actions jobs
and their logs, reactions) is driven here too and served by
:mod:`tests.fake_github_pulls`. What is served follows
GitHub's public REST documentation: weak ETags and 304 on ``If-None-Match`` (a 304
costs no rate budget), ``since`` = updated at or after, ``Link`` pagination with
``rel="next"``/``"prev"``/``"first"``, and ``"last"`` only while the pages can be
counted (:attr:`FakeGitHub.last_link_pages`), the ``x-ratelimit-*`` headers, 403/429
with ``retry-after``, and ``x-poll-interval`` when set.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeVar

BASE_TIME = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
#: The longest a stalled request waits when the test gives no duration (a harness bound).
MAX_STALL_SECONDS = 30.0


class _Identified(Protocol):
    @property
    def id(self) -> int: ...


_WithId = TypeVar("_WithId", bound=_Identified)


def iso(moment: datetime) -> str:
    """GitHub's timestamp shape: ``2026-12-01T09:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """An ISO 8601 timestamp (``Z`` or an offset) as an aware datetime; ValueError otherwise."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass
class FakeComment:
    id: int
    owner: str
    repo: str
    number: int
    login: str
    user_type: str
    body: str
    created_at: datetime
    updated_at: datetime

    def to_json(self, api_url: str, *, reactions: dict[str, int] | None = None) -> dict[str, Any]:
        """The comment as GitHub serves it; ``reactions``: its reaction counts, served as
        GitHub's ``reactions`` rollup (a reaction changes the body, so the ETag)."""
        issue = f"{self.owner}/{self.repo}/issues/{self.number}"
        url = f"{api_url}/repos/{self.owner}/{self.repo}/issues/comments/{self.id}"
        document: dict[str, Any] = {
            "id": self.id,
            "node_id": f"IC_{self.id}",
            "url": url,
            "html_url": f"https://github.com/{issue}#issuecomment-{self.id}",
            "issue_url": f"{api_url}/repos/{issue}",
            "user": {"login": self.login, "type": self.user_type},
            "body": self.body,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }
        if reactions is not None:
            document["reactions"] = {"url": f"{url}/reactions", **reactions}
        return document


@dataclass
class FakeIssue:
    owner: str
    repo: str
    number: int
    title: str
    body: str
    login: str
    labels: list[str]
    state: str = "open"
    pull_request: bool = False
    merged: bool = False
    created_at: datetime = BASE_TIME
    updated_at: datetime = BASE_TIME
    closed_by: str = ""  # the login that closed it last ("" while never closed)
    closed_at: datetime | None = None
    merged_at: datetime | None = None  # when merged (None: the last bump, for old callers)
    # A pull request's branches: its head (in ``head_repository``, "": this one) and base.
    head: str = ""
    head_sha: str = ""
    base: str = "main"
    head_repository: str = ""
    draft: bool = False

    def to_json(self, api_url: str, *, single: bool = False) -> dict[str, Any]:
        """The issue as GitHub lists it; ``single``: as its own GET returns it, with
        ``closed_by`` (which GitHub returns only there)."""
        kind = "pull" if self.pull_request else "issues"
        document: dict[str, Any] = {
            "id": 1000 + self.number,
            "number": self.number,
            "title": self.title,
            "body": self.body,
            "state": self.state,
            "user": {"login": self.login, "type": "User"},
            "labels": [{"name": name} for name in self.labels],
            "html_url": f"https://github.com/{self.owner}/{self.repo}/{kind}/{self.number}",
            "url": f"{api_url}/repos/{self.owner}/{self.repo}/issues/{self.number}",
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "closed_at": iso(self.closed_at) if self.closed_at is not None else None,
        }
        if single:
            closer = {"login": self.closed_by, "type": "User"} if self.closed_by else None
            document["closed_by"] = closer
        if self.pull_request:
            pulls = f"{api_url}/repos/{self.owner}/{self.repo}/pulls/{self.number}"
            html = document["html_url"]
            document["pull_request"] = {
                "url": pulls,
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": self._merged_at(),
            }
        return document

    def to_pull_json(self, api_url: str, *, single: bool = True) -> dict[str, Any]:
        """The pull request object: ``single`` as its own GET returns it (with
        ``merged``), else as ``GET /pulls`` lists it (GitHub's "simple" pull request)."""
        document = self.to_json(api_url)
        document.pop("pull_request")
        document["url"] = f"{api_url}/repos/{self.owner}/{self.repo}/pulls/{self.number}"
        if single:
            document["merged"] = self.merged
        document["merged_at"] = self._merged_at()
        document["draft"] = self.draft
        here = f"{self.owner}/{self.repo}"
        document["head"] = _branch(self.head, self.head_sha, self.head_repository or here)
        document["base"] = _branch(self.base, _sha_of(f"{here}@{self.base}"), here)
        return document

    def _merged_at(self) -> str | None:
        if not self.merged:
            return None
        return iso(self.merged_at if self.merged_at is not None else self.updated_at)


def _branch(ref: str, sha: str, repository: str) -> dict[str, Any]:
    """A pull request's ``head`` or ``base``, on ``ref`` of ``repository`` (owner/name)."""
    owner, _, name = repository.partition("/")
    repo = {"full_name": repository, "name": name, "owner": {"login": owner, "type": "User"}}
    user = {"login": owner, "type": "User"}
    return {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "repo": repo, "user": user}


def _sha_of(seed: str) -> str:
    """A made-up commit SHA (40 hex digits), the same for the same ``seed``."""
    return hashlib.sha1(seed.encode("utf-8")).hexdigest()


@dataclass
class FakeReviewComment:
    """An inline comment on a pull request's diff; ``line`` None: on the whole file."""

    id: int
    review_id: int
    owner: str
    repo: str
    number: int
    login: str
    user_type: str
    body: str
    path: str
    line: int | None
    start_line: int | None
    side: str
    diff_hunk: str
    commit_id: str  # the commit it sits on now (moves with pushes until it is outdated)
    original_commit_id: str  # the commit it was made on
    created_at: datetime
    updated_at: datetime
    in_reply_to_id: int | None = None  # the thread's first comment, for a reply
    outdated: bool = False  # GitHub no longer places it on the diff
    deleted: bool = False


@dataclass
class FakeReview:
    """A submitted review; ``comments``: the inline comments it was submitted with."""

    id: int
    owner: str
    repo: str
    number: int
    login: str
    user_type: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED or DISMISSED
    body: str
    commit_id: str
    submitted_at: datetime
    comments: list[FakeReviewComment] = field(default_factory=list[FakeReviewComment])


@dataclass
class FakeCheckRun:
    id: int
    owner: str
    repo: str
    head_sha: str
    name: str
    status: str  # queued, in_progress or completed
    conclusion: str | None  # None until completed
    html_url: str
    details_url: str
    app_slug: str
    started_at: datetime
    completed_at: datetime | None
    title: str = ""
    summary: str = ""


@dataclass
class FakeStatus:
    id: int
    owner: str
    repo: str
    sha: str
    context: str
    state: str  # error, failure, pending or success
    target_url: str
    description: str
    login: str
    created_at: datetime


@dataclass
class FakeJob:
    """A GitHub Actions job; ``log`` is what its log download serves."""

    id: int
    run_id: int
    owner: str
    repo: str
    name: str
    status: str
    conclusion: str | None
    steps: list[dict[str, Any]]
    log: str
    head_sha: str
    started_at: datetime
    completed_at: datetime | None
    workflow_name: str = "CI"


@dataclass(frozen=True)
class FakeReaction:
    id: int
    kind: str  # one of REACTION_KINDS
    subject_id: int  # the comment's id (an issue's: its number)
    login: str
    content: str
    created_at: datetime


#: What the fake takes reactions on: an issue comment, an inline review comment, an issue
#: or pull request itself. (A review itself takes none over REST, only over GraphQL.)
REACTION_KINDS = ("issue_comment", "review_comment", "issue")
#: GitHub's reaction contents.
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED")
#: Where a job's log download redirects to (GitHub's is a short-lived signed blob URL on
#: another host: no token is needed there, and none should be sent).
LOG_BLOB_PREFIX = "/_logs/"


@dataclass
class RateBudget:
    limit: int = 5000
    remaining: int = 5000
    reset: int = int((BASE_TIME + timedelta(hours=1)).timestamp())

    def headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-used": str(self.limit - self.remaining),
            "x-ratelimit-reset": str(self.reset),
            "x-ratelimit-resource": "core",
        }


@dataclass
class Failure:
    """What the next requests to one path answer instead of the real thing."""

    count: int
    status: int = 0  # 0: answer normally, after the stall
    retry_after: int | None = None
    stall_seconds: float = 0.0
    hang_up: bool = False  # close the connection without an answer
    body: bytes | None = None  # answer these bytes (with ``status``, or 200) instead
    raw: bytes | None = None  # write these bytes as the whole answer, then hang up
    trickle_seconds: float = 0.0  # send the body one byte per this many seconds
    trickle_head: bool = False  # trickle the status line and the headers too
    headers: dict[str, str] = field(default_factory=dict[str, str])  # added to the answer


JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"

#: The status logged for a request the fake hung up on.
NO_ANSWER = 0


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    status: int
    connection: int  # which accepted connection carried it (1, 2, ...)


@dataclass
class FakeGitHub:
    """The state a test drives; :func:`serve` puts it behind a real socket."""

    url: str = ""
    tokens: dict[str, str] = field(default_factory=dict[str, str])  # token -> login
    poll_interval: int | None = None
    now: datetime = BASE_TIME
    issues: dict[tuple[str, str, int], FakeIssue] = field(
        default_factory=dict[tuple[str, str, int], FakeIssue]
    )
    comments: list[FakeComment] = field(default_factory=list[FakeComment])
    requests: list[LoggedRequest] = field(default_factory=list[LoggedRequest])
    budgets: dict[str, RateBudget] = field(default_factory=dict[str, RateBudget])
    failures: dict[str, Failure] = field(default_factory=dict[str, Failure])
    #: Items no longer there, and what a GET of each answers (410 deleted, 404 out of reach).
    removed: dict[tuple[str, str, int], int] = field(
        default_factory=dict[tuple[str, str, int], int]
    )
    connections: int = 0
    #: The most entries a page holds (GitHub's is 100; fewer make a long history cheap).
    max_per_page: int = MAX_PER_PAGE
    #: A listing of more pages than this links no ``rel="last"`` (GitHub leaves it out
    #: when it cannot count the pages; 0: never linked).
    last_link_pages: int = 100
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.RLock = field(default_factory=threading.RLock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1001))
    #: Each login's role in a repository, keyed ``(owner, repo, login lower-cased)``; a
    #: login not set has ``default_role``; a role of None: GitHub knows no such user (404).
    roles: dict[tuple[str, str, str], str | None] = field(
        default_factory=dict[tuple[str, str, str], str | None]
    )
    default_role: str = "write"
    # The pull-request loop's state (see "the pull-request loop" below).
    reviews: list[FakeReview] = field(default_factory=list[FakeReview])
    review_comments: list[FakeReviewComment] = field(default_factory=list[FakeReviewComment])
    check_runs: list[FakeCheckRun] = field(default_factory=list[FakeCheckRun])
    statuses: list[FakeStatus] = field(default_factory=list[FakeStatus])
    jobs: dict[int, FakeJob] = field(default_factory=dict[int, FakeJob])
    reacted: list[FakeReaction] = field(default_factory=list[FakeReaction])
    #: The issue comments deleted through the API, in the order they were.
    deleted: list[FakeComment] = field(default_factory=list[FakeComment])
    #: Called with (repository, number, body) as a POSTed comment arrives, before it is
    #: numbered: a test's other writer getting in first.
    before_create: Callable[[str, int, str], None] | None = None
    #: Comment ids the listings leave out for now (a write not yet visible to readers).
    hidden: set[int] = field(default_factory=set[int])
    #: Tokens of a GitHub App's installation: GitHub refuses them ``GET /user``.
    app_tokens: set[str] = field(default_factory=set[str])
    #: Each repository's id, given when first asked, by its (owner, name) now.
    repository_ids: dict[tuple[str, str], int] = field(default_factory=dict[tuple[str, str], int])
    #: Renamed repositories: an old (owner, name) and the id of the repository it was.
    old_names: dict[tuple[str, str], int] = field(default_factory=dict[tuple[str, str], int])
    #: Transferred issues: where each was, and its repository's id and number now.
    transferred: dict[tuple[str, str, int], tuple[int, int]] = field(
        default_factory=dict[tuple[str, str, int], tuple[int, int]]
    )
    _shas: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # -- what the test drives -------------------------------------------------

    def advance(self, seconds: float) -> datetime:
        """Move the fake's clock on; the next writes are stamped with it."""
        with self.lock:
            self.now += timedelta(seconds=seconds)
            return self.now

    def add_issue(
        self,
        repository: str,
        number: int,
        *,
        title: str = "",
        body: str = "",
        login: str = "alice",
        labels: tuple[str, ...] = (),
        pull_request: bool = False,
    ) -> FakeIssue:
        owner, repo = repository.split("/")
        issue = FakeIssue(
            owner,
            repo,
            number,
            title or f"item {number}",
            body,
            login,
            list(labels),
            pull_request=pull_request,
            created_at=self.now,
            updated_at=self.now,
        )
        if pull_request:  # every pull request has a head branch and commit
            issue.head, issue.head_sha = f"branch-{number}", self.new_sha(repository)
        with self.lock:
            self.issues[(owner, repo, number)] = issue
        return issue

    def add_comment(
        self, repository: str, number: int, body: str, *, login: str = "alice", bot: bool = False
    ) -> FakeComment:
        owner, repo = repository.split("/")
        with self.lock:
            if (owner, repo, number) not in self.issues:
                raise KeyError(f"{repository}#{number} is not in the fake")
            comment = FakeComment(
                next(self._ids),
                owner,
                repo,
                number,
                login,
                "Bot" if bot else "User",
                body,
                self.now,
                self.now,
            )
            self.comments.append(comment)
            self.issues[(owner, repo, number)].updated_at = self.now  # as GitHub does
            return comment

    def edit_comment(self, comment_id: int, body: str) -> None:
        with self.lock:
            comment = next(c for c in self.comments if c.id == comment_id)
            comment.body, comment.updated_at = body, self.now

    def set_state(
        self, repository: str, number: int, state: str, *, merged: bool = False, by: str = ""
    ) -> None:
        """Close (as ``by``) or reopen an item; ``merged`` marks a pull request merged (and
        closed). Either bumps its ``updated_at``, as on GitHub."""
        owner, repo = repository.split("/")
        with self.lock:
            issue = self.issues[(owner, repo, number)]
            issue.state, issue.merged, issue.updated_at = state, merged, self.now
            issue.merged_at = self.now if merged else None
            if state == "closed":
                issue.closed_by, issue.closed_at = by, self.now
            else:
                issue.closed_at = None

    def set_labels(self, repository: str, number: int, labels: tuple[str, ...]) -> None:
        """Replace an item's labels; its ``updated_at`` is bumped, as on GitHub."""
        owner, repo = repository.split("/")
        with self.lock:
            issue = self.issues[(owner, repo, number)]
            issue.labels, issue.updated_at = list(labels), self.now

    def remove_issue(self, repository: str, number: int, *, status: int = 410) -> None:
        """Delete an item (410, as GitHub answers for a deleted issue) or transfer it out
        of the token's reach (404): it and its comments leave every listing, and a GET
        of it or its thread answers ``status``."""
        owner, repo = repository.split("/")
        with self.lock:
            del self.issues[(owner, repo, number)]
            self.comments = [
                c for c in self.comments if (c.owner, c.repo, c.number) != (owner, repo, number)
            ]
            self.removed[(owner, repo, number)] = status

    def rename_repository(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new`` (another owner too: a repository moved), its items and
        comments with it. A request naming ``old`` then answers as GitHub does: 301 (307
        for a write) to the same path under ``/repositories/{id}``, which serves ``new``."""
        (owner, repo), (to_owner, to_repo) = old.split("/"), new.split("/")
        with self.lock:
            number = self.repository_id(owner, repo)
            self.repository_ids[(to_owner, to_repo)] = self.repository_ids.pop((owner, repo))
            self.old_names[(owner, repo)] = number
            self.old_names.pop((to_owner, to_repo), None)  # a name given back is its own
            for (o, r, n), issue in list(self.issues.items()):
                if (o, r) == (owner, repo):
                    del self.issues[(o, r, n)]
                    issue.owner, issue.repo = to_owner, to_repo
                    self.issues[(to_owner, to_repo, n)] = issue
            for comment in self.comments:
                if (comment.owner, comment.repo) == (owner, repo):
                    comment.owner, comment.repo = to_owner, to_repo

    def transfer_issue(self, repository: str, number: int, to: str) -> FakeIssue:
        """Move an issue to repository ``to``, under its next free number, its comments
        with it. A request for it (or under it) at its old place answers 301 to its new
        place under ``/repositories/{id}``, as GitHub's does."""
        (owner, repo), (to_owner, to_repo) = repository.split("/"), to.split("/")
        with self.lock:
            issue = self.issues.pop((owner, repo, number))
            taken = [n for (o, r, n) in self.issues if (o, r) == (to_owner, to_repo)]
            issue.owner, issue.repo = to_owner, to_repo
            issue.number, issue.updated_at = max(taken, default=0) + 1, self.now
            self.issues[(to_owner, to_repo, issue.number)] = issue
            for comment in self.comments:
                if (comment.owner, comment.repo, comment.number) == (owner, repo, number):
                    comment.owner, comment.repo, comment.number = to_owner, to_repo, issue.number
            self.transferred[(owner, repo, number)] = (
                self.repository_id(to_owner, to_repo),
                issue.number,
            )
            return issue

    def repository_id(self, owner: str, repo: str) -> int:
        """The id of the repository named ``owner/repo`` now (given when first asked)."""
        with self.lock:
            return self.repository_ids.setdefault((owner, repo), 100 + len(self.repository_ids))

    def moved_answer(self, method: str, path: str, query: dict[str, str]) -> Answer | None:
        """GitHub's redirect for a path naming a renamed repository or a transferred
        issue: 301 for a GET, 307 for a write, to the path under ``/repositories/{id}``
        (the query kept); None for any other path."""
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "repos":
            return None
        owner, repo, rest = parts[1], parts[2], parts[3:]
        number = int(rest[1]) if len(rest) >= 2 and rest[0] == "issues" and rest[1].isdigit() else 0
        if (owner, repo, number) in self.transferred:
            moved_to, new_number = self.transferred[(owner, repo, number)]
            rest = ["issues", str(new_number), *rest[2:]]
        elif (owner, repo) in self.old_names:
            moved_to = self.old_names[(owner, repo)]
        else:
            return None
        location = f"{self.url}/repositories/{moved_to}" + "".join(f"/{p}" for p in rest)
        if query:
            location += f"?{urllib.parse.urlencode(query)}"
        status, message = (
            (301, "Moved Permanently") if method == "GET" else (307, "Temporary Redirect")
        )
        documentation = "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api"
        payload = {"message": message, "url": location, "documentation_url": documentation}
        return Answer(status, payload, {"location": location})

    def by_id(self, path: str) -> str:
        """``/repositories/{id}/...`` as the path of the repository's name now; any other
        path as it is."""
        parts = path.strip("/").split("/")
        if len(parts) < 2 or parts[0] != "repositories" or not parts[1].isdigit():
            return path
        named = [key for key, number in self.repository_ids.items() if number == int(parts[1])]
        if not named:
            return path
        owner, repo = named[0]
        return f"/repos/{owner}/{repo}" + "".join(f"/{p}" for p in parts[2:])

    def set_budget(self, token: str, *, remaining: int, limit: int = 5000, reset: int = 0) -> None:
        """The rate budget of ``token`` (``""``: unauthenticated requests)."""
        with self.lock:
            self.budgets[token] = RateBudget(limit, remaining, reset or RateBudget().reset)

    def fail_next(
        self,
        path: str,
        *,
        count: int = 1,
        status: int = 0,
        retry_after: int | None = None,
        stall_seconds: float = 0.0,
        hang_up: bool = False,
        body: bytes | None = None,
        raw: bytes | None = None,
        trickle_seconds: float = 0.0,
        trickle_head: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        """The next ``count`` requests to ``path`` stall, then answer ``status`` (0: normally).

        A stall of ``float("inf")`` waits until :attr:`released` is set or the fake
        stops (at most ``MAX_STALL_SECONDS``); ``hang_up`` closes the connection
        instead of answering. ``body`` answers those bytes (``status`` or 200) and
        ``raw`` writes its bytes as the whole answer (status line and headers
        included), as a broken proxy might; ``trickle_seconds`` sends the body (and
        with ``trickle_head`` the status line and headers) one byte at a time, until
        :attr:`released` is set or ``MAX_STALL_SECONDS`` pass. A ``path`` ending in
        ``/`` stands for every path under it (see :meth:`fail_repository`).
        """
        failure = Failure(
            count,
            status,
            retry_after,
            stall_seconds,
            hang_up,
            body,
            raw,
            trickle_seconds,
            trickle_head,
            dict(headers or {}),
        )
        with self.lock:
            self.failures[path] = failure

    def fail_repository(self, repository: str, *, count: int = 1, **how: Any) -> None:
        """The next ``count`` requests to any path of ``repository`` fail as :meth:`fail_next`
        says (a path's own failure is taken first)."""
        self.fail_next(f"/repos/{repository}/", count=count, **how)

    def add_history(
        self, repository: str, number: int, count: int, *, login: str = "alice"
    ) -> list[FakeComment]:
        """``count`` old comments on ``number``, a second apart, the last one at :attr:`now`."""
        self.advance(-count)
        added: list[FakeComment] = []
        for index in range(count):
            self.advance(1)
            added.append(self.add_comment(repository, number, f"history {index}", login=login))
        return added

    def set_role(self, repository: str, login: str, role: str | None) -> None:
        """``login``'s role in ``repository``: admin, maintain, write, triage, read or none
        (None: no such user, a 404). Never bumps anything: GitHub lists no change."""
        owner, repo = repository.split("/")
        with self.lock:
            self.roles[(owner, repo, login.lower())] = role

    # -- the pull-request loop ---------------------------------------------------

    def new_sha(self, repository: str = "") -> str:
        """A commit SHA never handed out before (40 hex digits)."""
        with self.lock:
            return _sha_of(f"{repository}:{next(self._shas)}")

    def add_pull(
        self,
        repository: str,
        number: int,
        *,
        title: str = "",
        body: str = "",
        head: str = "",
        head_sha: str | None = None,
        base: str = "main",
        login: str = "alice",
        labels: tuple[str, ...] = (),
        draft: bool = False,
        head_repository: str = "",
    ) -> FakeIssue:
        """A pull request from ``head`` (default ``loop/item-<number>``; of
        ``head_repository``, a fork, when given) into ``base``, at ``head_sha`` (default
        a new SHA). It is an issue too: ``/issues`` lists it with a ``pull_request`` key."""
        issue = self.add_issue(
            repository,
            number,
            title=title,
            body=body,
            login=login,
            labels=labels,
            pull_request=True,
        )
        with self.lock:
            issue.head = head or f"loop/item-{number}"
            issue.head_sha = head_sha or issue.head_sha
            issue.base, issue.draft, issue.head_repository = base, draft, head_repository
        return issue

    def push(self, repository: str, number: int, sha: str | None = None) -> str:
        """Move a pull request's head to ``sha`` (default a new one) and bump it; its
        inline comments still on the diff move along (``commit_id``)."""
        with self.lock:
            pull = self.pull(repository, number)
            pull.head_sha, pull.updated_at = sha or self.new_sha(repository), self.now
            for comment in self._comments_on(pull):
                if not comment.outdated:
                    comment.commit_id = pull.head_sha
            return pull.head_sha

    def add_review(
        self,
        repository: str,
        number: int,
        *,
        login: str,
        state: str = "COMMENTED",
        body: str = "",
        comments: Sequence[Mapping[str, Any]] = (),
        commit_id: str | None = None,
        bot: bool = False,
    ) -> FakeReview:
        """Submit a review (and bump the pull request). Each of ``comments`` is a dict of
        ``path``, ``line`` (None: on the file), ``body`` and optionally ``start_line``,
        ``diff_hunk`` and ``side``. As on GitHub, an author cannot approve or request
        changes on their own pull request (ValueError)."""
        if state not in REVIEW_STATES:
            raise ValueError(f"a review's state is one of {REVIEW_STATES}, not {state!r}")
        with self.lock:
            pull = self.pull(repository, number)
            if state != "COMMENTED" and login.lower() == pull.login.lower():
                raise ValueError(f"{login} cannot {state} their own pull request")
            review = self._new_review(pull, login, state, body, commit_id, bot)
            for spec in comments:
                review.comments.append(self._new_review_comment(review, spec))
            return review

    def add_review_comment(
        self,
        repository: str,
        number: int,
        *,
        login: str,
        body: str,
        path: str = "",
        line: int | None = None,
        diff_hunk: str = "",
        in_reply_to: int | None = None,
        start_line: int | None = None,
        side: str = "RIGHT",
        bot: bool = False,
    ) -> FakeReviewComment:
        """One inline comment outside a review: GitHub makes it a review of one (state
        COMMENTED, empty body). ``in_reply_to``: a reply in that comment's thread, which
        takes the thread's place (path, lines, hunk) and names the thread's first comment."""
        if in_reply_to is None and not path:
            raise ValueError("an inline comment outside a thread needs its path")
        with self.lock:
            pull = self.pull(repository, number)
            spec: dict[str, Any] = {"path": path, "line": line, "body": body}
            spec |= {"diff_hunk": diff_hunk, "start_line": start_line, "side": side}
            if in_reply_to is not None:
                spec = self._reply_spec(self.review_comment(in_reply_to), body)
            review = self._new_review(pull, login, "COMMENTED", "", None, bot)
            comment = self._new_review_comment(review, spec)
            review.comments.append(comment)
            return comment

    def edit_review_comment(self, comment_id: int, body: str) -> None:
        """Edit an inline comment: its ``updated_at`` moves (the pull request's does not)."""
        with self.lock:
            comment = self.review_comment(comment_id)
            comment.body, comment.updated_at = body, self.now

    def delete_review_comment(self, comment_id: int) -> None:
        """Delete an inline comment: it leaves every listing (a GET of it is a 404)."""
        with self.lock:
            self.review_comment(comment_id).deleted = True

    def outdate(self, comment_id: int) -> None:
        """GitHub no longer places ``comment_id``'s thread on the diff: ``line``,
        ``start_line`` and ``position`` turn null, the ``original_*`` stay. Nothing is
        bumped (an outdated comment does not come back in a ``since`` listing)."""
        with self.lock:
            comment = self.review_comment(comment_id)
            root = comment.in_reply_to_id or comment.id
            for other in self.review_comments:
                if root in (other.id, other.in_reply_to_id):
                    other.outdated = True

    def dismiss_review(self, review_id: int) -> None:
        """Dismiss a review: its state becomes DISMISSED; the pull request is bumped."""
        with self.lock:
            review = _one(self.reviews, review_id, "review")
            review.state = "DISMISSED"
            self.pull(f"{review.owner}/{review.repo}", review.number).updated_at = self.now

    def add_check_run(
        self,
        repository: str,
        sha: str,
        *,
        name: str,
        status: str = "completed",
        conclusion: str | None = "success",
        html_url: str | None = None,
        job_id: int | None = None,
        app_slug: str = "github-actions",
        title: str = "",
        summary: str = "",
    ) -> FakeCheckRun:
        """A check run on commit ``sha`` (a re-run: another one of the same ``name``).
        ``job_id``: GitHub Actions ran it as that job (see :meth:`add_job`), so, as on
        GitHub, the check run's id is the job's id and its link the job's page. A check
        run does not bump any pull request."""
        owner, repo = repository.split("/")
        with self.lock:
            check_id = job_id if job_id is not None else next(self._ids)
            if any(run.id == check_id for run in self.check_runs):
                raise ValueError(f"check run {check_id} exists: a re-run is a new job")
            page = self._check_page(owner, repo, check_id, job_id, sha)
            done = status == "completed"
            run = FakeCheckRun(
                id=check_id,
                owner=owner,
                repo=repo,
                head_sha=sha,
                name=name,
                status=status,
                conclusion=conclusion if done else None,
                html_url=html_url or page,
                details_url=page,
                app_slug=app_slug,
                started_at=self.now,
                completed_at=self.now if done else None,
                title=title,
                summary=summary,
            )
            self.check_runs.append(run)
            return run

    def complete_check_run(self, check_run_id: int, conclusion: str) -> None:
        """A queued or running check run completes with ``conclusion`` (its job too)."""
        with self.lock:
            run = _one(self.check_runs, check_run_id, "check run")
            run.status, run.conclusion, run.completed_at = "completed", conclusion, self.now
            job = self.jobs.get(check_run_id)
            if job is not None:
                job.status, job.conclusion, job.completed_at = "completed", conclusion, self.now

    def add_status(
        self,
        repository: str,
        sha: str,
        *,
        context: str,
        state: str,
        target_url: str = "",
        description: str = "",
        login: str = "ci-bot",
    ) -> FakeStatus:
        """A commit status on ``sha``; the latest one of a ``context`` is the one that counts."""
        if state not in ("error", "failure", "pending", "success"):
            raise ValueError(f"a commit status is error, failure, pending or success: {state!r}")
        owner, repo = repository.split("/")
        with self.lock:
            status = FakeStatus(
                id=next(self._ids),
                owner=owner,
                repo=repo,
                sha=sha,
                context=context,
                state=state,
                target_url=target_url,
                description=description,
                login=login,
                created_at=self.now,
            )
            self.statuses.append(status)
            return status

    def add_job(
        self,
        repository: str,
        *,
        name: str,
        steps: Sequence[Mapping[str, Any]] = (),
        log: str = "",
        run_id: int | None = None,
        head_sha: str = "",
        status: str = "completed",
        conclusion: str | None = "failure",
        workflow_name: str = "CI",
    ) -> FakeJob:
        """A GitHub Actions job (of workflow run ``run_id``, default a new one); each of
        ``steps`` is a dict of ``name``, ``conclusion`` and optionally ``status``
        (completed) and ``number`` (its place). Pass its ``id`` as
        :meth:`add_check_run`'s ``job_id``."""
        owner, repo = repository.split("/")
        with self.lock:
            done = status == "completed"
            job = FakeJob(
                id=next(self._ids),
                run_id=run_id if run_id is not None else next(self._ids),
                owner=owner,
                repo=repo,
                name=name,
                status=status,
                conclusion=conclusion if done else None,
                steps=[_step(index, spec, self.now) for index, spec in enumerate(steps, 1)],
                log=log,
                head_sha=head_sha,
                started_at=self.now,
                completed_at=self.now if done else None,
                workflow_name=workflow_name,
            )
            self.jobs[job.id] = job
            return job

    def reactions(self, kind: str, subject_id: int) -> list[tuple[str, str]]:
        """(login, content) of each reaction on a subject (see REACTION_KINDS), oldest first."""
        with self.lock:
            return [
                (r.login, r.content)
                for r in self.reacted
                if (r.kind, r.subject_id) == (kind, subject_id)
            ]

    def react(
        self, kind: str, subject_id: int, login: str, content: str
    ) -> tuple[FakeReaction, bool]:
        """``login`` reacts; True when new. The same login's same content on the same
        subject is the reaction it already made (GitHub's answer: 200, not 201)."""
        if kind not in REACTION_KINDS or content not in REACTION_CONTENTS:
            raise ValueError(f"no reaction {content!r} on a {kind}")
        with self.lock:
            wanted = (kind, subject_id, login, content)
            for made in self.reacted:
                if (made.kind, made.subject_id, made.login, made.content) == wanted:
                    return made, False
            reaction = FakeReaction(next(self._ids), kind, subject_id, login, content, self.now)
            self.reacted.append(reaction)
            return reaction, True

    def reaction_counts(self, kind: str, subject_id: int) -> dict[str, int]:
        """GitHub's reaction rollup of a subject, without its ``url``."""
        contents = [content for _, content in self.reactions(kind, subject_id)]
        counts = {content: contents.count(content) for content in REACTION_CONTENTS}
        return {"total_count": len(contents), **counts}

    def pull(self, repository: str, number: int) -> FakeIssue:
        """The pull request ``repository#number``; KeyError if it is none."""
        owner, repo = repository.split("/")
        with self.lock:
            issue = self.issues.get((owner, repo, number))
            if issue is None or not issue.pull_request:
                raise KeyError(f"{repository}#{number} is not a pull request in the fake")
            return issue

    def review_comment(self, comment_id: int) -> FakeReviewComment:
        """The inline comment ``comment_id`` (deleted or not); KeyError if none."""
        with self.lock:
            return _one(self.review_comments, comment_id, "inline comment")

    def _comments_on(self, pull: FakeIssue) -> list[FakeReviewComment]:
        where = (pull.owner, pull.repo, pull.number)
        return [c for c in self.review_comments if (c.owner, c.repo, c.number) == where]

    def _new_review(
        self, pull: FakeIssue, login: str, state: str, body: str, commit_id: str | None, bot: bool
    ) -> FakeReview:
        review = FakeReview(
            id=next(self._ids),
            owner=pull.owner,
            repo=pull.repo,
            number=pull.number,
            login=login,
            user_type="Bot" if bot else "User",
            state=state,
            body=body,
            commit_id=commit_id or pull.head_sha,
            submitted_at=self.now,
        )
        self.reviews.append(review)
        pull.updated_at = self.now  # as GitHub does
        return review

    def _new_review_comment(self, review: FakeReview, spec: Mapping[str, Any]) -> FakeReviewComment:
        comment = FakeReviewComment(
            id=next(self._ids),
            review_id=review.id,
            owner=review.owner,
            repo=review.repo,
            number=review.number,
            login=review.login,
            user_type=review.user_type,
            body=spec["body"],
            path=spec["path"],
            line=spec.get("line"),
            start_line=spec.get("start_line"),
            side=spec.get("side", "RIGHT"),
            diff_hunk=spec.get("diff_hunk", ""),
            commit_id=spec.get("commit_id", review.commit_id),
            original_commit_id=spec.get("original_commit_id", review.commit_id),
            created_at=self.now,
            updated_at=self.now,
            in_reply_to_id=spec.get("in_reply_to_id"),
            outdated=spec.get("outdated", False),
        )
        self.review_comments.append(comment)
        return comment

    @staticmethod
    def _reply_spec(parent: FakeReviewComment, body: str) -> dict[str, Any]:
        """A reply sits where its thread does; ``in_reply_to_id`` names the first comment."""
        return {
            "body": body,
            "path": parent.path,
            "line": parent.line,
            "start_line": parent.start_line,
            "side": parent.side,
            "diff_hunk": parent.diff_hunk,
            "commit_id": parent.commit_id,
            "original_commit_id": parent.original_commit_id,
            "in_reply_to_id": parent.in_reply_to_id or parent.id,
            "outdated": parent.outdated,
        }

    def _check_page(
        self, owner: str, repo: str, check_id: int, job_id: int | None, sha: str
    ) -> str:
        """A check run's page: an Actions job's page when it ran as a job."""
        job = self.jobs.get(job_id) if job_id is not None else None
        if job is None:
            return f"https://github.com/{owner}/{repo}/runs/{check_id}"
        job.head_sha = job.head_sha or sha
        return job_page(job)

    def logged(self, method: str = "", path: str = "") -> list[LoggedRequest]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (not method or r.method == method) and (not path or r.path == path)
            ]

    # -- what the handler asks ------------------------------------------------

    def budget(self, token: str) -> RateBudget:
        with self.lock:
            return self.budgets.setdefault(token, RateBudget())

    def take_failure(self, path: str) -> Failure | None:
        with self.lock:
            key = path if path in self.failures else self._failing_prefix(path)
            failure = self.failures.get(key) if key else None
            if failure is None:
                return None
            failure.count -= 1
            if failure.count <= 0:
                del self.failures[key]
            return failure

    def _failing_prefix(self, path: str) -> str:
        prefixes = [key for key in self.failures if key.endswith("/") and path.startswith(key)]
        return max(prefixes, key=len, default="")

    def open_connection(self) -> int:
        with self.lock:
            self.connections += 1
            return self.connections


def _one(items: Sequence[_WithId], wanted: int, what: str) -> _WithId:
    """The item of ``items`` whose ``id`` is ``wanted``; KeyError if none."""
    for item in items:
        if item.id == wanted:
            return item
    raise KeyError(f"no {what} {wanted} in the fake")


def job_page(job: FakeJob) -> str:
    """An Actions job's page (its check run's ``html_url`` and ``details_url``)."""
    return f"https://github.com/{job.owner}/{job.repo}/actions/runs/{job.run_id}/job/{job.id}"


def _step(number: int, spec: Mapping[str, Any], moment: datetime) -> dict[str, Any]:
    """A job's step as GitHub lists it."""
    status = spec.get("status", "completed")
    return {
        "name": spec["name"],
        "status": status,
        "conclusion": spec.get("conclusion", "success") if status == "completed" else None,
        "number": spec.get("number", number),
        "started_at": iso(moment),
        "completed_at": iso(moment) if status == "completed" else None,
    }


def weak_etag(body: bytes) -> str:
    return 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def etag_matches(header: str, etag: str) -> bool:
    """The weak comparison of RFC 9110: ``W/`` ignored, ``*`` matches, a list is allowed."""
    wanted = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in wanted or etag.removeprefix("W/") in wanted


@dataclass(frozen=True)
class Answer:
    status: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict[str, str])


#: ``/repos/{owner}/{repo}/collaborators/{login}/permission``.
_PERMISSION_PATH = re.compile(r"/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission")


def not_found() -> Answer:
    return Answer(404, {"message": "Not Found"})


def removed_answer(status: int) -> Answer:
    """What GitHub answers for an item deleted (410) or moved out of reach (404)."""
    return Answer(status, {"message": "This issue was deleted" if status == 410 else "Not Found"})


class Routes:
    """The endpoints: each turns (fake, owner, repo, number, query, body) into an Answer."""

    def __init__(self, fake: FakeGitHub, login: str) -> None:
        self.fake = fake
        self.login = login

    def answer(self, method: str, path: str, query: dict[str, str], body: bytes) -> Answer:
        """The endpoint's answer; a malformed ``since``, ``page`` or ``per_page`` is a 422."""
        asked = _PERMISSION_PATH.fullmatch(path) if method == "GET" else None
        if asked is not None:
            return self.permission(*asked.groups())
        if method == "GET" and path == "/user":
            return Answer(200, {"login": self.login, "id": 1, "type": "User"})
        if method == "GET" and re.fullmatch(r"/repos/[^/]+/[^/]+", path):
            return self.repository(*path.strip("/").split("/")[1:])
        if method == "DELETE":
            return self.delete_comment(path)
        if method == "PATCH":
            return self.patch_comment(path, body)
        try:
            return self.route(method, path, query, body)
        except ValueError as error:
            return Answer(422, {"message": f"Validation Failed: {error}"})

    def route(self, method: str, path: str, query: dict[str, str], body: bytes) -> Answer:
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[0] != "repos":
            return not_found()
        owner, repo, rest = parts[1], parts[2], parts[3:]
        if method == "POST":
            if rest[0] == "issues" and len(rest) == 3 and rest[2] == "comments":
                return self.create_comment(owner, repo, rest[1], body)
            return not_found()
        if rest == ["issues"]:
            return self.list_issues(owner, repo, query, path)
        if rest == ["issues", "comments"]:
            return self.list_comments(owner, repo, None, query, path)
        if rest[0] == "issues" and len(rest) == 2:
            return self.issue(owner, repo, rest[1], pull=False)
        if rest[0] == "issues" and len(rest) == 3 and rest[2] == "comments":
            if self.find(owner, repo, rest[1]) is None:
                removed = self.fake.removed.get((owner, repo, int(rest[1])))
                return not_found() if removed is None else removed_answer(removed)
            return self.list_comments(owner, repo, int(rest[1]), query, path)
        if rest[0] == "pulls" and len(rest) == 2:
            return self.issue(owner, repo, rest[1], pull=True)
        return not_found()

    def own_comment(self, path: str) -> FakeComment | Answer:
        """The comment ``/repos/{o}/{r}/issues/comments/{id}`` names when the token's login
        wrote it; else GitHub's answer: 404 for none, 403 for anyone else's."""
        parts = path.strip("/").split("/")
        if len(parts) != 6 or parts[0] != "repos" or parts[3:5] != ["issues", "comments"]:
            return not_found()
        owner, repo, number = parts[1], parts[2], parts[5]
        found = [
            c
            for c in self.fake.comments
            if number.isdigit() and c.id == int(number) and (c.owner, c.repo) == (owner, repo)
        ]
        if not found:
            return not_found()
        if found[0].login.casefold() != self.login.casefold():
            return Answer(403, {"message": "Must have admin rights to Repository."})
        return found[0]

    def patch_comment(self, path: str, body: bytes) -> Answer:
        """``PATCH /repos/{o}/{r}/issues/comments/{id}`` with ``{"body": ...}``: 200 and the
        comment for the author's own, 403 for anyone else's, 404 for none, 422 without a
        body (as GitHub's description of "Update an issue comment" says)."""
        with self.fake.lock:
            found = self.own_comment(path)
        if isinstance(found, Answer):
            return found
        try:
            text = json.loads(body or b"{}").get("body")
        except (ValueError, AttributeError):
            text = None
        if not isinstance(text, str):
            return Answer(422, {"message": "Validation Failed: body is required"})
        self.fake.edit_comment(found.id, text)
        return Answer(200, self.comment_json(found))

    def delete_comment(self, path: str) -> Answer:
        """``DELETE /repos/{o}/{r}/issues/comments/{id}``: 204 for the author's own, 403
        for anyone else's, 404 for none (already deleted)."""
        found = self.own_comment(path)
        if isinstance(found, Answer):
            return found
        self.fake.comments.remove(found)
        self.fake.deleted.append(found)
        return Answer(204, b"")

    def permission(self, owner: str, repo: str, login: str) -> Answer:
        """``GET /repos/{o}/{r}/collaborators/{login}/permission``: ``permission`` is the
        legacy base role (maintain reads as write, triage as read), ``role_name`` the role."""
        key = (owner, repo, login.lower())
        role = self.fake.roles.get(key, self.fake.default_role)
        if role is None:
            return Answer(404, {"message": f"{login} is not a user"})
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        user = {"login": login, "type": "User", "permissions": {}}
        return Answer(200, {"permission": legacy, "role_name": role, "user": user})

    def repository(self, owner: str, repo: str) -> Answer:
        """``GET /repos/{o}/{r}``: the repository (one the fake holds an item of)."""
        if not any((o, r) == (owner, repo) for (o, r, _) in self.fake.issues):
            return not_found()
        number = self.fake.repository_id(owner, repo)
        owned = {"login": owner, "type": "User"}
        full = {"id": number, "name": repo, "full_name": f"{owner}/{repo}", "owner": owned}
        return Answer(200, {**full, "private": False})

    def find(self, owner: str, repo: str, number: str) -> FakeIssue | None:
        if not number.isdigit():
            return None
        return self.fake.issues.get((owner, repo, int(number)))

    def issue(self, owner: str, repo: str, number: str, *, pull: bool) -> Answer:
        removed = self.fake.removed.get((owner, repo, int(number))) if number.isdigit() else None
        if removed is not None:
            return removed_answer(removed)
        issue = self.find(owner, repo, number)
        if issue is None or (pull and not issue.pull_request):
            return not_found()
        api = self.fake.url
        return Answer(200, issue.to_pull_json(api) if pull else issue.to_json(api, single=True))

    def list_issues(self, owner: str, repo: str, query: dict[str, str], path: str) -> Answer:
        """Issues and PRs of ``state`` (open, closed, all), carrying every label of
        ``labels``, updated at or after ``since``; ``sort`` created or updated."""
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise ValueError(f"state must be open, closed or all, not {state!r}")
        wanted = {label for label in query.get("labels", "").split(",") if label}
        since = parse_iso(query["since"]) if "since" in query else None
        items = [
            issue
            for (o, r, _), issue in self.fake.issues.items()
            if (since is None or issue.updated_at >= since)
            and (o, r) == (owner, repo)
            and (state == "all" or issue.state == state)
            and wanted <= set(issue.labels)
        ]
        key = "updated_at" if query.get("sort") == "updated" else "created_at"
        items.sort(key=lambda i: (getattr(i, key), i.number), reverse=_descending(query))
        return self.page(items, query, path, lambda i: i.to_json(self.fake.url))

    def list_comments(
        self, owner: str, repo: str, number: int | None, query: dict[str, str], path: str
    ) -> Answer:
        since = parse_iso(query["since"]) if "since" in query else None
        items = [
            c
            for c in self.fake.comments
            if (c.owner, c.repo) == (owner, repo)
            and (number is None or c.number == number)
            and (since is None or c.updated_at >= since)
            and c.id not in self.fake.hidden
        ]
        if query.get("sort") in ("created", "updated"):
            key = "updated_at" if query["sort"] == "updated" else "created_at"
            descending = query.get("direction", "desc") == "desc"
            items.sort(key=lambda c: (getattr(c, key), c.id), reverse=descending)
        else:
            items.sort(key=lambda c: c.id)  # the documented default: ascending id
        return self.page(items, query, path, self.comment_json)

    def comment_json(self, comment: FakeComment) -> dict[str, Any]:
        counts = self.fake.reaction_counts("issue_comment", comment.id)
        return comment.to_json(self.fake.url, reactions=counts)

    def page(
        self, items: list[Any], query: dict[str, str], path: str, convert: Any = None
    ) -> Answer:
        """One page of ``items``; only that page's entries are converted (``convert``)."""
        per_page = min(max(int(query.get("per_page", DEFAULT_PER_PAGE)), 1), MAX_PER_PAGE)
        per_page = min(per_page, self.fake.max_per_page)
        number = max(int(query.get("page", 1)), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(number - 1) * per_page : number * per_page]
        chunk = [convert(item) for item in chunk] if convert is not None else chunk
        links: list[str] = []
        for rel, target in (("prev", number - 1), ("next", number + 1), ("first", 1)):
            if 1 <= target <= last and (rel != "first" or number > 1):
                links.append(self.link(path, query, target, rel))
        if number < last <= self.fake.last_link_pages:
            links.append(self.link(path, query, last, "last"))
        return Answer(200, chunk, {"link": ", ".join(links)} if links else {})

    def link(self, path: str, query: dict[str, str], page: int, rel: str) -> str:
        target = urllib.parse.urlencode({**query, "page": str(page)})
        return f'<{self.fake.url}{path}?{target}>; rel="{rel}"'

    def create_comment(self, owner: str, repo: str, number: str, body: bytes) -> Answer:
        issue = self.find(owner, repo, number)
        if issue is None:
            return not_found()
        try:
            text = json.loads(body or b"null")["body"]
        except (ValueError, TypeError, KeyError):
            text = None
        if not isinstance(text, str):
            return Answer(422, {"message": "Invalid request: body is required"})
        if self.fake.before_create is not None:
            self.fake.before_create(f"{owner}/{repo}", issue.number, text)
        comment = self.fake.add_comment(
            f"{owner}/{repo}",
            issue.number,
            text,
            login=self.login,
            bot=self.login.endswith("[bot]"),
        )
        document = self.comment_json(comment)
        return Answer(201, document, {"location": document["url"]})


def _descending(query: dict[str, str]) -> bool:
    return query.get("direction", "desc") == "desc"


class FakeGitHubHandler(BaseHTTPRequestHandler):
    """One connection: HTTP/1.1, kept alive, every request logged."""

    protocol_version = "HTTP/1.1"
    fake: FakeGitHub  # set on the subclass :func:`serve` makes

    def setup(self) -> None:
        super().setup()
        # The headers and the body go out in two writes: without this, Nagle's algorithm
        # holds the body until the client's delayed ACK, some 40 ms per answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.fake.open_connection()

    def do_GET(self) -> None:
        self.serve_request("GET")

    def do_POST(self) -> None:
        self.serve_request("POST")

    def do_DELETE(self) -> None:
        self.serve_request("DELETE")

    def do_PATCH(self) -> None:
        self.serve_request("PATCH")

    def serve_request(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.failure: Failure | None = None
        status, extra, data = self.respond(method, split.path, query, headers, body)
        with self.fake.lock:
            self.fake.requests.append(
                LoggedRequest(method, split.path, query, headers, status, self.connection_number)
            )
        if status == NO_ANSWER:
            self.close_connection = True
            return
        failure = self.failure
        if failure is not None and failure.raw is not None:
            self.close_connection = True
            self.trickle(failure.raw, failure.trickle_seconds)
        elif failure is not None and failure.trickle_seconds:
            self.close_connection = True
            head = _head(status, {**extra, "Content-Length": str(len(data))})
            if failure.trickle_head:
                self.trickle(head + data, failure.trickle_seconds)
            else:
                self.trickle(head, 0.0)
                self.trickle(data, failure.trickle_seconds)
        else:
            self.send(status, extra, data)

    def trickle(self, data: bytes, seconds: float) -> None:
        """Write ``data`` (one byte per ``seconds`` when given) until the fake is released."""
        deadline = threading.Event()
        timer = threading.Timer(MAX_STALL_SECONDS, deadline.set)
        timer.start()
        try:
            step = 1 if seconds else max(len(data), 1)
            for start in range(0, len(data), step):
                if seconds and (self.fake.released.wait(seconds) or deadline.is_set()):
                    return
                self.wfile.write(data[start : start + step])
                self.wfile.flush()
        except OSError:
            return  # the client gave up
        finally:
            timer.cancel()

    def respond(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        fake = self.fake
        token = _bearer(headers.get("authorization", ""))
        blob = path.startswith(LOG_BLOB_PREFIX)  # not the API: no token, no rate budget
        if fake.tokens and token not in fake.tokens and not blob:
            return 401, {}, _json({"message": "Bad credentials"})
        failure = self.failure = fake.take_failure(path)
        if failure is not None and failure.stall_seconds:
            fake.released.wait(min(failure.stall_seconds, MAX_STALL_SECONDS))
        if failure is not None and failure.hang_up:
            return NO_ANSWER, {}, b""
        if blob:
            return _blob_answer(fake, path, failure)
        budget = fake.budget(token)
        if failure is not None and (failure.body is not None or failure.status):
            return _failed_answer(failure, budget)
        if budget.remaining <= 0:
            return 403, budget.headers(), _json({"message": "API rate limit exceeded"})
        login = fake.tokens.get(token, "the-loop-bot")
        with fake.lock:
            answer = _answer(fake, token, login, (method, path, query, body))
            payload = answer.payload
            data = payload if isinstance(payload, bytes) else _json(payload)
            extra = dict(answer.headers)
            status = answer.status
            if method == "GET" and status == 200:
                extra["etag"] = weak_etag(data)
                if etag_matches(headers.get("if-none-match", ""), extra["etag"]):
                    status, data = 304, b""
            if status != 304 or not token:  # only an authorized 304 is free
                budget.remaining -= 1
            return status, {**extra, **budget.headers(), **self.poll_headers()}, data

    def poll_headers(self) -> dict[str, str]:
        interval = self.fake.poll_interval
        return {} if interval is None else {"x-poll-interval": str(interval)}

    def send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if status != 304:
                if "content-type" not in headers:
                    self.send_header("Content-Type", JSON_TYPE)
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True  # the client gave up (a stalled request)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is :attr:`FakeGitHub.requests`."""


def _routes(fake: FakeGitHub, login: str) -> Routes:
    """The endpoints, the pull-request loop's included (that module builds on this one,
    so it is imported here, not at the top)."""
    from tests.fake_github_pulls import PullRoutes

    return PullRoutes(fake, login)


def _answer(
    fake: FakeGitHub, token: str, login: str, asked: tuple[str, str, dict[str, str], bytes]
) -> Answer:
    """The answer to one request (the fake's lock held): GitHub's redirect for a moved
    repository or issue (by its name, or by its repository's id: a renamed repository's
    issue transferred since), its refusal of ``GET /user`` to an App, else the
    endpoint's."""
    method, path, query, body = asked
    answer = fake.moved_answer(method, path, query) or _app_refusal(fake, token, path)
    named = fake.by_id(path)
    if answer is None and named != path:  # under /repositories/{id}: an issue moved on
        answer = fake.moved_answer(method, named, query)
    return answer or _routes(fake, login).answer(method, named, query, body)


def _app_refusal(fake: FakeGitHub, token: str, path: str) -> Answer | None:
    """GitHub's answer to ``GET /user`` for a GitHub App's installation token."""
    if path != "/user" or token not in fake.app_tokens:
        return None
    documentation = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
    message = "Resource not accessible by integration"
    return Answer(403, {"message": message, "documentation_url": documentation, "status": "403"})


def _blob_answer(
    fake: FakeGitHub, path: str, failure: Failure | None
) -> tuple[int, dict[str, str], bytes]:
    """A job's log, where ``/actions/jobs/{id}/logs`` redirects: plain text, no rate
    headers (it is not the API); an injected failure's status or body instead."""
    extra = {"content-type": TEXT_TYPE, **(failure.headers if failure is not None else {})}
    if failure is not None and failure.body is not None:
        return failure.status or 200, extra, failure.body
    if failure is not None and failure.status:
        return failure.status, extra, b"blob storage failed"
    number = path.removeprefix(LOG_BLOB_PREFIX)
    with fake.lock:
        job = fake.jobs.get(int(number)) if number.isdigit() else None
        if job is None:
            return 404, {"content-type": TEXT_TYPE}, b"The specified blob does not exist."
        return 200, {"content-type": TEXT_TYPE}, job.log.encode("utf-8")


def _failed_answer(failure: Failure, budget: RateBudget) -> tuple[int, dict[str, str], bytes]:
    """What an injected failure answers: its own bytes, or its status with a message."""
    extra = {**budget.headers(), **failure.headers}
    if failure.body is not None:
        budget.remaining -= 1
        return failure.status or 200, extra, failure.body
    if failure.retry_after is not None:
        extra["retry-after"] = str(failure.retry_after)
    message = "You have exceeded a secondary rate limit."
    return failure.status, extra, _json({"message": message})


def _head(status: int, headers: dict[str, str]) -> bytes:
    """The status line and headers of an answer written by hand (a trickle)."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if "content-type" not in headers:
        lines.append(f"Content-Type: {JSON_TYPE}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


_REASONS = {200: "OK", 304: "Not Modified", 404: "Not Found", 502: "Bad Gateway"}


def _bearer(header: str) -> str:
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else ""


def _json(payload: Any) -> bytes:
    return json.dumps(payload, sort_keys=True).encode("utf-8")


@contextlib.contextmanager
def serve(fake: FakeGitHub | None = None) -> Iterator[FakeGitHub]:
    """Run ``fake`` (or a new one) on 127.0.0.1 at a free port; stop it on exit."""
    fake = fake or FakeGitHub()
    handler = type("BoundHandler", (FakeGitHubHandler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.released.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
