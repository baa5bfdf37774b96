"""Every event and action the receiver acts on, as GitHub sends it whole: each payload in
``tests/payloads/`` has every field of GitHub's published example of that event and
action (its webhook documentation and its SDK's payload examples), with this project's
own values. Each one is run through the receiver (its checks and its inbox) and through
the translation, and gives the push the intake is fed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from the_loop.intake.events import Issue, IssueComment
from the_loop.intake.pulls import PullRequest
from the_loop.intake.reviews import Review
from the_loop.ref import WorkItemRef
from the_loop.webhook.inbox import Inbox
from the_loop.webhook.rules import Answer, check_signature, read_delivery, signature
from the_loop.webhook.translate import ACTIONS, Push, translate
from the_loop.webhook.wire import parse_head

PAYLOADS = Path(__file__).parent / "payloads"
REPOSITORY = "lumen-works/tide-gauge"
ISSUE = WorkItemRef.parse(f"github:{REPOSITORY}#42")
PULL = WorkItemRef.parse(f"github:{REPOSITORY}#57")
HEAD = "5549fbcd7cf2be37dfdfb70d10f9f8ecb97020ae"
NEW_HEAD = "fe0c8e9be9bfdaa76b56b640191415d5def1d9f6"
HEAD_BRANCH = "loop/github-lumen-works-tide-gauge-42"
ISSUE_TITLE = "The float reading drifts after a restart"
ISSUE_BODY = "After a power cycle the level reads 4 cm high until the next tide."
PULL_TITLE = "Re-read the float's zero offset after a restart"
PULL_BODY = "Re-reads the zero offset after a restart.\n\nFixes #42"
LABELS = frozenset({"the-loop", "sensors"})


def payload(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((PAYLOADS / name).read_text("utf-8"))
    return document


def pushed(name: str) -> Push:
    """The push of ``tests/payloads/<name>``; its event is the folder's name."""
    return translate(f"d-{name}", name.split("/")[0], payload(name))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def the_issue(**changed: Any) -> Issue:
    """Issue 42 as every payload about it describes it, but for ``changed``."""
    described: dict[str, Any] = {
        "ref": ISSUE,
        "is_open": True,
        "title": ISSUE_TITLE,
        "url": f"https://github.com/{REPOSITORY}/issues/42",
        "body": ISSUE_BODY,
        "labels": LABELS,
        "author": "rosa-ibarra",
    }
    return Issue(**(described | changed))


def the_comment(**changed: Any) -> IssueComment:
    described: dict[str, Any] = {
        "id": 3990012001,
        "work_item": ISSUE,
        "login": "rosa-ibarra",
        "user_type": "User",
        "body": "Could you also check the offset after a brown-out?",
        "html_url": f"https://github.com/{REPOSITORY}/issues/42#issuecomment-3990012001",
        "created_at": at("2026-03-02T09:14:30"),
        "updated_at": at("2026-03-02T09:14:30"),
    }
    return IssueComment(**(described | changed))


def the_pull(**changed: Any) -> PullRequest:
    described: dict[str, Any] = {
        "ref": PULL,
        "head_branch": HEAD_BRANCH,
        "head_repository": REPOSITORY,
        "head_sha": HEAD,
        "body": PULL_BODY,
        "author": "tide-bot",
        "is_open": True,
    }
    return PullRequest(**(described | changed))


def the_pull_as_an_item(**changed: Any) -> Issue:
    described: dict[str, Any] = {
        "ref": PULL,
        "is_open": True,
        "title": PULL_TITLE,
        "url": f"https://github.com/{REPOSITORY}/pull/57",
        "body": PULL_BODY,
        "labels": frozenset({"the-loop"}),
        "author": "tide-bot",
        "is_pull": True,
    }
    return Issue(**(described | changed))


def fixtures() -> list[str]:
    return sorted(str(path.relative_to(PAYLOADS)) for path in PAYLOADS.rglob("*.json"))


def test_every_event_and_action_the_receiver_acts_on_has_a_whole_payload_here() -> None:
    here = {(name.split("/")[0], str(payload(name).get("action", ""))) for name in fixtures()}
    acted_on = {(event, action) for event, actions in ACTIONS.items() for action in actions}
    assert acted_on - here == set()
    assert here - acted_on == set()  # nothing here the receiver does not act on


@pytest.mark.parametrize("name", fixtures())
def test_each_payload_passes_the_receivers_checks_and_the_inbox_unchanged(
    name: str, tmp_path: Path
) -> None:
    """Signed as GitHub signs it, read by the receiver's checks, stored in the inbox and
    read back: the same push as the payload itself gives."""
    event, body = name.split("/")[0], (PAYLOADS / name).read_bytes()
    sent = (
        f"POST /gh-webhook HTTP/1.1\r\nX-GitHub-Event: {event}\r\n"
        f"X-GitHub-Delivery: 5c4a7f0e-16b9-11f1-8a3e-2b6c0d9e1f47\r\n"
        f"X-Hub-Signature-256: {signature(b'tide', body)}\r\n\r\n"
    )
    head = parse_head(sent.encode("latin-1"))
    assert check_signature(head, body, b"tide") is None
    received = read_delivery(head, body)
    assert not isinstance(received, Answer)
    inbox = Inbox(tmp_path / "inbox", lock_path=tmp_path / "inbox.lock")
    inbox.open()
    assert inbox.store(
        event=received.event,
        delivery_id=received.delivery_id,
        text=received.text,
        received_at="2026-03-02T10:00:00.000Z",
    )
    [entry] = inbox.pending()
    stored = inbox.read(entry)
    assert stored.payload == payload(name)
    push = translate(stored.delivery_id, stored.event, stored.payload)
    assert push == translate(received.delivery_id, event, payload(name))
    assert push.kind != "ignored" or push.action == "deleted", push.reason


def test_issue_comment_created_is_the_comment_and_its_issue() -> None:
    push = pushed("issue_comment/created.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "issue_comment",
        "created",
        "comment",
        REPOSITORY,
    )
    assert push.comment == the_comment()
    assert push.comment is not None and not push.comment.edited
    assert push.issue == the_issue()
    assert (push.pull, push.review, push.head_sha) == (None, None, "")


def test_issue_comment_created_on_a_pull_request_is_on_the_pull_request() -> None:
    push = pushed("issue_comment/created.on-pull-request.json")
    assert push.kind == "comment"
    assert push.comment == the_comment(
        id=3990012002,
        work_item=PULL,
        body="Please keep the old reading in the log line.",
        html_url=f"https://github.com/{REPOSITORY}/pull/57#issuecomment-3990012002",
    )
    assert push.issue == the_pull_as_an_item()


def test_issue_comment_edited_is_the_comment_edited() -> None:
    push = pushed("issue_comment/edited.json")
    assert (push.action, push.kind) == ("edited", "comment")
    assert push.comment == the_comment(updated_at=at("2026-03-02T09:20:00"))
    assert push.comment is not None and push.comment.edited
    assert push.issue == the_issue()


def test_issue_comment_deleted_is_its_issue_and_nothing_to_deliver() -> None:
    push = pushed("issue_comment/deleted.json")
    assert (push.action, push.kind, push.comment) == ("deleted", "ignored", None)
    assert push.reason == "a deleted comment: nothing is delivered for it"
    assert push.issue == the_issue()


@pytest.mark.parametrize(
    ("action", "issue"),
    [
        ("opened", the_issue()),
        ("edited", the_issue()),
        ("closed", the_issue(is_open=False)),
        ("reopened", the_issue()),
        ("labeled", the_issue()),
        ("unlabeled", the_issue(labels=frozenset({"sensors"}))),
        ("deleted", the_issue(is_open=False, gone="GitHub says it was deleted")),
        (
            "transferred",
            the_issue(is_open=False, gone="GitHub says it was transferred to another repository"),
        ),
    ],
)
def test_each_issues_action_is_the_issue_as_github_describes_it(action: str, issue: Issue) -> None:
    push = pushed(f"issues/{action}.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "issues",
        action,
        "item",
        REPOSITORY,
    )
    assert push.issue == issue
    assert (push.comment, push.pull) == (None, None)


@pytest.mark.parametrize("action", ["opened", "reopened", "edited"])
def test_a_pull_request_opened_reopened_or_edited_is_the_pull_and_its_item(action: str) -> None:
    push = pushed(f"pull_request/{action}.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "pull_request",
        action,
        "pull",
        REPOSITORY,
    )
    assert push.pull == the_pull()
    assert push.issue == the_pull_as_an_item()


def test_a_pull_request_synchronized_carries_its_new_head() -> None:
    push = pushed("pull_request/synchronize.json")
    assert (push.action, push.kind) == ("synchronize", "pull")
    assert push.pull == the_pull(head_sha=NEW_HEAD)
    assert push.issue == the_pull_as_an_item()


def test_a_pull_request_closed_by_its_merge_is_closed_merged_and_by_whom() -> None:
    push = pushed("pull_request/closed.json")
    assert (push.action, push.kind) == ("closed", "pull")
    assert push.pull == the_pull(is_open=False)
    assert push.issue == the_pull_as_an_item(is_open=False, merged=True, closed_by="kofi-mensah")


def test_a_pull_request_review_submitted_is_the_review_to_read() -> None:
    push = pushed("pull_request_review/submitted.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "pull_request_review",
        "submitted",
        "review",
        REPOSITORY,
    )
    assert push.review == Review(
        id=2760004411,
        pull_request=PULL,
        login="kofi-mensah",
        user_type="User",
        state="CHANGES_REQUESTED",
        body="The offset is read twice; once is enough.",
        html_url=f"https://github.com/{REPOSITORY}/pull/57#pullrequestreview-2760004411",
        submitted_at=at("2026-03-02T10:12:00"),
    )
    assert push.review is not None and push.review.submitted
    assert (push.pull_request, push.review_id) == (PULL, 2760004411)


def test_a_pull_request_review_comment_created_names_its_review() -> None:
    push = pushed("pull_request_review_comment/created.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "pull_request_review_comment",
        "created",
        "review",
        REPOSITORY,
    )
    assert (push.pull_request, push.review_id, push.review) == (PULL, 2760004411, None)


def test_a_check_run_completed_is_its_head_and_the_pull_requests_it_heads() -> None:
    push = pushed("check_run/completed.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "check_run",
        "completed",
        "checks",
        REPOSITORY,
    )
    assert (push.head_sha, push.pull_numbers) == (HEAD, (57,))


def test_a_status_is_the_commit_whose_checks_to_read() -> None:
    push = pushed("status/status.json")
    assert (push.event, push.action, push.kind, push.repository) == (
        "status",
        "",
        "checks",
        REPOSITORY,
    )
    assert (push.head_sha, push.pull_numbers) == (HEAD, ())
