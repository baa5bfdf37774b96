"""One delivery of the inbox as the intake takes it: a :class:`Push`, plain values only.

GitHub's webhook payloads carry the same objects as its REST answers, so the intake's
own translators (:func:`~the_loop.intake.events.comment_from_json`,
:func:`~the_loop.intake.events.issue_from_json`, ...) read them. What a push does not
carry whole (a review's inline comments, a check's log) is named here and read by the
feed (:mod:`~the_loop.webhook.feed`):

- ``issue_comment`` ``created`` / ``edited``: the comment and its item as GitHub
  describes it now (``deleted`` is settled: the comment is gone, and a paste of it
  already waiting goes on as the poller's would);
- ``issues`` ``closed`` / ``reopened`` / ``labeled`` / ``unlabeled`` (and ``opened``,
  ``edited``, ``deleted``, ``transferred``): the item, for the watched set and closures;
- ``pull_request`` ``opened`` / ``reopened`` / ``synchronize`` / ``edited`` (linking and
  the head) and ``closed`` (closed or merged): the pull request and its item;
- ``pull_request_review`` ``submitted`` and ``pull_request_review_comment`` ``created``:
  the review to read (its pull request and id);
- ``check_run`` ``completed`` and ``status``: the head SHA whose checks to read.

Anything else is ignored, with the reason said. A payload without what its event needs
is ignored too (a sentence says what was missing); translation never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from the_loop.intake.events import Issue, IssueComment, comment_from_json, issue_from_json
from the_loop.intake.pulls import PullRequest, pull_from_json
from the_loop.intake.reviews import Review, review_from_json
from the_loop.ref import WorkItemRef

Kind = Literal["comment", "item", "pull", "review", "checks", "ignored"]

#: The actions of each event the intake acts on.
ACTIONS: Mapping[str, frozenset[str]] = {
    "issue_comment": frozenset({"created", "edited", "deleted"}),
    "issues": frozenset(
        {"opened", "edited", "closed", "reopened", "labeled", "unlabeled", "deleted", "transferred"}
    ),
    "pull_request": frozenset({"opened", "reopened", "synchronize", "edited", "closed"}),
    "pull_request_review": frozenset({"submitted"}),
    "pull_request_review_comment": frozenset({"created"}),
    "check_run": frozenset({"completed"}),
    "status": frozenset({""}),
}


@dataclass(frozen=True)
class Push:
    """What one delivery says: its ``kind`` and the values it carries.

    ``repository`` is ``owner/repo`` as a work-item ref spells it, in lowercase (``""``:
    none was named; GitHub's names ignore case).
    ``issue`` is the item as the payload describes it (an ``issue_comment``'s too);
    ``review_id`` with ``pull_request`` names a review to read; ``head_sha`` names a
    head whose checks to read, ``pull_numbers`` the pull requests GitHub says it heads.
    """

    delivery_id: str
    event: str
    action: str
    kind: Kind
    repository: str = ""
    comment: IssueComment | None = None
    issue: Issue | None = None
    pull: PullRequest | None = None
    review: Review | None = None
    pull_request: WorkItemRef | None = None
    review_id: int = 0
    head_sha: str = ""
    pull_numbers: tuple[int, ...] = ()
    #: Why it is ignored (``kind`` ``ignored``), as a sentence.
    reason: str = ""

    @property
    def repository_ref(self) -> WorkItemRef:
        return WorkItemRef.parse(f"github:{self.repository}#1")


def translate(delivery_id: str, event: str, payload: Mapping[str, Any]) -> Push:
    """The push ``payload`` of ``event`` makes (never raises: what cannot be read is
    ``ignored``, with the reason)."""
    action = _text(payload, "action")
    base = Push(delivery_id, event, action, "ignored")
    if event not in ACTIONS:
        return _ignored(base, f"{event} events are not acted on")
    if action not in ACTIONS[event]:
        return _ignored(base, f"{event} {action or '(no action)'} is not acted on")
    repository = _text(_object(payload, "repository"), "full_name")
    try:
        ref = WorkItemRef.parse(f"github:{repository}#1")
    except ValueError:
        ref = None
    if ref is None or ref.host or repository.count("/") != 1:  # GitHub says owner/repo only
        return _ignored(base, "the payload names no repository GitHub could have sent")
    base = Push(delivery_id, event, action, "ignored", repository=f"{ref.owner}/{ref.repo}")
    try:
        return _READERS[event](base, payload, ref)
    except ValueError as error:
        return _ignored(base, f"the payload cannot be read: {error}")


def _issue_comment(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    number = _number(_object(payload, "issue").get("number"), "the issue")
    item = repository.with_number(number)
    issue = issue_from_json(_object(payload, "issue"), item)
    if base.action == "deleted":
        return _ignored(base, "a deleted comment: nothing is delivered for it", issue=issue)
    data = dict(_object(payload, "comment"))
    # A webhook's comment carries issue_url as the REST answer does; say it when it does not.
    data.setdefault("issue_url", f"https://api.github.com/repos/{base.repository}/issues/{number}")
    comment = comment_from_json(data, repository=repository)
    return _with(base, "comment", comment=comment, issue=issue)


def _issues(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    data = _object(payload, "issue")
    issue = issue_from_json(data, repository.with_number(_number(data.get("number"), "the issue")))
    if base.action in _GONE:  # the payload still says open: the item is gone all the same
        issue = replace(issue, is_open=False, gone=_GONE[base.action])
    return _with(base, "item", issue=issue)


#: What an ``issues`` action that takes the item away from this repository says of it.
_GONE = {
    "deleted": "GitHub says it was deleted",
    "transferred": "GitHub says it was transferred to another repository",
}


def _pull_request(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    data = _object(payload, "pull_request")
    pull = pull_from_json(data, repository=repository)
    issue = issue_from_json(data, pull.ref)
    return _with(base, "pull", pull=pull, issue=issue)


def _review(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    number = _number(_object(payload, "pull_request").get("number"), "the pull request")
    pr = repository.with_number(number)
    review = review_from_json(_object(payload, "review"), pull_request=pr)
    return _with(base, "review", review=review, pull_request=pr, review_id=review.id)


def _review_comment(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    number = _number(_object(payload, "pull_request").get("number"), "the pull request")
    comment = _object(payload, "comment")
    review_id = _number(comment.get("pull_request_review_id"), "the comment's review")
    pr = repository.with_number(number)
    return _with(base, "review", pull_request=pr, review_id=review_id)


def _check_run(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    run = _object(payload, "check_run")
    sha = _sha(_text(run, "head_sha"))
    pulls = run.get("pull_requests")
    listed = cast(list[Any], pulls) if isinstance(pulls, list) else []
    numbers = tuple(
        n
        for n in (cast(Mapping[str, Any], p).get("number") for p in listed if isinstance(p, dict))
        if isinstance(n, int) and not isinstance(n, bool) and n > 0
    )
    return _with(base, "checks", head_sha=sha, pull_numbers=numbers)


def _status(base: Push, payload: Mapping[str, Any], repository: WorkItemRef) -> Push:
    return _with(base, "checks", head_sha=_sha(_text(payload, "sha")))


_READERS = {
    "issue_comment": _issue_comment,
    "issues": _issues,
    "pull_request": _pull_request,
    "pull_request_review": _review,
    "pull_request_review_comment": _review_comment,
    "check_run": _check_run,
    "status": _status,
}


def _with(base: Push, kind: Kind, **values: Any) -> Push:
    return replace(base, kind=kind, **values)


def _ignored(base: Push, reason: str, **values: Any) -> Push:
    return _with(base, "ignored", reason=reason, **values)


def _sha(text: str) -> str:
    if len(text) not in (40, 64) or any(c not in "0123456789abcdef" for c in text):
        raise ValueError("no head SHA")
    return text


def _number(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} has no number")
    return value


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""
