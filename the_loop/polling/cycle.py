"""One poll cycle over every watched repository (steps 1–9 of the poller's contract).

Per repository: list the watched items, read the comments since the cursor, handle
each new comment in order (settle, command, deliver, hold, or see), deliver what
waits, apply closures, then move the cursor. A repository that fails is reported and
the others still run. An idle cycle (every read a 304) writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
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
from the_loop.polling.watch_cache import (
    Change,
    RepositoryListing,
    apply_changes,
    change_from_json,
    labels_key,
    pruned,
    rebuilt,
    with_item,
)
from the_loop.polling.watched import (
    ClosureAction,
    ItemState,
    KnownState,
    Role,
    WatchedSet,
    decide_closure,
    watched_set,
)
from the_loop.portable.control import ControlRecord
from the_loop.portable.poll import CLOSED_STATE, DELIVERIES, Ledger, PollState
from the_loop.portable.store import POLL
from the_loop.ref import WorkItemRef

#: How far before the cursor each read starts: comments GitHub stamps late still arrive.
CURSOR_OVERLAP = timedelta(seconds=120)


@dataclass
class _Repository:
    """What one repository's cycle knows: its watched set, its live sessions, the items
    GitHub returned this cycle (``facts``), and the kept listing (as read, and as updated)."""

    ref: WorkItemRef
    watched: WatchedSet
    sessions: dict[WorkItemRef, LiveSession]
    facts: dict[WorkItemRef, Json]
    listing: RepositoryListing
    stored: RepositoryListing | None
    keep: frozenset[int]
    #: Where this cycle's comment read starts (None: no cursor, the whole history).
    read_from: datetime | None = None


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
    if cursor is not None:
        repo.read_from = parse_timestamp(cursor) - CURSOR_OVERLAP
    since = None if repo.read_from is None else _iso(repo.read_from)
    page = ports.github.comments_since(name, since)
    if ports.github.rate_low():
        ports.emit("poll.rate_limited", "warning", repository=name, step="comments")
        counts.deferred.append(name)
        return  # below the reserve: only the reads; the cursor stays for the next cycle
    newest = cursor
    if not page.not_modified:
        newest = _handle_comments(page.entries, cursor, repo, settings, ports, polls, counts)
        if newest is None and not counts.stopped and repo.listing.cursor:
            # No comment at all yet: start from the listing's GitHub time, so the first
            # comment is read as new, not as history at first sight.
            newest = repo.listing.cursor
    _drain_and_close(name, repo, settings, ports, polls, counts)
    if newest is not None and newest != cursor:
        ports.cursors.set(name, newest)


def _handle_comments(
    entries: Sequence[Json],
    cursor: str | None,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> str | None:
    """Each new comment in order, until a stop; the newest ``updated_at`` handled."""
    newest = cursor
    first_seen: set[WorkItemRef] = set()
    for comment in _comments(entries, repo.ref, ports):
        if counts.stop_requested(ports.should_stop):
            break  # the cursor stays short of every comment not handled
        _handle(comment, repo, settings, ports, polls, counts, first_seen)
        ports.checkpoint(f"after-comment-{comment.id}")
        stamp = _iso(comment.updated_at)
        newest = stamp if newest is None or stamp > newest else newest
    return newest


def _drain_and_close(
    name: str,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    """Deliver what waits for each active watched session, then the closures; the kept
    listing is saved only once every closure ran (else its changes are read again)."""
    for session in ports.sessions():  # as the commands just left them
        if counts.stop_requested(ports.should_stop):
            break
        if session.ref in repo.watched and session.state is SessionState.ACTIVE:
            drain(session, polls=polls, ports=ports, settings=settings, counts=counts)
    if not counts.stop_requested(ports.should_stop):
        _closures(repo, settings, ports, polls, counts)
    if not counts.stopped:
        _save_listing(name, repo, ports)


def _watch(name: str, settings: PollSettings, ports: CyclePorts) -> _Repository:
    """Step 1: the open labelled items (the kept listing, updated by what changed), plus
    live sessions, their PRs and armed refs."""
    ref = WorkItemRef.parse(f"github:{name}#1")
    sessions = {s.ref: s for s in ports.sessions() if _same_repository(s.ref, ref)}
    linked = [pr for s in sessions.values() for pr in s.pull_requests]
    keep = frozenset(r.number for r in (*sessions, *linked) if _same_repository(r, ref))
    stored = ports.watch_cache.get(name)
    listing, facts = _read_listing(name, ref, stored, keep, settings, ports)
    armed = [a for a in ports.armed() if _same_repository(a, ref)]
    watched = watched_set(
        (),
        labels=settings.labels,
        listed=listing.labelled(ref),
        live_sessions=sessions,
        linked_pull_requests=linked,
        armed=armed,
    )
    return _Repository(ref, watched, sessions, facts, listing, stored, keep)


def _read_listing(
    name: str,
    ref: WorkItemRef,
    stored: RepositoryListing | None,
    keep: frozenset[int],
    settings: PollSettings,
    ports: CyclePorts,
) -> tuple[RepositoryListing, dict[WorkItemRef, Json]]:
    """The listing as this cycle leaves it, and the items GitHub returned: those changed
    since the cursor (one conditional read, no labels filter), or a full read when there
    is no usable listing yet (first cycle, other labels, no cursor, a day old)."""
    now = ports.clock()
    if stored is None or stored.needs_rebuild(settings.labels, now):
        return _rebuild(name, ref, stored, settings, now, ports)
    since = _iso(parse_timestamp(stored.cursor) - CURSOR_OVERLAP)
    changes, facts = _changes(ports.github.changed_items(name, since).entries, ref, ports)
    return apply_changes(stored, changes, keep=keep), facts


def _rebuild(
    name: str,
    ref: WorkItemRef,
    stored: RepositoryListing | None,
    settings: PollSettings,
    now: float,
    ports: CyclePorts,
) -> tuple[RepositoryListing, dict[WorkItemRef, Json]]:
    """Every open item carrying the labels; a 304 keeps the listing built from the same read."""
    page = ports.github.open_items(name, settings.labels)
    if page.not_modified and stored is not None and stored.labels == labels_key(settings.labels):
        return (replace(stored, built_at=now) if stored.cursor else stored), {}
    if not page.complete:  # a 304 whose entries nobody kept: read it again in full
        page = ports.github.open_items(name, settings.labels, fresh=True)
    changes, facts = _changes(page.entries, ref, ports)
    return rebuilt(changes, labels=settings.labels, now=now), facts


def _changes(
    entries: Sequence[Json], repository: WorkItemRef, ports: CyclePorts
) -> tuple[list[Change], dict[WorkItemRef, Json]]:
    """The listing's items as changes (in GitHub's order), and each one's JSON by ref."""
    changes: list[Change] = []
    facts: dict[WorkItemRef, Json] = {}
    for data in entries:
        try:
            change = change_from_json(data, repository=repository)
        except ValueError as error:
            ports.warn(
                f"{repository.owner}/{repository.repo}: skipping an item GitHub listed: {error}"
            )
            continue
        changes.append(change)
        facts[repository.with_number(change.number)] = data
    return changes, facts


def _save_listing(name: str, repo: _Repository, ports: CyclePorts) -> None:
    """Write the listing (and so its cursor) only when this cycle changed it."""
    if repo.listing is not repo.stored:
        ports.watch_cache.put(name, pruned(repo.listing, keep=repo.keep))


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
    if watched and (repo.read_from is None or not polls.is_known(ref)):
        # No ledger, or no cursor (lost, or a ledger carried from another machine): the
        # thread is history, baselined; only a command still owed runs.
        first_seen.add(ref)
        _first_sight(ref, repo, settings, ports, polls, counts)
        return
    session = repo.sessions.get(ref)
    state = session.state if session is not None else SessionState.NONE
    seen: frozenset[int] = frozenset()
    if watched:
        seen = frozenset(int(i) for i in polls.seen_comments(ref) if i.isdigit())
    view = ItemView(watched, state, seen, repo.read_from)
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
    """Step 7: baseline the thread as seen; run the authorized commands still owed."""
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
    for owed in sight.commands:
        _command(owed.comment, owed.verb, repo, ports, polls, counts)


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
    # The comments after this one meet the session as the command left it.
    repo.sessions = {s.ref: s for s in ports.sessions() if _same_repository(s.ref, repo.ref)}
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
    """Step 8: a live session whose item is closed (changed and closed this cycle, or not
    known open) is checked with one GET and closed; a linked PR likewise ends only its
    endpoint; an item seen open again clears the closed state the-loop recorded."""
    for ref, session in repo.sessions.items():
        if counts.stop_requested(ports.should_stop):
            return  # the listing is not saved: the rest is read again next cycle
        try:
            for pr in session.pull_requests:
                _close_linked(ref, pr, repo, settings, ports, polls, counts)
            if _known_open(ref, repo) is not True:
                _close_work_item(ref, repo, settings, ports, polls, counts)
        except TheLoopError as error:  # reported for this item; the others still run
            counts.failed.append(f"{ref.ref}: closing: {error}")
    for ref, data in repo.facts.items():
        if counts.stop_requested(ports.should_stop):
            return
        if data.get("state") == "open":
            _clear_reopened(ref, settings, ports, polls)


def _known_open(ref: WorkItemRef, repo: _Repository) -> bool | None:
    """Whether the item is open by what GitHub listed or the listing kept; None: unknown."""
    data = repo.facts.get(ref)
    if data is not None:
        return data.get("state") == "open"
    if not _same_repository(ref, repo.ref):
        return None  # a repository this cycle does not list: only a GET knows
    item = repo.listing.items.get(ref.number)
    return None if item is None else item.is_open


def _read_item(ref: WorkItemRef, repo: _Repository, ports: CyclePorts) -> Json:
    """One GET of the item; what it says is kept in the listing (so it is asked once)."""
    data = ports.github.item(ref)
    if _same_repository(ref, repo.ref):
        try:
            change = change_from_json(data, repository=repo.ref)
        except ValueError:
            return data
        repo.listing = with_item(repo.listing, change)
    return data


def _close_work_item(
    ref: WorkItemRef,
    repo: _Repository,
    settings: PollSettings,
    ports: CyclePorts,
    polls: PollState,
    counts: CycleCounts,
) -> None:
    data = _read_item(ref, repo, ports)
    closer = data.get("closed_by")
    login = _text(cast(Json, closer), "login") if isinstance(closer, dict) else ""
    item = ItemState(data.get("state") == "open", _merged(data), login)
    known = KnownState(Role.WORK_ITEM, live=True)
    decision = decide_closure(item, known, authorized=settings.policy.authorized)
    if decision.action is not ClosureAction.CLOSE_SESSION:
        return
    polls.change(ref, lambda entry: _record_state(entry, decision.state))
    ports.close(ref, decision.cleanup)
    counts.closed += 1
    ports.emit(
        "poll.closure",
        work_item=ref.ref,
        state=decision.state,
        action=str(decision.action),
        cleanup=decision.cleanup,
        closed_by=login,
    )


def _clear_reopened(
    ref: WorkItemRef, settings: PollSettings, ports: CyclePorts, polls: PollState
) -> None:
    """A work item seen open whose ledger still says closed or merged: the state goes."""
    ledger = polls.store.section(ref, POLL)
    recorded = ledger.get(CLOSED_STATE) if isinstance(ledger, dict) else None
    if not isinstance(recorded, str) or not recorded:
        return
    known = KnownState(Role.WORK_ITEM, live=False, recorded_state=recorded)
    decision = decide_closure(ItemState(True), known, authorized=settings.policy.authorized)
    if decision.action is not ClosureAction.CLEAR_CLOSED:
        return
    polls.change(ref, lambda entry: _record_state(entry, decision.state))
    ports.emit(
        "poll.closure",
        work_item=ref.ref,
        state="",
        previous_state=recorded,
        action=str(decision.action),
        cleanup=False,
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
    """A linked PR merged or closed ends only its endpoint and its state goes in the
    ledger; reopened, the state is cleared. Asked with a GET only while its state is
    unknown; one already recorded closed is not looked at again until it changes."""
    changed = pr in repo.facts
    known_open = _known_open(pr, repo)
    if known_open and not changed:
        return
    ledger = polls.store.pull_request_ledger(owner, pr) or {}
    recorded = str(ledger.get(CLOSED_STATE) or "")
    if recorded and not known_open and not changed:
        return
    data = repo.facts.get(pr) or _read_item(pr, repo, ports)
    item = ItemState(data.get("state") == "open", _merged(data))
    known = KnownState(Role.LINKED_PULL_REQUEST, live=not recorded, recorded_state=recorded)
    decision = decide_closure(item, known, authorized=settings.policy.authorized)
    if decision.action is ClosureAction.NOTHING:
        return
    if decision.action is ClosureAction.END_ENDPOINT:
        ports.end_endpoint(owner, pr, decision.state)
        counts.closed += 1
    polls.own(pr, owner)
    polls.change(pr, lambda entry: _record_state(entry, decision.state))
    ports.emit(
        "poll.closure",
        work_item=owner.ref,
        pull_request=pr.ref,
        state=decision.state,
        previous_state=recorded,
        action=str(decision.action),
        cleanup=False,
    )


def _record_state(ledger: Ledger, state: str) -> None:
    """The ledger's closure state set to ``state`` (``""`` removes it)."""
    if state:
        ledger[CLOSED_STATE] = state
    else:
        ledger.pop(CLOSED_STATE, None)


def _merged(data: Json) -> bool:
    pull = data.get("pull_request")
    return isinstance(pull, dict) and bool(cast(Json, pull).get("merged_at"))


def _iso(moment: Any) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
