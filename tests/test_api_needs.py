"""What needs a person, told from an item's records (the_loop.api.needs): each kind from
the ledger that says it, and nothing from an item that needs nothing."""

from __future__ import annotations

import json
from typing import Any

from the_loop.api.needs import PENDING_TOO_LONG_SECONDS, dying, item_needs, ordered, root_needs
from the_loop.api.work_items import work_item
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

REF = "github:octo/app#15"
NOW = 1_800_000_000.0


def _kinds(sections: dict[str, Any], *, live: bool = True) -> list[str]:
    session = Session(WorkItemRef.parse(REF), "command", "s-1") if live else None
    item = work_item(REF, sections, session, None)
    return sorted(need["kind"] for need in item_needs(item, sections, now=NOW))


def test_an_item_that_needs_nothing_is_not_listed() -> None:
    quiet = {"poll": {"deliveries": [{"id": "1", "state": "delivered", "at": NOW - 5}]}}
    assert _kinds(quiet) == []
    assert _kinds({"control": {"command": "start"}}) == []  # live here: nothing armed alone


def test_each_kind_from_the_ledger_that_says_it() -> None:
    tried = NOW - PENDING_TOO_LONG_SECONDS - 1
    sections: dict[str, Any] = {
        "poll": {
            "blocked": {"on": "permission", "since": NOW - 60},
            "budget": {"exceeded": {"kind": "usd", "at": NOW - 30}},
            "deliveries": [
                {"id": "1", "state": "given-up", "at": NOW - 90},
                {"id": "2", "state": "pending", "tried": tried},
                {"id": "3", "state": "pasted", "tried": NOW - 1},
            ],
        },
        "pullRequests": {"github:octo/app#16": {"ci": {"escalation": {"failingPushes": 3}}}},
    }
    assert _kinds(sections) == ["blocked", "budget", "ci-budget", "given-up", "pending-too-long"]
    assert _kinds({"poll": {"stall": {"since": NOW - 200}}}) == ["stalled"]
    assert _kinds({"control": {"command": "start"}}, live=False) == ["armed-without-session"]


def test_root_needs_dying_and_their_order() -> None:
    import time

    from the_loop.github.backoff import Backoff, Backoffs

    now = time.time()
    token = Backoff(1, now + 900, "rate limit")
    backoffs = Backoffs(token, {"octo/app": Backoff(3, now + 600, "502 from GitHub")})
    status = {**backoffs.to_dict(now), "finishedAt": "2027-01-15T07:59:50Z"}  # as the poller
    limited, backing = root_needs(status, now=NOW)
    assert (limited["ref"], limited["kind"], limited["ageSeconds"]) == (None, "rate-limited", 10.0)
    assert "rate limit" in limited["detail"]
    assert backing["kind"] == "backoff" and "octo/app backs off until" in backing["detail"]
    assert "3 failures: 502 from GitHub" in backing["detail"]
    assert root_needs({"backoff": {"failures": 0, "resumeAt": 0.0, "reason": ""}}, now=NOW) == []
    lines = [
        {"event": "session.exited_again", "work_item": REF, "ts": "2027-01-15T08:00:00Z"},
        {"event": "session.exited_again", "work_item": "github:octo/app#20", "ts": "x"},
        {"event": "session.spawned", "work_item": "github:octo/app#20"},
    ]
    tail = b"cut half line\n" + b"\n".join(json.dumps(line).encode() for line in lines)
    [died] = dying(tail, [REF, "github:octo/app#20"], now=NOW)
    assert (died["ref"], died["kind"], died["since"]) == (REF, "dying", "2027-01-15T08:00:00Z")
    later = {"ref": "b", "kind": "x", "since": "2027-01-02T00:00:00Z"}
    earlier = {"ref": "a", "kind": "x", "since": "2027-01-01T00:00:00Z"}
    timeless = {"ref": "c", "kind": "x", "since": None}
    assert ordered([timeless, later, earlier]) == [earlier, later, timeless]


def test_a_pull_requests_ci_budget_is_what_its_ledger_counts() -> None:
    ledgers = {"github:octo/app#16": {"ci": {"failing": ["a", "b"], "escalation": {}}}}
    item = work_item(REF, {"pullRequests": ledgers}, None, None, ci_budget=3)
    [pr] = item["pullRequests"]
    assert pr["ci"] == {"failingPushes": 2, "budget": 3, "left": 1, "escalated": False}
    spent = {"github:octo/app#16": {"ci": {"failing": ["a", "b", "c"], "escalation": {"x": 1}}}}
    [pr] = work_item(REF, {"pullRequests": spent}, None, None, ci_budget=3)["pullRequests"]
    assert (pr["ci"]["left"], pr["ci"]["escalated"]) == (0, True)
