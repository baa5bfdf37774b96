"""One poll cycle over every watched repository (steps 1–9 of the poller's contract).

Per repository: list the watched items, read the comments since the cursor, handle
each new comment in order (settle, command, deliver, hold, or see), deliver what
waits, apply closures, then move the cursor. A repository that fails is reported and
the others still run. An idle cycle (every read a 304) writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from the_loop.errors import TheLoopError
from the_loop.polling.comments import (
    ItemView,
    Outcome,
    SessionState,
    classify_comment,
)
from the_loop.polling.delivery import delivery_text
from the_loop.polling.drain import drain
from the_loop.polling.first_sight import first_sight
from the_loop.polling.github_comment import Comment, comment_from_json, parse_timestamp
from the_loop.polling.ports import (
    CycleCounts,
    CyclePorts,
    ItemFacts,
    Json,
    LiveSession,
    PollSettings,
)
from the_loop.polling.watched import (
    ClosureAction,
    ItemState,
    KnownState,
    OpenItem,
    Role,
    WatchedSet,
    decide_closure,
    open_item_from_json,
    watched_set,
)
from the_loop.portable.control import ControlRecord
from the_loop.portable.poll import DELIVERIES, Ledger, PollState
from the_loop.ref import WorkItemRef

#: How far before the cursor each read starts: comments GitHub stamps late still arrive.
CURSOR_OVERLAP = timedelta(seconds=120)


@dataclass
class _Repository:
    """What one repository's cycle knows: its watched set, sessions, and ticket facts."""

    ref: WorkItemRef
    watched: WatchedSet
    sessions: dict[WorkItemRef, LiveSession]
    facts: dict[WorkItemRef, Json]


def run_cycle(settings: PollSettings, ports: CyclePorts, polls: PollState) -> CycleCounts:
    """Run one cycle; a repository that fails is named in ``failed``, the others still run."""
    counts = CycleCounts()
    for name in settings.repositories:
        if counts.stop_requested(ports.should_stop):
            break
        try:
            _cycle_repository(name, settings, ports, polls, counts)
        except TheLoopError as error:
            counts.failed.append(f"{name}: {error}")
    return counts


def _cycle_repository(
    name: str, settings: PollSettings, ports: CyclePorts, polls: PollState, counts: CycleCounts
) -> None:
    repo = _watch(name, settings, ports)
    cursor = ports.cursors.get(name)
    since = None if cursor is None else _iso(parse_timestamp(cursor) - CURSOR_OVERLAP)
    page = ports.github.comments_since(name, since)
    if ports.github.rate_low():
        ports.emit("poll.rate_limited", "warning", repository=name, step="comments")
        counts.deferred.append(name)
        return  # below the reserve: only the reads; the cursor stays for the next cycle
    newest = cursor
    if not page.not_modified:
        comments = _comments(page.entries, repo.ref, ports)
        first_seen: set[WorkItemRef] = set()
        for comment in comments:
            if counts.stop_requested(ports.should_stop):
                break  # the cursor stays short of every comment not handled
            _handle(comment, repo, settings, ports, polls, counts, first_seen)
            ports.checkpoint(f"after-comment-{comment.id}")
            stamp = _iso(comment.updated_at)
            newest = stamp if newest is None or stamp > newest else newest
    for session in ports.sessions():  # as the commands just left them
        if counts.stop_requested(ports.should_stop):
            break
        if session.ref in repo.watched and session.state is SessionState.ACTIVE:
            drain(session, polls=polls, ports=ports, settings=settings, counts=counts)
    if not counts.stop_requested(ports.should_stop):
        _closures(repo, settings, ports, polls, counts)
    if newest is not None and newest != cursor:
        ports.cursors.set(name, newest)


def _watch(name: str, settings: PollSettings, ports: CyclePorts) -> _Repository:
    """Step 1: the open labelled items, plus live sessions, their PRs and armed refs."""
    ref = WorkItemRef.parse(f"github:{name}#1")
    listing = ports.github.open_items(name, settings.labels)
    items: list[OpenItem] = []
    facts: dict[WorkItemRef, Json] = {}
    for data in listing:
        try:
            item = open_item_from_json(data, repository=ref)
        except ValueError as error:
            ports.warn(f"{name}: skipping an item GitHub listed: {error}")
            continue
        items.append(item)
        facts[item.ref] = data
    sessions = {s.ref: s for s in ports.sessions() if _same_repository(s.ref, ref)}
    linked = [pr for s in sessions.values() for pr in s.pull_requests]
    armed = [a for a in ports.armed() if _same_repository(a, ref)]
    watched = watched_set(
        items,
        labels=settings.labels,
        live_sessions=sessions,
        linked_pull_requests=linked,
        armed=armed,
    )
    return _Repository(ref, watched, sessions, facts)


def _same_repository(a: WorkItemRef, b: WorkItemRef) -> bool:
    return (a.host, a.owner.casefold(), a.repo.casefold()) == (
        b.host,
        b.owner.casefold(),
        b.repo.casefold(),
    )


def _comments(entries: Sequence[Json], repository: WorkItemRef, ports: CyclePorts) -> list[Comment]:
    """The listing's comments, deduplicated by id, in the order GitHub gave them."""
    comments: dict[int, Comment] = {}
    for data in entries:
        try:
            comment = comment_from_json(data, repository=repository)
        except ValueError as error:
            ports.warn(f"{repository.owner}/{repository.repo}: skipping a comment: {error}")
            continue
        comments.setdefault(comment.id, comment)
    return list(comments.values())


def _handle(
    comment: Comment,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
    first_seen: set[WorkItemRef],
) -> None:
    """Steps 3–5 and 7 for one comment."""
    ref = comment.work_item
    if ref in first_seen:
        return  # its whole thread was baselined this cycle
    watched = ref in repo.watched
    if watched and not polls.is_known(ref):
        first_seen.add(ref)
        _first_sight(ref, repo, settings, ports, polls, counts)
        return
    session = repo.sessions.get(ref)
    state = session.state if session is not None else SessionState.NONE
    seen: frozenset[int] = frozenset()
    if watched:
        seen = frozenset(int(i) for i in polls.seen_comments(ref) if i.isdigit())
    view = ItemView(watched, state, seen)
    decision = classify_comment(comment, view, settings.policy, posted_ids=ports.cursors.posted())
    who = comment.login
    if decision.event == "poll.unauthorized":
        ports.emit(
            "poll.unauthorized", "warning", work_item=ref.ref, comment_id=comment.id, login=who
        )
    elif decision.event == "poll.ambiguous":
        verbs = list(decision.ambiguous_verbs)
        ports.emit(
            "poll.ambiguous",
            "warning",
            work_item=ref.ref,
            comment_id=comment.id,
            login=who,
            verbs=verbs,
        )
    if decision.outcome is Outcome.COMMAND and decision.verb is not None:
        _command(comment, decision.verb, repo, ports, polls, counts)
    elif decision.outcome in (Outcome.DELIVER, Outcome.HOLD):
        _queue(comment, decision.outcome, decision.trusted, polls, ports)
        counts.held += decision.outcome is Outcome.HOLD
    elif decision.outcome is Outcome.SEEN:
        polls.resolve_comment(ref, str(comment.id))
        counts.seen += 1
    else:
        counts.settled += 1
        if watched and decision.reason.value not in ("already-seen", "edited"):
            polls.resolve_comment(ref, str(comment.id))


def _first_sight(
    ref: WorkItemRef,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    """Step 7: baseline the thread as seen; run the one authorized command still owed."""
    thread = _comments(ports.github.thread(ref), repo.ref, ports)
    control = polls.store.section(ref, "control")
    requested = control.get("requestedAt") if isinstance(control, dict) else None
    at = parse_timestamp(requested) if isinstance(requested, str) and requested else None
    sight = first_sight(
        thread, settings.policy, control_requested_at=at, posted_ids=ports.cursors.posted()
    )
    polls.baseline_comments(ref, [str(i) for i in sight.baseline_ids])
    counts.baselined += len(sight.baseline_ids)
    ports.emit("poll.baselined", work_item=ref.ref, comments=len(sight.baseline_ids))
    if sight.command is not None:
        _command(sight.command.comment, sight.command.verb, repo, ports, polls, counts)


def _command(
    comment: Comment,
    verb: str,
    repo: _Repository,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    """Step 4: ledger entry and control record in one write, then the action (at most once)."""
    ref = comment.work_item
    record = ControlRecord(ref.ref, verb, "comment", comment.login, _iso(comment.created_at))
    if not polls.record_command(ref, str(comment.id), record.to_dict()):
        return
    counts.commands += 1
    facts = _facts(ref, repo, ports)
    try:
        outcome = ports.control(facts, verb, comment.login)
    except TheLoopError as error:
        outcome = "failed"
        counts.failed.append(f"{ref.ref}: {verb}: {error}")
    ports.emit(
        "poll.command",
        work_item=ref.ref,
        command=verb,
        actor=comment.login,
        comment_id=comment.id,
        outcome=outcome,
    )


def _facts(ref: WorkItemRef, repo: _Repository, ports: CyclePorts) -> ItemFacts:
    data = repo.facts.get(ref)
    if data is None:
        data = ports.github.item(ref)
    return ItemFacts(ref, _text(data, "title"), _text(data, "html_url"), _text(data, "body"))


def _text(data: Json, key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _queue(
    comment: Comment, outcome: Outcome, trusted: bool, polls: PollState, ports: CyclePorts
) -> None:
    """Record the comment seen and its delivery row (waiting, or held while paused)."""
    state = "held" if outcome is Outcome.HOLD else "waiting"
    row: dict[str, Any] = {
        "id": str(comment.id),
        "state": state,
        "attempts": 0,
        "text": delivery_text(comment, trusted=trusted),
    }

    def change(ledger: Ledger) -> None:
        ledger["seenComments"].append(str(comment.id))
        rows = ledger.get(DELIVERIES)
        ledger[DELIVERIES] = [*(rows if isinstance(rows, list) else []), row]  # pyright: ignore[reportUnknownArgumentType]

    polls.change(comment.work_item, change)
    if outcome is Outcome.HOLD:
        ports.emit("poll.comment_held", work_item=comment.work_item.ref, comment_id=comment.id)


def _closures(
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    """Step 8: a live session whose item left the open listing is checked and closed;
    a linked PR that left it ends only its endpoint."""
    for ref, session in repo.sessions.items():
        for pr in session.pull_requests:
            _close_linked(ref, pr, repo, settings, ports, polls, counts)
        if ref in repo.facts and not _closed_in_listing(repo.facts[ref]):
            continue
        _close_work_item(ref, settings, ports, counts)


def _close_work_item(
    ref: WorkItemRef, settings: PollSettings, ports: CyclePorts, counts: CycleCounts
) -> None:
    data = ports.github.item(ref)
    closer = data.get("closed_by")
    login = _text(cast(Json, closer), "login") if isinstance(closer, dict) else ""
    item = ItemState(data.get("state") == "open", _merged(data), login)
    known = KnownState(Role.WORK_ITEM, live=True)
    decision = decide_closure(item, known, authorized=settings.policy.authorized)
    if decision.action is not ClosureAction.CLOSE_SESSION:
        return
    ports.close(ref, decision.cleanup)
    counts.closed += 1
    ports.emit(
        "poll.closure",
        work_item=ref.ref,
        state=decision.state,
        action=str(decision.action),
        cleanup=decision.cleanup,
    )


def _close_linked(
    owner: WorkItemRef,
    pr: WorkItemRef,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    """A linked PR merged or closed ends only its endpoint; its state goes in the ledger."""
    if pr in repo.facts and not _closed_in_listing(repo.facts[pr]):
        return
    data = ports.github.item(pr)
    item = ItemState(data.get("state") == "open", _merged(data))
    recorded = polls.store.pull_request_ledger(owner, pr) or {}
    state_now = recorded.get("state")
    known = KnownState(Role.LINKED_PULL_REQUEST, live=True, recorded_state=str(state_now or ""))
    decision = decide_closure(item, known, authorized=settings.policy.authorized)
    if decision.action is not ClosureAction.END_ENDPOINT:
        return
    ports.end_endpoint(owner, pr, decision.state)
    polls.own(pr, owner)
    polls.change(pr, lambda ledger: ledger.__setitem__("state", decision.state))
    counts.closed += 1
    ports.emit(
        "poll.closure",
        work_item=owner.ref,
        pull_request=pr.ref,
        state=decision.state,
        action=str(decision.action),
        cleanup=False,
    )


def _closed_in_listing(data: Json) -> bool:
    return data.get("state") != "open"


def _merged(data: Json) -> bool:
    pull = data.get("pull_request")
    return isinstance(pull, dict) and bool(cast(Json, pull).get("merged_at"))


def _iso(moment: Any) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
