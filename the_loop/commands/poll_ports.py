"""The poll cycle's collaborators, built at the edge: GitHub, cursors, sessions, actions.

Control verbs run through the dispatcher and the registry exactly as the ``sessions``
commands run them (spawn, resume, pause, the one close path, cleanup); nothing here
decides what a comment means — that is :mod:`the_loop.polling`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from the_loop.commands.sessions.release import clean_up
from the_loop.commands.stores import Stores
from the_loop.config.file import Config
from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.errors import TheLoopError
from the_loop.fsio import locked, read_json, write_json
from the_loop.github.backoff import RatePolicy
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError, Listing, RateLimit
from the_loop.polling.comments import CommentPolicy, DeliverFrom, SessionState
from the_loop.polling.delivery import DELIVERED_MARK, Delivery
from the_loop.polling.keywords import KeywordGrammar
from the_loop.polling.people import AuthorizedUsers
from the_loop.polling.ports import (
    CommentsPage,
    ItemFacts,
    Json,
    ListingPage,
    LiveSession,
    PollSettings,
)
from the_loop.polling.prompt import render_prompt
from the_loop.portable.control import PAUSE, RESUME, START, STOP
from the_loop.ref import WorkItemRef

CURSOR_FILE = "poll-cursors.json"
STATUS_FILE = "poll-status.json"
DEFAULT_INTERVAL = 60.0
#: The close reason when the login that closed the ticket is not authorized.
CLOSED_BY_STRANGER = "ticket closed; checkouts kept: it was not closed by an authorized user"


def poll_settings(config: Config) -> PollSettings:
    """``polling.*``, ``routing.authorizedUsers``, ``routing.control.keywordPrefix``, each
    with its one default."""
    deliver = config.get_str("polling.deliverFrom", "authorized")
    deliver_from: DeliverFrom = "anyone" if deliver == "anyone" else "authorized"
    prefix = config.get_str("routing.control.keywordPrefix", "the-loop") or "the-loop"
    policy = CommentPolicy(
        AuthorizedUsers.of(config.get_str_list("routing.authorizedUsers")),
        KeywordGrammar(prefix=prefix),
        deliver_from,
    )
    return PollSettings(
        repositories=tuple(config.get_str_list("polling.repositories")),
        labels=tuple(config.get_str_list("polling.labels")),
        max_retries=int(config.get_float("polling.maxRetries", 3)),
        max_deliveries_per_hour=int(config.get_float("polling.maxDeliveriesPerHour", 30)),
        policy=policy,
        prompt_template=config.get_str("routing.prompt", ""),
    )


def interval_seconds(config: Config) -> float:
    return config.get_float("polling.intervalSeconds", DEFAULT_INTERVAL)


@dataclass
class ClientReads:
    """:class:`~the_loop.polling.ports.GitHubReads` over the REST client.

    Remembers the last rate limit and ``x-poll-interval`` it saw, and every refusal
    (the daemon's back-off is computed from them).
    """

    client: GitHubClient
    policy: RatePolicy = field(default_factory=RatePolicy)
    remaining: int | None = None
    rate: RateLimit | None = None
    poll_interval: int | None = None
    refusals: list[GitHubHTTPError] = field(default_factory=list[GitHubHTTPError])

    def _listing(
        self, path: str, params: dict[str, str | int], *, keep: bool, conditional: bool = True
    ) -> Listing:
        try:
            listing = self.client.get_all_pages(
                path, params, keep_bodies=keep, conditional=conditional
            )
        except GitHubHTTPError as error:
            self.refusals.append(error)
            raise
        self._rate(listing.rate)
        if listing.poll_interval is not None:
            self.poll_interval = max(self.poll_interval or 0, listing.poll_interval)
        return listing

    def open_items(
        self, repository: str, labels: Sequence[str], *, fresh: bool = False
    ) -> ListingPage:
        """Every open item carrying ``labels``; ``fresh`` reads every page in full."""
        params: dict[str, str | int] = {"state": "open", "per_page": 100}
        if labels:
            params["labels"] = ",".join(labels)
        path = f"/repos/{repository}/issues"
        listing = self._listing(path, params, keep=False, conditional=not fresh)
        return _page(listing)

    def changed_items(self, repository: str, since: str) -> ListingPage:
        """Every issue and PR, open or closed, updated at or after ``since``, oldest first."""
        params: dict[str, str | int] = {
            "state": "all",
            "since": since,
            "sort": "updated",
            "direction": "asc",
            "per_page": 100,
        }
        return _page(self._listing(f"/repos/{repository}/issues", params, keep=False))

    def comments_since(self, repository: str, since: str | None) -> CommentsPage:
        params: dict[str, str | int] = {"sort": "updated", "direction": "asc", "per_page": 100}
        if since is not None:
            params["since"] = since
        listing = self._listing(f"/repos/{repository}/issues/comments", params, keep=False)
        return CommentsPage(cast(list[Json], listing.items), listing.not_modified)

    def thread(self, ref: WorkItemRef) -> Sequence[Json]:
        path = f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}/comments"
        listing = self._listing(path, {"per_page": 100}, keep=True)
        return cast(list[Json], listing.items)

    def item(self, ref: WorkItemRef) -> Json:
        try:
            answer = self.client.get(
                f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}", keep_body=True
            )
        except GitHubHTTPError as error:
            self.refusals.append(error)
            raise
        self._rate(answer.rate)
        data = answer.json()
        return cast(Json, data) if isinstance(data, dict) else {}

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        path = f"/repos/{ref.owner}/{ref.repo}/issues/{ref.number}/comments"
        data = self.client.post_json(path, {"body": body}).json()
        posted = cast(dict[str, Any], data).get("id") if isinstance(data, dict) else None
        return posted if isinstance(posted, int) else None

    def rate_low(self) -> bool:
        return not self.policy.may_run("item", self.rate, time.time())

    def _rate(self, rate: RateLimit | None) -> None:
        if rate is not None:
            self.rate, self.remaining = rate, rate.remaining


def _page(listing: Listing) -> ListingPage:
    return CommentsPage(cast(list[Json], listing.items), listing.not_modified, listing.complete)


@dataclass
class FileCursors:
    """The per-repository comment cursors and the posted ids, in ``local/poll-cursors.json``."""

    path: Path
    lock_path: Path
    _data: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        try:
            loaded = read_json(self.path)
        except (OSError, ValueError):
            loaded = None
        self._data = cast(dict[str, Any], loaded) if isinstance(loaded, dict) else {}

    def _repositories(self) -> dict[str, str]:
        found = self._data.get("repositories")
        return cast(dict[str, str], found) if isinstance(found, dict) else {}

    def get(self, repository: str) -> str | None:
        value = self._repositories().get(repository)
        return value if isinstance(value, str) else None

    def set(self, repository: str, cursor: str) -> None:
        self._data["repositories"] = {**self._repositories(), repository: cursor}
        self._save()

    def posted(self) -> frozenset[int]:
        ids = self._data.get("posted")
        return (
            frozenset(i for i in cast(list[Any], ids) if isinstance(i, int))
            if isinstance(ids, list)
            else frozenset()
        )

    def remember_posted(self, comment_id: int) -> None:
        self._data["posted"] = sorted({*self.posted(), comment_id})[-1000:]
        self._save()

    def _save(self) -> None:
        with locked(self.lock_path):
            write_json(self.path, self._data)


def live_sessions(stores: Stores) -> list[LiveSession]:
    """Every live session record, as the cycle sees it."""
    found: list[LiveSession] = []
    for session in stores.registry.list_sessions():
        if not session.is_live:
            continue
        state = SessionState.PAUSED if session.is_paused else SessionState.ACTIVE
        prs = tuple(e.work_item for e in session.pull_requests)
        found.append(LiveSession(session.work_item, state, session.tmux_target, prs))
    return found


@dataclass
class Actions:
    """The control verbs and closures, through the dispatcher and the registry."""

    stores: Stores
    dispatcher: Dispatcher
    prompt_template: str

    def control(self, facts: ItemFacts, verb: str, actor: str) -> str:
        """Run ``verb`` for the item as ``sessions <verb>`` would; its outcome word."""
        ref, registry = facts.ref, self.stores.registry
        if verb == START:
            return self._start(facts, actor)
        with registry.spawn_lock(ref):
            session = registry.find_by_work_item(ref)
            if verb == PAUSE:
                return "paused" if registry.pause(ref) is not None else "no session"
            if verb == STOP:
                if session is None:
                    return "no session"
                self.dispatcher.close_session(session, "stop")
                return "closed"
            if verb == RESUME and (session is None or not session.is_paused):
                return "no session" if session is None else "already running"
        if verb == RESUME and session is not None:
            self.dispatcher.resume_session(session, actor=actor)
            return "resumed"
        with registry.spawn_lock(ref):
            outcome = clean_up(self.dispatcher, ref, actor=actor, source="comment")
        return "cleaned up" if not outcome.errors else "cleanup failed"

    def _start(self, facts: ItemFacts, actor: str) -> str:
        session = self.stores.registry.find_by_work_item(facts.ref)
        if session is None:
            prompt = render_prompt(self.prompt_template, facts)
            self.dispatcher.spawn(facts.ref, prompt=prompt, actor=actor, record_control=False)
            return "started"
        if session.is_paused:
            self.dispatcher.resume_session(session, actor=actor)
            return "resumed"
        return "already running"

    def close(self, ref: WorkItemRef, cleanup: bool) -> None:
        """The one close path; the checkouts are cleaned up only when ``cleanup`` (the
        closer is authorized), and kept otherwise whatever the retention settings say."""
        registry = self.stores.registry
        with registry.spawn_lock(ref):
            session = registry.find_by_work_item(ref)
            if session is not None:
                reason = "ticket closed" if cleanup else CLOSED_BY_STRANGER
                self.dispatcher.close_session(session, reason, keep_checkouts=not cleanup)
            if cleanup:
                clean_up(self.dispatcher, ref, actor="", source="comment")

    def end_endpoint(self, owner: WorkItemRef, pr: WorkItemRef, state: str) -> None:
        """Close only ``pr``'s endpoint of ``owner``'s record, ending its own tmux session."""
        del state
        registry = self.stores.registry
        with registry.spawn_lock(owner):
            record = registry.find_by_work_item(owner)
            endpoint = record.endpoint_for(pr) if record is not None else None
            registry.close_endpoint(owner, pr)
        target = endpoint.tmux_target if endpoint is not None else ""
        if target and record is not None and target != record.tmux_target:
            self.dispatcher.teardown.end_tmux_session(target)

    def deliver(self, target: str, delivery: Delivery) -> None:
        """Paste and mark in one tmux command list; never into a pane another state root
        started under the same name (a failed attempt, retried and given up as any)."""
        owner = self.dispatcher.tmux.foreign_owner(target)
        if owner is not None:
            raise TheLoopError(f"tmux session {target} belongs to the state root {owner}")
        self.dispatcher.tmux.deliver(
            target, delivery.buffer_name, delivery.text, (DELIVERED_MARK, delivery.mark_value)
        )

    def pane_mark(self, target: str) -> str | None:
        try:
            return self.dispatcher.tmux.pane_option(target, DELIVERED_MARK)
        except (TheLoopError, ValueError):
            return None
