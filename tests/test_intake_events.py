"""What GitHub said, as the intake's values: an item from the issue object a poll reads
and from the pull-request object a push carries give the same ``Issue``."""

from __future__ import annotations

from typing import Any

from the_loop.intake.events import Issue, comments_from_json, issue_from_json
from the_loop.ref import WorkItemRef

PR = WorkItemRef.parse("github:octo/app#16")
MERGED_AT = "2026-12-01T12:00:00Z"


def test_a_merged_pull_request_reads_the_same_from_the_issue_and_the_pull_objects() -> None:
    common: dict[str, Any] = {
        "state": "closed",
        "title": "Fix it",
        "html_url": "https://github.com/octo/app/pull/16",
        "body": "Closes #15",
        "labels": [{"name": "the-loop"}, {"name": 7}, "x"],
    }
    as_issue = {
        **common,
        "pull_request": {"merged_at": MERGED_AT},
        "closed_by": {"login": "alice"},
    }
    as_pull = {**common, "merged_at": MERGED_AT, "merged_by": {"login": "alice"}}
    expected = Issue(
        PR,
        False,
        merged=True,
        closed_by="alice",
        title="Fix it",
        url="https://github.com/octo/app/pull/16",
        body="Closes #15",
        labels=frozenset({"the-loop"}),
        is_pull=True,
    )
    assert issue_from_json(as_issue, PR) == expected
    assert issue_from_json(as_pull, PR) == expected


def test_an_answer_that_is_not_an_item_reads_as_closed_and_empty() -> None:
    for data in ({}, {"state": "open", "pull_request": {"merged_at": None}}, {"labels": "x"}):
        issue = issue_from_json(data, PR)
        assert (issue.merged, issue.closed_by, issue.title, issue.labels) == (
            False,
            "",
            "",
            frozenset(),
        )
    assert issue_from_json({"state": "open"}, PR).is_open
    assert not issue_from_json({"state": "OPEN"}, PR).is_open


def test_comments_are_deduplicated_in_order_and_a_bad_one_is_skipped_with_a_warning() -> None:
    def entry(comment_id: object, number: int = 15) -> dict[str, Any]:
        return {
            "id": comment_id,
            "issue_url": f"https://api.github.com/repos/octo/app/issues/{number}",
            "user": {"login": "alice", "type": "User"},
            "body": "hi",
            "created_at": "2026-12-01T12:00:00Z",
        }

    warnings: list[str] = []
    found = comments_from_json(
        [entry(3), entry("x"), entry(1, 16), entry(3)], repository=PR, warn=warnings.append
    )
    assert [(c.id, c.work_item.number) for c in found] == [(3, 15), (1, 16)]
    assert warnings == [
        "octo/app: skipping a comment: a comment needs a positive integer id, not 'x'"
    ]
