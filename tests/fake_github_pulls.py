"""What the loopback fake GitHub serves for the pull-request loop.

The state lives on :class:`tests.fake_github.FakeGitHub` (``add_pull``, ``push``,
``add_review``, ``add_review_comment``, ``outdate``, ``add_check_run``, ``add_status``,
``add_job``, ``react``); this module turns it into GitHub's REST answers, with the same
ETags, 304s, ``Link`` pagination, rate budget, injected failures and request log as the
issue endpoints (the handler does those for every path):

- ``GET /repos/{o}/{r}/pulls`` (``state``, ``head``, ``base``, ``sort``, ``direction``)
  and ``GET /repos/{o}/{r}/pulls/{n}`` (served by :class:`~tests.fake_github.Routes`);
- ``GET /repos/{o}/{r}/pulls/comments`` (every pull request's inline comments,
  ``since`` on ``updated_at``), ``/pulls/comments/{id}``, ``/pulls/{n}/comments``,
  ``/pulls/{n}/reviews``, ``/pulls/{n}/reviews/{id}``, ``/pulls/{n}/reviews/{id}/comments``;
- ``GET /repos/{o}/{r}/commits/{ref}/check-runs`` (``filter=latest`` by default: the
  newest run of each name; ``total_count`` and paged), ``/commits/{ref}/status`` (the
  combined status, whose entries name no ``creator``, as GitHub's do not) and
  ``/commits/{ref}/statuses`` (every status, newest first, each with its ``creator``);
- ``GET /repos/{o}/{r}/actions/jobs/{id}`` and ``/actions/jobs/{id}/logs`` (a 302 to the
  log's own URL, :data:`~tests.fake_github.LOG_BLOB_PREFIX`, as GitHub redirects to a
  short-lived download URL);
- ``POST``/``GET`` reactions of an issue comment (``/issues/comments/{id}/reactions``),
  of an inline comment (``/pulls/comments/{id}/reactions``) and of an issue or pull
  request itself (``/issues/{n}/reactions``): 201 for a new reaction, 200 for one the
  login already made. GitHub's REST API has no reactions on a review itself (only
  GraphQL's ``addReaction`` takes a review): a review is acknowledged through its inline
  comments, or on the pull request.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fake_github import (
    LOG_BLOB_PREFIX,
    REACTION_CONTENTS,
    Answer,
    FakeCheckRun,
    FakeIssue,
    FakeJob,
    FakeReaction,
    FakeReview,
    FakeReviewComment,
    FakeStatus,
    Routes,
    iso,
    job_page,
    not_found,
    parse_iso,
)

#: The app id GitHub Actions' check runs carry; any other app gets a made-up one.
_APP_IDS = {"github-actions": 15368}
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Where:
    """The repository a request is about, and what else its path names (numbers, ids,
    a commit ref), in order."""

    owner: str
    repo: str
    names: tuple[str, ...]

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.repo}"

    def id(self, index: int = 0) -> int:
        return int(self.names[index])


@dataclass(frozen=True)
class Asked:
    query: dict[str, str]
    path: str
    body: bytes


Endpoint = Callable[["PullRoutes", Where, Asked], Answer]


class PullRoutes(Routes):
    """The issue endpoints, and the pull-request loop's."""

    def route(self, method: str, path: str, query: dict[str, str], body: bytes) -> Answer:
        for verb, pattern, endpoint in _ENDPOINTS:
            matched = pattern.fullmatch(path) if verb == method else None
            if matched is not None:
                owner, repo, *names = matched.groups()
                where = Where(owner, repo, tuple(names))
                return endpoint(self, where, Asked(query, path, body))
        return super().route(method, path, query, body)

    # -- pull requests ----------------------------------------------------------

    def list_pulls(self, where: Where, asked: Asked) -> Answer:
        """``state`` open (default), closed or all; ``head`` ``owner:branch``; ``base``;
        ``sort`` created (default) or updated; ``direction`` desc by default for created,
        asc otherwise. There is no ``since``: sort by updated and stop early instead."""
        query = asked.query
        state = _choice(query, "state", ("open", "closed", "all"), "open")
        sort = _choice(query, "sort", ("created", "updated"), "created")
        direction = query.get("direction", "desc" if sort == "created" else "asc")
        items = [
            pull
            for pull in self._pulls(where)
            if (state == "all" or pull.state == state) and _on_branches(pull, query)
        ]
        items.sort(key=lambda p: (getattr(p, f"{sort}_at"), p.number))
        if direction == "desc":
            items.reverse()
        return self.page(
            items, query, asked.path, lambda p: p.to_pull_json(self.fake.url, single=False)
        )

    def _pulls(self, where: Where) -> list[FakeIssue]:
        return [
            issue
            for issue in self.fake.issues.values()
            if issue.pull_request and (issue.owner, issue.repo) == (where.owner, where.repo)
        ]

    def _pull(self, where: Where) -> FakeIssue | None:
        issue = self.fake.issues.get((where.owner, where.repo, where.id()))
        return issue if issue is not None and issue.pull_request else None

    # -- inline comments and reviews ------------------------------------------------

    def list_review_comments(self, where: Where, asked: Asked) -> Answer:
        """Every pull request's inline comments (``since``: updated at or after), by
        ascending id unless ``sort`` (created or updated) and ``direction`` say otherwise."""
        return self._comment_page(self._live_comments(where, None), asked)

    def pull_review_comments(self, where: Where, asked: Asked) -> Answer:
        pull = self._pull(where)
        if pull is None:
            return not_found()
        return self._comment_page(self._live_comments(where, pull.number), asked)

    def review_comment(self, where: Where, asked: Asked) -> Answer:
        found = [c for c in self._live_comments(where, None) if c.id == where.id()]
        return Answer(200, self.comment_document(found[0])) if found else not_found()

    def list_reviews(self, where: Where, asked: Asked) -> Answer:
        """A pull request's reviews, oldest first (GitHub: chronological order)."""
        if self._pull(where) is None:
            return not_found()
        return self.page(self._reviews(where), asked.query, asked.path, self.review_document)

    def review(self, where: Where, asked: Asked) -> Answer:
        found = [r for r in self._reviews(where) if r.id == where.id(1)]
        return Answer(200, self.review_document(found[0])) if found else not_found()

    def review_comments_of(self, where: Where, asked: Asked) -> Answer:
        """The inline comments a review was submitted with, by ascending id."""
        found = [r for r in self._reviews(where) if r.id == where.id(1)]
        if not found:
            return not_found()
        comments = [c for c in found[0].comments if not c.deleted]
        return self.page(comments, asked.query, asked.path, self.comment_document)

    def _reviews(self, where: Where) -> list[FakeReview]:
        if self._pull(where) is None:
            return []
        wanted = (where.owner, where.repo, where.id())
        return [r for r in self.fake.reviews if (r.owner, r.repo, r.number) == wanted]

    def _live_comments(self, where: Where, number: int | None) -> list[FakeReviewComment]:
        """The inline comments of the repository's pull requests (of ``number``), not
        deleted, of pull requests still there."""
        return [
            c
            for c in self.fake.review_comments
            if (c.owner, c.repo) == (where.owner, where.repo)
            and (number is None or c.number == number)
            and not c.deleted
            and (c.owner, c.repo, c.number) in self.fake.issues
        ]

    def _comment_page(self, items: list[FakeReviewComment], asked: Asked) -> Answer:
        query = asked.query
        since = parse_iso(query["since"]) if "since" in query else None
        items = [c for c in items if since is None or c.updated_at >= since]
        sort = query.get("sort")
        if sort in ("created", "updated"):
            items.sort(key=lambda c: (getattr(c, f"{sort}_at"), c.id))
            if query.get("direction", "desc") == "desc":
                items.reverse()
        elif sort is not None:
            raise ValueError(f"sort must be created or updated, not {sort!r}")
        else:
            items.sort(key=lambda c: c.id)  # the documented default: ascending id
        return self.page(items, query, asked.path, self.comment_document)

    def comment_document(self, comment: FakeReviewComment) -> dict[str, Any]:
        counts = self.fake.reaction_counts("review_comment", comment.id)
        return review_comment_json(comment, self.fake.url, counts)

    def review_document(self, review: FakeReview) -> dict[str, Any]:
        return review_json(review, self.fake.url)

    # -- checks, statuses, Actions jobs -------------------------------------------

    def check_runs(self, where: Where, asked: Asked) -> Answer:
        """The check runs on ``ref`` (a SHA, or a pull request's head branch):
        ``check_name``, ``status``, ``filter`` latest (default: the newest run of each
        name) or all; ``total_count`` counts them all, ``check_runs`` holds one page."""
        sha = self._commit(where)
        if sha is None:
            return _no_commit(where)
        query = asked.query
        runs = [
            run
            for run in self.fake.check_runs
            if (run.owner, run.repo, run.head_sha) == (where.owner, where.repo, sha)
            and query.get("check_name", run.name) == run.name
            and query.get("status", run.status) == run.status
        ]
        if _choice(query, "filter", ("latest", "all"), "latest") == "latest":
            runs = list({run.name: run for run in sorted(runs, key=lambda r: r.id)}.values())
        runs.sort(key=lambda r: r.id)
        listing = self.page(runs, query, asked.path, self.check_run_document)
        payload = {"total_count": len(runs), "check_runs": listing.payload}
        return Answer(200, payload, listing.headers)

    def combined_status(self, where: Where, asked: Asked) -> Answer:
        """The latest status of each context on ``ref`` and their combined ``state``:
        failure if any is error or failure, else pending if any is pending or there is
        none, else success. ``per_page``/``page`` page the statuses."""
        sha = self._commit(where)
        if sha is None:
            return _no_commit(where)
        mine = [
            s
            for s in self.fake.statuses
            if (s.owner, s.repo, s.sha) == (where.owner, where.repo, sha)
        ]
        latest = list({s.context: s for s in sorted(mine, key=lambda s: s.id)}.values())
        latest.sort(key=lambda s: s.id, reverse=True)
        api = self.fake.url
        listing = self.page(
            latest, asked.query, asked.path, lambda s: status_json(s, api, creator=False)
        )
        repository = f"{api}/repos/{where.repository}"
        payload = {
            "state": combined_state([s.state for s in latest]),
            "statuses": listing.payload,
            "sha": sha,
            "total_count": len(latest),
            "repository": {"full_name": where.repository, "url": repository},
            "commit_url": f"{repository}/commits/{sha}",
            "url": f"{repository}/commits/{sha}/status",
        }
        return Answer(200, payload, listing.headers)

    def list_statuses(self, where: Where, asked: Asked) -> Answer:
        """Every status posted on ``ref``, newest first, each naming its ``creator``."""
        sha = self._commit(where)
        if sha is None:
            return _no_commit(where)
        mine = [
            s
            for s in self.fake.statuses
            if (s.owner, s.repo, s.sha) == (where.owner, where.repo, sha)
        ]
        mine.sort(key=lambda s: s.id, reverse=True)
        api = self.fake.url
        return self.page(mine, asked.query, asked.path, lambda s: status_json(s, api))

    def job(self, where: Where, asked: Asked) -> Answer:
        job = self._job(where)
        return not_found() if job is None else Answer(200, job_json(job, self.fake.url))

    def job_logs(self, where: Where, asked: Asked) -> Answer:
        """GitHub answers 302 with the log's download URL in ``location``."""
        job = self._job(where)
        if job is None:
            return not_found()
        return Answer(302, b"", {"location": f"{self.fake.url}{LOG_BLOB_PREFIX}{job.id}"})

    def check_run_document(self, run: FakeCheckRun) -> dict[str, Any]:
        where = Where(run.owner, run.repo, ())
        heads = [p for p in self._pulls(where) if p.head_sha == run.head_sha]
        return check_run_json(run, self.fake.url, heads)

    def _job(self, where: Where) -> FakeJob | None:
        job = self.fake.jobs.get(where.id())
        if job is None or (job.owner, job.repo) != (where.owner, where.repo):
            return None
        return job

    def _commit(self, where: Where) -> str | None:
        """The SHA ``/commits/{ref}/…`` names: a SHA as it is; a branch (``heads/`` or
        not, percent-encoded or not) a pull request has as its head: the newest such pull
        request's head commit; else None."""
        ref = _ref(where)
        if _SHA.fullmatch(ref):
            return ref
        heads = sorted((p for p in self._pulls(where) if p.head == ref), key=lambda p: p.number)
        return heads[-1].head_sha if heads else None

    # -- reactions ------------------------------------------------------------------

    def react(self, kind: str, where: Where, asked: Asked) -> Answer:
        """201 and the new reaction, or 200 and the one the login already made."""
        if not self._reactable(kind, where):
            return not_found()
        try:
            content = json.loads(asked.body or b"null")["content"]
        except (ValueError, TypeError, KeyError):
            content = None
        if content not in REACTION_CONTENTS:
            return Answer(422, {"message": "Validation Failed: content is not a reaction"})
        reaction, created = self.fake.react(kind, where.id(), self.login, content)
        return Answer(201 if created else 200, reaction_json(reaction))

    def reactions(self, kind: str, where: Where, asked: Asked) -> Answer:
        """The reactions on a comment, oldest first; ``content`` keeps one kind."""
        if not self._reactable(kind, where):
            return not_found()
        wanted = asked.query.get("content")
        made = [
            r
            for r in self.fake.reacted
            if (r.kind, r.subject_id) == (kind, where.id())
            and (wanted is None or r.content == wanted)
        ]
        return self.page(made, asked.query, asked.path, reaction_json)

    def _reactable(self, kind: str, where: Where) -> bool:
        if kind == "issue":
            return self.find(where.owner, where.repo, str(where.id())) is not None
        if kind == "review_comment":
            return any(c.id == where.id() for c in self._live_comments(where, None))
        return any(
            (c.owner, c.repo, c.id) == (where.owner, where.repo, where.id())
            for c in self.fake.comments
        )


def _choice(query: dict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = query.get(name, default)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _on_branches(pull: FakeIssue, query: dict[str, str]) -> bool:
    """``head`` is ``owner:branch`` (a bare branch: of the base repository's owner)."""
    if "base" in query and pull.base != query["base"]:
        return False
    if "head" not in query:
        return True
    owner, _, branch = query["head"].rpartition(":")
    head_owner = (pull.head_repository or f"{pull.owner}/{pull.repo}").split("/")[0]
    return branch == pull.head and (owner or pull.owner) == head_owner


def _ref(where: Where) -> str:
    ref = urllib.parse.unquote(where.names[0]).removeprefix("refs/")
    return ref.removeprefix("heads/")


def _no_commit(where: Where) -> Answer:
    return Answer(422, {"message": f"No commit found for SHA: {_ref(where)}"})


def combined_state(states: list[str]) -> str:
    if any(state in ("error", "failure") for state in states):
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


# -- the JSON GitHub serves ---------------------------------------------------------


def _user(login: str, user_type: str = "User") -> dict[str, Any]:
    return {"login": login, "type": user_type}


def review_comment_json(
    comment: FakeReviewComment, api_url: str, reactions: dict[str, int]
) -> dict[str, Any]:
    """An inline comment: an outdated one has ``line``, ``start_line`` and ``position``
    null and keeps its ``original_*``; ``in_reply_to_id`` only on a reply; a comment on
    a whole file (``line`` None) has ``subject_type`` file."""
    repository = f"{comment.owner}/{comment.repo}"
    url = f"{api_url}/repos/{repository}/pulls/comments/{comment.id}"
    pull_url = f"{api_url}/repos/{repository}/pulls/{comment.number}"
    html = f"https://github.com/{repository}/pull/{comment.number}#discussion_r{comment.id}"
    placed = not comment.outdated
    position = max(len(comment.diff_hunk.splitlines()) - 1, 1)
    document: dict[str, Any] = {
        "id": comment.id,
        "node_id": f"PRRC_{comment.id}",
        "pull_request_review_id": comment.review_id,
        "url": url,
        "html_url": html,
        "pull_request_url": pull_url,
        "user": _user(comment.login, comment.user_type),
        "body": comment.body,
        "path": comment.path,
        "diff_hunk": comment.diff_hunk,
        "commit_id": comment.commit_id,
        "original_commit_id": comment.original_commit_id,
        "line": comment.line if placed else None,
        "original_line": comment.line,
        "start_line": comment.start_line if placed else None,
        "original_start_line": comment.start_line,
        "side": comment.side,
        "start_side": comment.side if comment.start_line is not None else None,
        "position": position if placed and comment.line is not None else None,
        "original_position": position,
        "subject_type": "line" if comment.line is not None else "file",
        "created_at": iso(comment.created_at),
        "updated_at": iso(comment.updated_at),
        "reactions": {"url": f"{url}/reactions", **reactions},
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "pull_request": {"href": pull_url},
        },
    }
    if comment.in_reply_to_id is not None:
        document["in_reply_to_id"] = comment.in_reply_to_id
    return document


def review_json(review: FakeReview, api_url: str) -> dict[str, Any]:
    repository = f"{review.owner}/{review.repo}"
    pull_url = f"{api_url}/repos/{repository}/pulls/{review.number}"
    html = f"https://github.com/{repository}/pull/{review.number}#pullrequestreview-{review.id}"
    return {
        "id": review.id,
        "node_id": f"PRR_{review.id}",
        "user": _user(review.login, review.user_type),
        "body": review.body,
        "state": review.state,
        "html_url": html,
        "pull_request_url": pull_url,
        "submitted_at": iso(review.submitted_at),
        "commit_id": review.commit_id,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
    }


def check_run_json(run: FakeCheckRun, api_url: str, pulls: list[FakeIssue]) -> dict[str, Any]:
    """A check run; ``pulls``: the pull requests whose head it ran on (GitHub leaves out
    those from forks)."""
    repository = f"{api_url}/repos/{run.owner}/{run.repo}"
    url = f"{repository}/check-runs/{run.id}"
    return {
        "id": run.id,
        "node_id": f"CR_{run.id}",
        "name": run.name,
        "head_sha": run.head_sha,
        "external_id": "",
        "url": url,
        "html_url": run.html_url,
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at) if run.completed_at is not None else None,
        "output": {
            "title": run.title or None,
            "summary": run.summary or None,
            "text": None,
            "annotations_count": 0,
            "annotations_url": f"{url}/annotations",
        },
        "check_suite": {"id": run.id + 500_000},
        "app": {"id": _APP_IDS.get(run.app_slug, 1), "slug": run.app_slug, "name": run.app_slug},
        "pull_requests": [_pull_reference(p, repository) for p in pulls if not p.head_repository],
    }


def _pull_reference(pull: FakeIssue, repository_url: str) -> dict[str, Any]:
    return {
        "id": 1000 + pull.number,
        "number": pull.number,
        "url": f"{repository_url}/pulls/{pull.number}",
        "head": {"ref": pull.head, "sha": pull.head_sha},
        "base": {"ref": pull.base},
    }


def status_json(status: FakeStatus, api_url: str, *, creator: bool = True) -> dict[str, Any]:
    """A commit status: ``target_url`` and ``description`` are null when not set; the
    combined status's entries (``creator`` False) do not name who posted them."""
    document: dict[str, Any] = {
        "id": status.id,
        "node_id": f"SC_{status.id}",
        "url": f"{api_url}/repos/{status.owner}/{status.repo}/statuses/{status.sha}",
        "state": status.state,
        "context": status.context,
        "target_url": status.target_url or None,
        "description": status.description or None,
        "avatar_url": None,
        "created_at": iso(status.created_at),
        "updated_at": iso(status.created_at),
    }
    if creator:
        document["creator"] = _user(status.login)
    return document


def job_json(job: FakeJob, api_url: str) -> dict[str, Any]:
    repository = f"{api_url}/repos/{job.owner}/{job.repo}"
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_url": f"{repository}/actions/runs/{job.run_id}",
        "node_id": f"CR_{job.id}",
        "head_sha": job.head_sha,
        "url": f"{repository}/actions/jobs/{job.id}",
        "html_url": job_page(job),
        "check_run_url": f"{repository}/check-runs/{job.id}",
        "status": job.status,
        "conclusion": job.conclusion,
        "started_at": iso(job.started_at),
        "completed_at": iso(job.completed_at) if job.completed_at is not None else None,
        "name": job.name,
        "workflow_name": job.workflow_name,
        "steps": [dict(step) for step in job.steps],
        "labels": ["ubuntu-latest"],
    }


def reaction_json(reaction: FakeReaction) -> dict[str, Any]:
    return {
        "id": reaction.id,
        "node_id": f"REA_{reaction.id}",
        "user": _user(reaction.login),
        "content": reaction.content,
        "created_at": iso(reaction.created_at),
    }


def _on(kind: str, endpoint: Callable[[PullRoutes, str, Where, Asked], Answer]) -> Endpoint:
    """A reactions endpoint bound to the kind of comment its path names."""
    return lambda routes, where, asked: endpoint(routes, kind, where, asked)


_REPO = r"/repos/([^/]+)/([^/]+)"
_ID = r"(\d+)"
#: (method, path, endpoint): the first match answers; no match falls to the issue routes.
_ENDPOINTS: list[tuple[str, re.Pattern[str], Endpoint]] = [
    (method, re.compile(_REPO + path), endpoint)
    for method, path, endpoint in (
        ("GET", "/pulls", PullRoutes.list_pulls),
        ("GET", "/pulls/comments", PullRoutes.list_review_comments),
        ("GET", f"/pulls/comments/{_ID}", PullRoutes.review_comment),
        ("GET", f"/pulls/{_ID}/comments", PullRoutes.pull_review_comments),
        ("GET", f"/pulls/{_ID}/reviews", PullRoutes.list_reviews),
        ("GET", f"/pulls/{_ID}/reviews/{_ID}", PullRoutes.review),
        ("GET", f"/pulls/{_ID}/reviews/{_ID}/comments", PullRoutes.review_comments_of),
        ("GET", "/commits/(.+)/check-runs", PullRoutes.check_runs),
        ("GET", "/commits/(.+)/status", PullRoutes.combined_status),
        ("GET", "/commits/(.+)/statuses", PullRoutes.list_statuses),
        ("GET", f"/actions/jobs/{_ID}", PullRoutes.job),
        ("GET", f"/actions/jobs/{_ID}/logs", PullRoutes.job_logs),
        ("POST", f"/issues/comments/{_ID}/reactions", _on("issue_comment", PullRoutes.react)),
        ("GET", f"/issues/comments/{_ID}/reactions", _on("issue_comment", PullRoutes.reactions)),
        ("POST", f"/pulls/comments/{_ID}/reactions", _on("review_comment", PullRoutes.react)),
        ("GET", f"/pulls/comments/{_ID}/reactions", _on("review_comment", PullRoutes.reactions)),
        ("POST", f"/issues/{_ID}/reactions", _on("issue", PullRoutes.react)),
        ("GET", f"/issues/{_ID}/reactions", _on("issue", PullRoutes.reactions)),
    )
]
