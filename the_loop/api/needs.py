"""``/api/v1/attention``: what needs a person, oldest first, told from the records and the
poller's status as soon as they say it, and from a bounded tail of the event log (an
agent that keeps dying): never a scan of the whole log.

Each need is ``{ref, kind, detail, since, ageSeconds}``; ``ref`` is ``null`` for one that
concerns the whole state root (a back-off or a rate limit in force).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from the_loop.api.work_items import Item
from the_loop.intake.ci_round import CI, ESCALATION

#: How long a paste may stay pending or unconfirmed before a person should look.
PENDING_TOO_LONG_SECONDS = 600.0
#: How much of the event log's end is read for an agent that keeps dying.
TAIL_BYTES = 256 * 1024
Need = dict[str, Any]


def item_needs(item: Item, sections: Mapping[str, Any], *, now: float) -> list[Need]:
    """What ``item`` (with its record's ``sections``) needs of a person."""
    ref, poll = item["ref"], _mapping(sections.get("poll"))
    needs: list[Need] = []
    session = item.get("session")
    agent = _mapping(_mapping(session).get("agent"))
    if agent.get("state") == "blocked":
        needs.append(
            _need(
                ref,
                "blocked",
                f"the agent waits on {agent.get('blockedOn')}",
                agent.get("since"),
                now,
            )
        )
    if agent.get("state") == "stalled":
        needs.append(_need(ref, "stalled", "the agent shows no progress", agent.get("since"), now))
    exceeded = _mapping(_mapping(item.get("budget")).get("exceeded"))
    if exceeded:
        detail = f"over its budget ({exceeded.get('kind') or 'a limit'}): comments are held"
        needs.append(_need(ref, "budget", detail, exceeded.get("at") or exceeded.get("since"), now))
    rows: object = poll.get("deliveries")
    for row in cast(list[object], rows) if isinstance(rows, list) else []:
        if isinstance(row, dict):
            needs += _delivery_needs(ref, cast(Mapping[str, Any], row), now)
    for pr, ledger in _mapping(sections.get("pullRequests")).items():
        escalation = _mapping(_mapping(_mapping(ledger).get(CI)).get(ESCALATION))
        if escalation:
            pushes = escalation.get("failingPushes") or "several"
            detail = (
                f"CI of {pr} failed on {pushes} pushes in a row: its failures are no longer pasted"
            )
            since = escalation.get("at") or escalation.get("postedAt")
            needs.append(_need(ref, "ci-budget", detail, since, now))
    control = _mapping(item.get("control"))
    live = session is not None and _mapping(session).get("status") in ("active", "paused")
    if control.get("command") == "start" and not live and item.get("claim") is None:
        needs.append(
            _need(
                ref,
                "armed-without-session",
                "started, but no live session here",
                control.get("requestedAt"),
                now,
            )
        )
    return needs


def _delivery_needs(ref: str, row: Mapping[str, Any], now: float) -> list[Need]:
    state, key = str(row.get("state", "")), str(row.get("id", ""))
    if state == "given-up":
        return [
            _need(
                ref,
                "given-up",
                f"the paste of {key} was given up",
                row.get("at") or row.get("tried"),
                now,
            )
        ]
    tried = row.get("tried")
    late = isinstance(tried, int | float) and now - float(tried) > PENDING_TOO_LONG_SECONDS
    if state in ("pending", "pasted") and late:
        return [_need(ref, "pending-too-long", f"the paste of {key} is still {state}", tried, now)]
    return []


def pending_deadline(sections: Mapping[str, Any]) -> float | None:
    """When the first paste still pending or unconfirmed in ``sections`` becomes
    ``pending-too-long`` (None when there is none): until then the needs stand."""
    rows: object = _mapping(sections.get("poll")).get("deliveries")
    times: list[float] = []
    for row in cast(list[object], rows) if isinstance(rows, list) else []:
        shown = _mapping(row)
        tried: object = shown.get("tried")
        if shown.get("state") in ("pending", "pasted") and isinstance(tried, int | float):
            times.append(float(tried) + PENDING_TOO_LONG_SECONDS)
    return min(times, default=None)


def root_needs(poll_status: object, *, now: float) -> list[Need]:
    """What the poller's last status says of the whole root, as ``poll status`` reads it:
    GitHub's rate limit holding the token, and each repository backing off."""
    from the_loop.commands.poll_backoff import status_waits

    waits, _lines = status_waits(poll_status)
    since = _mapping(poll_status).get("finishedAt")
    needs: list[Need] = []
    token = _mapping(waits.get("rateLimited"))
    if token:
        detail = f"GitHub's rate limit holds until {token.get('until')}: {token.get('reason')}"
        needs.append(_need(None, "rate-limited", detail, since, now))
    held: object = waits.get("backingOff")
    for entry in cast(list[object], held) if isinstance(held, list) else []:
        shown = _mapping(entry)
        detail = (
            f"{shown.get('repository')} backs off until {shown.get('until')} after "
            f"{shown.get('failures')} failures: {shown.get('reason')}"
        )
        needs.append(_need(None, "backoff", detail, since, now))
    return needs


def dying(tail: bytes, live: Iterable[str], *, now: float) -> list[Need]:
    """The live items whose agent exited again after a restart, as the log's ``tail`` says
    (the latest such event each, when no later spawn or close of the item follows it)."""
    wanted, last = set(live), dict[str, Mapping[str, Any]]()
    for line in tail.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the tail's cut first line, or a corrupt one
        if not isinstance(event, dict):
            continue
        known = cast(Mapping[str, Any], event)
        ref = known.get("work_item")
        if ref not in wanted:
            continue
        if known.get("event") == "session.exited_again":
            last[str(ref)] = known
        elif known.get("event") in ("session.spawned", "session.closed"):
            last.pop(str(ref), None)
    return [
        _need(ref, "dying", "its agent keeps exiting", event.get("ts"), now)
        for ref, event in last.items()
    ]


def ordered(needs: Iterable[Need]) -> list[Need]:
    """Oldest first (one without a time last), then by ref and kind."""
    return sorted(
        needs,
        key=lambda need: (
            need["since"] is None,
            need["since"] or "",
            need["ref"] or "",
            need["kind"],
        ),
    )


def _need(ref: str | None, kind: str, detail: str, since: object, now: float) -> Need:
    at = _timestamp(since)
    age = max(0.0, now - at.timestamp()) if at is not None else None
    return {
        "ref": ref,
        "kind": kind,
        "detail": detail,
        "since": at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None,
        "ageSeconds": round(age, 1) if age is not None else None,
    }


def _timestamp(value: object) -> datetime | None:
    """``value`` (epoch seconds or an ISO time) as a UTC time; None for anything else,
    one out of range included (a record may hold any number)."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return datetime.fromtimestamp(float(value), UTC)
        if isinstance(value, str) and value:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, dict) else {}


__all__ = ["Need", "dying", "item_needs", "ordered", "pending_deadline", "root_needs"]
