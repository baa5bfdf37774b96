"""The poll reader's and the intake's GitHub over the REST client.

:class:`ClientReads` is both :class:`~the_loop.polling.reads.GitHubReads` (the
listings a cycle reads) and :class:`~the_loop.intake.ports.GitHubPort` (a thread, an
item, a notice), and remembers what the daemon's pacing needs: the last rate limit,
``x-poll-interval``, and every refusal with the repository it came from. An answer
that is not the shape GitHub documents (a page that is not a list of objects, an item
that is not an issue) is a refusal like any other, never a value the intake reads.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, cast

from the_loop.github.backoff import RatePolicy
from the_loop.github.client import MAX_PAGES, Beyond, GitHubClient
from the_loop.github.replies import GitHubHTTPError, RateLimit
from the_loop.intake.events import Issue, IssueComment, comments_from_json, issue_from_json
from the_loop.intake.ports import Json
from the_loop.polling.ci_ports import ObjectPage
from the_loop.polling.reads import FIRST_SIGHT_PAGES, CommentsPage, ListingPage
from the_loop.ref import WorkItemRef

#: The status of the refusal a look-up of a transferred issue raises: GitHub's 301.
TRANSFERRED = 301
#: The path of an issue's API URL: its repository and its number.
_ISSUE_URL = re.compile(r"/repos/([^/]+/[^/]+)/issues/([0-9]+)$")


class Refusal(NamedTuple):
    """A request GitHub refused or never answered usably, and the repository it asked."""

    repository: str
    error: GitHubHTTPError


@dataclass
class ClientReads:
    """The reads and the one write over the REST client.

    Remembers the last rate limit and ``x-poll-interval`` it saw, and every refusal
    (the back-offs are computed from them).
    """

    client: GitHubClient
    policy: RatePolicy = field(default_factory=RatePolicy)
    remaining: int | None = None
    rate: RateLimit | None = None
    poll_interval: int | None = None
    refusals: list[Refusal] = field(default_factory=list[Refusal])
    #: What each repository GitHub redirected for good is called now, by the config's name
    #: (case folded): given when the client is made (the names the poller kept), and
    #: learned when a read by the name asked is redirected for good. Every request names
    #: the repository by it, so a renamed one costs no redirect once its name is known.
    names: dict[str, str] = field(default_factory=dict[str, str])
    #: The names ``GET /repos/{o}/{r}`` was asked for by this client (once each).
    _looked_up: set[str] = field(default_factory=set[str], init=False, repr=False)

    def __post_init__(self) -> None:
        self.names = {k.casefold(): v for k, v in self.names.items() if "/" in v}

    def _listing(
        self,
        repository: str,
        path: str,
        params: dict[str, str | int],
        *,
        keep: bool,
        conditional: bool = True,
        max_pages: int = MAX_PAGES,
        beyond: Beyond = "refuse",
    ) -> ListingPage:
        """The listing's entries, each an object; a refusal is remembered, then raised."""
        try:
            listing = self.client.get_all_pages(
                path,
                params,
                keep_bodies=keep,
                conditional=conditional,
                max_pages=max_pages,
                beyond=beyond,
            )
            entries = listing.items
        except GitHubHTTPError as error:
            self.refusals.append(Refusal(repository, error))
            raise
        self._rate(listing.rate)
        if listing.poll_interval is not None:
            self.poll_interval = max(self.poll_interval or 0, listing.poll_interval)
        if listing.pages and listing.pages[0].moved:
            self._learn_name(repository, path)
        return ListingPage(entries, listing.not_modified, listing.complete, listing.truncated)

    def moved_to(self, repository: str) -> str:
        """The name GitHub gives ``repository`` now, when a read of it was answered with
        a permanent redirect to a repository of another name (renamed, or moved to
        another owner), or the client was made knowing it; ``""`` otherwise."""
        name = self.asked_as(repository)
        return name if name.casefold() != repository.casefold() else ""

    def asked_as(self, repository: str) -> str:
        """The name ``repository`` (the config's) is asked of GitHub by: the one GitHub
        gives it now, once known; else its own."""
        return self.names.get(repository.casefold(), repository)

    def _learn_name(self, repository: str, path: str = "") -> None:
        """Ask what ``repository`` is called now (``GET /repos/{o}/{r}`` by the name it is
        asked by, redirected), once per client and name, when a read of ``path`` under
        that name was redirected for good (none: whatever was read); a refusal leaves
        the name as it was."""
        asked = self.asked_as(repository)
        if path and not path.startswith(f"/repos/{asked}/"):
            return
        if asked.casefold() in self._looked_up:
            return
        self._looked_up.add(asked.casefold())
        try:
            answer = self.client.get(f"/repos/{asked}")
            name = answer.object().get("full_name")
        except GitHubHTTPError:
            return
        self._rate(answer.rate)
        if isinstance(name, str) and name.count("/") == 1:
            self.names[repository.casefold()] = name

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage:
        """Every open item carrying ``labels``; ``fresh`` reads every page in full."""
        params: dict[str, str | int] = {"state": "open", "per_page": 100}
        if labels:
            params["labels"] = ",".join(labels)
        path = f"/repos/{self.asked_as(repository)}/issues"
        return self._listing(repository, path, params, keep=False, conditional=not fresh)

    def changed_items(self, repository: str, since: str) -> ListingPage:
        """Every issue and PR, open or closed, updated at or after ``since``, oldest first
        (past the page cap, the oldest: the next read goes on from them)."""
        params: dict[str, str | int] = {
            "state": "all",
            "since": since,
            "sort": "updated",
            "direction": "asc",
            "per_page": 100,
        }
        path = f"/repos/{self.asked_as(repository)}/issues"
        return self._listing(repository, path, params, keep=False, beyond="first")

    def comments_since(self, repository: str, since: str | None) -> CommentsPage:
        """The comments updated at or after ``since``, oldest first (past the page cap,
        the oldest); with no ``since``, only the newest :data:`FIRST_SIGHT_PAGES` pages
        (asked newest first, so a long history is never walked, then put in order)."""
        path = f"/repos/{self.asked_as(repository)}/issues/comments"
        params: dict[str, str | int] = {"sort": "updated", "direction": "asc", "per_page": 100}
        if since is not None:
            since_params = {**params, "since": since}
            return self._listing(repository, path, since_params, keep=False, beyond="first")
        params["direction"] = "desc"
        newest = self._listing(
            repository, path, params, keep=False, max_pages=FIRST_SIGHT_PAGES, beyond="first"
        )
        return replace(newest, entries=list(reversed(newest.entries)))

    def pull_requests(self, repository: str) -> ListingPage:
        """The open pull requests, the most recently updated first: the first page only
        (what changed since the last read is at its top), read conditionally."""
        params: dict[str, str | int] = {
            "state": "open",
            "sort": "updated",
            "direction": "desc",
            "per_page": 100,
        }
        path = f"/repos/{self.asked_as(repository)}/pulls"
        return self._listing(repository, path, params, keep=False, max_pages=1, beyond="first")

    def review_comments_since(self, repository: str, since: str) -> ListingPage:
        """The inline review comments updated at or after ``since``, oldest first (past
        the page cap, the oldest: the next read goes on from them)."""
        params: dict[str, str | int] = {
            "since": since,
            "sort": "updated",
            "direction": "asc",
            "per_page": 100,
        }
        path = f"/repos/{self.asked_as(repository)}/pulls/comments"
        return self._listing(repository, path, params, keep=False, beyond="first")

    def reviews(self, repository: str, number: int, *, fresh: bool = False) -> ListingPage:
        """Every review of pull request ``number``, oldest first, read conditionally;
        ``fresh`` reads every page in full."""
        path = f"/repos/{self.asked_as(repository)}/pulls/{number}/reviews"
        params: dict[str, str | int] = {"per_page": 100}
        return self._listing(
            repository, path, params, keep=False, conditional=not fresh, beyond="last"
        )

    def review(self, repository: str, number: int, review_id: int) -> Json:
        """One review of pull request ``number``, read in full."""
        path = f"/repos/{self.asked_as(repository)}/pulls/{number}/reviews/{review_id}"
        return self._object(repository, path, {}, conditional=False).data

    def review_comments_of(self, repository: str, number: int, review_id: int) -> ListingPage:
        """The inline comments review ``review_id`` was submitted with, read in full."""
        path = f"/repos/{self.asked_as(repository)}/pulls/{number}/reviews/{review_id}/comments"
        params: dict[str, str | int] = {"per_page": 100}
        return self._listing(
            repository, path, params, keep=False, conditional=False, beyond="first"
        )

    def review_comment(self, repository: str, comment_id: int) -> Json:
        """One inline review comment; a refusal for anything that is not an object."""
        path = f"/repos/{self.asked_as(repository)}/pulls/comments/{comment_id}"
        try:
            answer = self.client.get(path, keep_body=True)
            data = answer.json()
            if not isinstance(data, dict):
                raise answer.malformed(f"something that is not a review comment for {path}")
        except GitHubHTTPError as error:
            self.refusals.append(Refusal(repository, error))
            raise
        self._rate(answer.rate)
        return cast(dict[str, Any], data)

    def pull_request(self, repository: str, number: int) -> Json:
        """One pull request (for its head); a refusal for anything that is not an object."""
        return self._object(
            repository, f"/repos/{self.asked_as(repository)}/pulls/{number}", {}
        ).data

    def check_runs(self, repository: str, sha: str, *, fresh: bool = False) -> ObjectPage:
        """The latest check run of each name on commit ``sha``, every page of 100 (see
        :meth:`_paged_object`), read conditionally unless ``fresh``."""
        path = f"/repos/{self.asked_as(repository)}/commits/{sha}/check-runs"
        params: dict[str, str | int] = {"filter": "latest", "per_page": 100}
        return self._paged_object(repository, path, params, "check_runs", conditional=not fresh)

    def combined_status(self, repository: str, sha: str, *, fresh: bool = False) -> ObjectPage:
        """The latest status of each context on commit ``sha``, every page of 100 (see
        :meth:`_paged_object`), read conditionally unless ``fresh``."""
        path = f"/repos/{self.asked_as(repository)}/commits/{sha}/status"
        params: dict[str, str | int] = {"per_page": 100}
        return self._paged_object(repository, path, params, "statuses", conditional=not fresh)

    def statuses(self, repository: str, sha: str) -> Sequence[Json]:
        """The newest statuses posted on commit ``sha``, newest first (one page of 100),
        each with its ``creator``; read in full, not counted against the repository."""
        url = self.client.url_for(
            f"/repos/{self.asked_as(repository)}/commits/{sha}/statuses", {"per_page": 100}
        )
        answer = self.client.get_url(url, conditional=False)
        self._rate(answer.rate)
        return answer.objects()

    def job(self, repository: str, job_id: int) -> Json:
        """A GitHub Actions job (its steps); not counted against the repository."""
        path = f"/repos/{self.asked_as(repository)}/actions/jobs/{job_id}"
        return self._object(repository, path, {}, conditional=False, remember=False).data

    def job_log(self, repository: str, job_id: int) -> str:
        """A job's whole log, followed through GitHub's redirect without the token; not
        counted against the repository (a paste goes without it)."""
        body = self.client.download(
            f"/repos/{self.asked_as(repository)}/actions/jobs/{job_id}/logs"
        )
        return body.decode("utf-8", errors="replace")

    def _object(
        self,
        repository: str,
        path: str,
        params: dict[str, str | int],
        *,
        conditional: bool = True,
        remember: bool = True,
    ) -> ObjectPage:
        """One conditional GET answered with an object (empty for a 304); a refusal is
        remembered against ``repository`` (unless not ``remember``), then raised."""
        try:
            answer = self.client.get_url(self.client.url_for(path, params), conditional=conditional)
            data = {} if answer.not_modified else answer.object()
        except GitHubHTTPError as error:
            if remember:
                self.refusals.append(Refusal(repository, error))
            raise
        self._rate(answer.rate)
        return ObjectPage(data, answer.not_modified)

    def _paged_object(
        self,
        repository: str,
        path: str,
        params: dict[str, str | int],
        key: str,
        *,
        conditional: bool,
    ) -> ObjectPage:
        """An answer that is an object listing one page of ``key`` (GitHub's check runs,
        a combined status), every page read: the first page's object with ``key``'s
        entries of all pages (once each, by id). Each page is a conditional GET unless not
        ``conditional``: not modified when every page answers 304; else a page that did
        is asked again in full (its body is not kept). A refusal is remembered, then raised."""
        try:
            listing = self.client.get_all_pages(path, params, conditional=conditional)
            pages = [
                page if page.has_body else self.client.get_url(page.url, conditional=False)
                for page in (() if listing.not_modified else listing.pages)
            ]
            data = _joined([page.object() for page in pages], key)
        except GitHubHTTPError as error:
            self.refusals.append(Refusal(repository, error))
            raise
        self._rate((pages[-1] if pages else listing.pages[-1]).rate)
        return ObjectPage(data, listing.not_modified)

    def thread(self, ref: WorkItemRef) -> Sequence[Json]:
        """The item's comments, oldest first (past the page cap, the newest pages)."""
        path = f"/repos/{self.asked_as(_repository(ref))}/issues/{ref.number}/comments"
        name = f"{ref.owner}/{ref.repo}"
        return self._listing(name, path, {"per_page": 100}, keep=True, beyond="last").entries

    def item(self, ref: WorkItemRef) -> Json:
        """The item's issue object; a refusal for anything GitHub would not send as one."""
        path = f"/repos/{self.asked_as(_repository(ref))}/issues/{ref.number}"
        try:
            answer = self.client.get(path, keep_body=True)
            data = answer.json()
            issue = cast(dict[str, Any], data) if isinstance(data, dict) else {}
            if issue.get("state") not in ("open", "closed"):
                raise answer.malformed(f"something that is not an issue for {ref.ref}")
            if answer.redirects:
                self._same_item(ref, issue, answer.redirects[0])
        except GitHubHTTPError as error:
            self.refusals.append(Refusal(f"{ref.owner}/{ref.repo}", error))
            raise
        self._rate(answer.rate)
        return issue

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        """Post ``body``; the new comment's id, or None when GitHub's answer did not say
        (the comment was posted all the same: the POST was answered 2xx)."""
        path = f"/repos/{self.asked_as(_repository(ref))}/issues/{ref.number}/comments"
        answer = self.client.post_json(path, {"body": body})
        try:
            data = answer.json()
        except GitHubHTTPError:
            return None
        posted = cast(dict[str, Any], data).get("id") if isinstance(data, dict) else None
        return posted if isinstance(posted, int) and not isinstance(posted, bool) else None

    def comments_after(self, ref: WorkItemRef, since: str) -> Sequence[Json]:
        """The item's comments updated at or after ``since``, oldest first, read afresh
        (a claim's round: what was posted after the start it answers)."""
        path = f"/repos/{self.asked_as(_repository(ref))}/issues/{ref.number}/comments"
        params: dict[str, str | int] = {"since": since, "per_page": 100}
        name = f"{ref.owner}/{ref.repo}"
        return self._listing(name, path, params, keep=False, conditional=False).entries

    def edit_comment(self, ref: WorkItemRef, comment_id: int, body: str) -> None:
        """Replace the body of the issue comment ``comment_id`` of ``ref``'s repository."""
        path = f"/repos/{self.asked_as(_repository(ref))}/issues/comments/{comment_id}"
        self.client.patch_json(path, {"body": body})

    def delete_comment(self, ref: WorkItemRef, comment_id: int) -> None:
        """Delete the issue comment ``comment_id`` of ``ref``'s repository (one already
        gone is no error)."""
        self.client.delete(f"/repos/{self.asked_as(_repository(ref))}/issues/comments/{comment_id}")

    def _same_item(self, ref: WorkItemRef, issue: Json, status: int) -> None:
        """A GET of ``ref`` redirected (``status``) to ``issue``: the same item (in its
        repository renamed), or a refusal with status :data:`TRANSFERRED` saying where
        the issue was transferred."""
        found = _ISSUE_URL.search(str(issue.get("url") or ""))
        if found is None:
            return  # GitHub did not say which item it is: taken as the one asked
        repository, number = found.group(1), int(found.group(2))
        asked = f"{ref.owner}/{ref.repo}"
        if number == ref.number and repository.casefold() == self.asked_as(asked).casefold():
            return  # the name it was asked by (a name GitHub gave it back: asked again)
        if number == ref.number:
            self._learn_name(asked)
            if repository.casefold() == self.asked_as(asked).casefold():
                return
        raise GitHubHTTPError(
            f"{ref.ref} was transferred to {repository}#{number} (GitHub answered {status} for it)",
            status=TRANSFERRED,
        )

    def own_login(self) -> str | None:
        """The login of the token's own user (``GET /user``); None when GitHub refuses
        to say with a 403 that is no rate limit, as it does for a GitHub App's
        installation token ("Resource not accessible by integration")."""
        try:
            answer = self.client.get("/user", keep_body=True)
        except GitHubHTTPError as error:
            if error.status == 403 and not error.rate_limited:
                return None
            raise
        data = answer.json()
        login = cast(dict[str, Any], data).get("login") if isinstance(data, dict) else None
        if not isinstance(login, str) or not login:
            raise answer.malformed("a user without a login for GET /user")
        self._rate(answer.rate)
        return login

    def rate_low(self) -> bool:
        return not self.policy.may_run("item", self.rate, time.time())

    def _rate(self, rate: RateLimit | None) -> None:
        if rate is not None:
            self.rate, self.remaining = rate, rate.remaining


def _joined(objects: Sequence[Json], key: str) -> Json:
    """The first object, its ``key`` holding the entries of every object's ``key`` in
    order, an id already met left out (an entry that moved a page on while the pages
    were read); ``{}`` for no object."""
    if not objects:
        return {}
    entries: list[Any] = []
    ids: set[int] = set()
    for data in objects:
        found = data.get(key)
        for entry in cast(list[Any], found) if isinstance(found, list) else []:
            number = cast(dict[str, Any], entry).get("id") if isinstance(entry, dict) else None
            if not isinstance(number, int) or number not in ids:
                entries.append(entry)
            if isinstance(number, int):
                ids.add(number)
    return {**objects[0], key: entries}


@dataclass(frozen=True)
class IntakeGitHub:
    """The intake's :class:`~the_loop.intake.ports.GitHubPort` over the same reads: a
    thread and an item as values (an entry without what the intake needs is skipped
    with a warning), and the notice it posts."""

    reads: ClientReads
    warn: Callable[[str], None]

    def thread(self, ref: WorkItemRef) -> list[IssueComment]:
        return comments_from_json(self.reads.thread(ref), repository=ref, warn=self.warn)

    def item(self, ref: WorkItemRef) -> Issue:
        """The item as GitHub describes it; one transferred elsewhere is ``gone``, why."""
        try:
            return issue_from_json(self.reads.item(ref), ref)
        except GitHubHTTPError as error:
            if error.status != TRANSFERRED:
                raise
            return Issue(ref, is_open=False, gone=str(error))

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        return self.reads.post_comment(ref, body)

    def edit_comment(self, ref: WorkItemRef, comment_id: int, body: str) -> None:
        self.reads.edit_comment(ref, comment_id, body)


def _repository(ref: WorkItemRef) -> str:
    """``owner/repo`` of ``ref``."""
    return f"{ref.owner}/{ref.repo}"
