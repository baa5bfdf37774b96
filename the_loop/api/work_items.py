"""``/api/v1/work-items``: one item per work item this machine knows, the portable record
joined with this machine's session record, its pull requests nested in it.

Built from files alone (the records, the claim book, the poller's status): never tmux,
never GitHub. What needs a person is told from the records by
:mod:`~the_loop.api.needs`; each item carries the kinds that concern it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from the_loop.intake.attention import BLOCKED_KEY
from the_loop.intake.budget_ledger import BUDGET_KEY, SPEND_KEY
from the_loop.intake.ci_round import CI, ESCALATION, FAILING
from the_loop.intake.stall import STALL_KEY
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

Item = dict[str, Any]
_DONE = ("delivered", "given-up")


def work_item(
    ref: str,
    sections: Mapping[str, Any],
    session: Session | None,
    holder: Mapping[str, Any] | None,
    *,
    ci_budget: int = 0,
) -> Item:
    """The item of ``ref``: its record's ``sections``, this machine's ``session`` record and
    the other machine that holds it (``holder``), each None when there is none;
    ``ci_budget`` is ``polling.ci.maxFailingPushes``."""
    item_ref = WorkItemRef.parse(ref)
    poll = _mapping(sections.get("poll"))
    control = _mapping(sections.get("control")) or None
    rows = [cast(Mapping[str, Any], r) for r in poll.get("deliveries", []) if isinstance(r, dict)]
    pulls = _pull_requests(item_ref, sections.get("pullRequests"), session, rows, ci_budget)
    return {
        "ref": ref,
        "url": item_ref.url,
        "title": None,
        "repository": item_ref.repository,
        "session": _session(session, poll),
        "control": control,
        "claim": dict(holder) if holder is not None else None,
        "pullRequests": pulls,
        "deliveries": _counts(row for row in rows if _kind(row) == "comment"),
        "spend": _mapping(poll.get(SPEND_KEY)).get("total"),
        "budget": poll.get(BUDGET_KEY) if isinstance(poll.get(BUDGET_KEY), dict) else None,
        "lastActivity": _latest(session, control),
        "attention": [],
        "nodes": [],
    }


def pull_request_refs(sections: Mapping[str, Any], session: Session | None) -> set[str]:
    """The pull requests an item names (its record's ledgers, its session's endpoints)."""
    named = {ref for ref in _mapping(sections.get("pullRequests")) if _parses(ref)}
    if session is not None:
        named |= {pr.ref for pr in session.pull_requests}
    return named


def _parses(ref: str) -> bool:
    """Whether ``ref`` is a work item's ref (a record may hold any key)."""
    try:
        WorkItemRef.parse(ref)
    except ValueError:
        return False
    return True


def _session(session: Session | None, poll: Mapping[str, Any]) -> Item | None:
    if session is None:
        return None
    return {
        "status": session.status,
        "harness": session.harness,
        "tmuxTarget": session.tmux_target,
        "createdAt": session.created_at,
        "lastEventAt": session.last_event_at,
        "agent": _agent(poll) if session.is_live else None,
    }


def _agent(poll: Mapping[str, Any]) -> Item:
    """What the records say the agent does: blocked (on what) or stalled since when, as the
    daemon that tends it last wrote; ``null`` state when neither."""
    blocked, stalled = _mapping(poll.get(BLOCKED_KEY)), _mapping(poll.get(STALL_KEY))
    if blocked:
        return {"state": "blocked", "blockedOn": blocked.get("on"), "since": blocked.get("since")}
    if stalled:
        return {"state": "stalled", "blockedOn": None, "since": stalled.get("since")}
    return {"state": None, "blockedOn": None, "since": None}


def _pull_requests(
    owner: WorkItemRef,
    ledgers: object,
    session: Session | None,
    rows: list[Mapping[str, Any]],
    ci_budget: int,
) -> list[Item]:
    refs = sorted(pull_request_refs({"pullRequests": ledgers}, session))
    reviews = _counts(row for row in rows if _kind(row) == "review")
    checks = _counts(row for row in rows if _kind(row) == "ci")
    endpoints = {pr.ref: pr for pr in session.pull_requests} if session is not None else {}
    found: list[Item] = []
    for ref in refs:
        pr = WorkItemRef.parse(ref)
        endpoint = endpoints.get(ref)
        found.append(
            {
                "ref": ref,
                "url": pr.url.replace("/issues/", "/pull/"),
                "session": endpoint.status if endpoint is not None else None,
                "reviews": reviews,
                "checks": checks,
                "ci": _ci(_mapping(_mapping(ledgers).get(ref)), ci_budget),
            }
        )
    del owner
    return found


def _ci(ledger: Mapping[str, Any], budget: int) -> Item:
    """The pull request's CI budget: failing pushes in a row, the budget, what is left,
    and whether it was spent (its failures no longer pasted)."""
    ci = _mapping(ledger.get(CI))
    failing: object = ci.get(FAILING)
    count = len(cast(list[object], failing)) if isinstance(failing, list) else 0
    return {
        "failingPushes": count,
        "budget": budget,
        "left": max(0, budget - count),
        "escalated": bool(_mapping(ci.get(ESCALATION))),
    }


def _kind(row: Mapping[str, Any]) -> str:
    key = str(row.get("id", ""))
    return "comment" if key.isdigit() else key.partition("-")[0]


def _counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"waiting": 0, "delivered": 0, "givenUp": 0}
    for row in rows:
        state = str(row.get("state", ""))
        key = (
            "waiting"
            if state not in _DONE
            else ("delivered" if state == "delivered" else "givenUp")
        )
        counts[key] += 1
    return counts


def _latest(session: Session | None, control: Mapping[str, Any] | None) -> str | None:
    stamps = [
        str(stamp)
        for stamp in (
            session.last_event_at if session is not None else None,
            session.created_at if session is not None else None,
            control.get("requestedAt") if control is not None else None,
        )
        if stamp
    ]
    return max(stamps) if stamps else None


def _mapping(value: object) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, dict) else {}


__all__ = ["Item", "pull_request_refs", "work_item"]
