"""The intake: what GitHub said, taken as plain values, and everything that follows.

A reader (the poll cycle; a webhook later) opens one :class:`Round` per repository
and feeds it: :meth:`Round.watch` with what it knows of the items, then each new or
edited comment in order (:meth:`Round.comment`), then :meth:`Round.deliver` and
:meth:`Round.closures`. The intake applies the filters and who may command, keeps
the ledger, runs commands, delivers into panes exactly once and ends the sessions of
closed items. It never knows whether a value came from a poll or a push.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from the_loop.errors import TheLoopError
from the_loop.intake.answers import answer_prompt
from the_loop.intake.attention import attend
from the_loop.intake.budget import BUDGET, keep_budget, raise_budget
from the_loop.intake.ci import Details, HeadChecks
from the_loop.intake.ci_round import take_checks
from the_loop.intake.claiming import Claiming
from the_loop.intake.closures import close_finished
from the_loop.intake.comments import (
    ItemView,
    Outcome,
    SessionState,
    classify_comment,
)
from the_loop.intake.delivery import delivery_text
from the_loop.intake.drain import drain
from the_loop.intake.events import IssueComment, parse_timestamp
from the_loop.intake.first_sight import first_sight
from the_loop.intake.keywords import ANSWERS, SPEC_VERBS
from the_loop.intake.linking import link_pulls
from the_loop.intake.pastes import settle_pastes
from the_loop.intake.people import may_write
from the_loop.intake.ports import (
    Action,
    CycleCounts,
    IntakePorts,
    IntakeSettings,
    ItemFacts,
    ItemKnowledge,
    LiveSession,
)
from the_loop.intake.pulls import PullRequest
from the_loop.intake.refusals import log_refusal, refused, refused_at_first_sight
from the_loop.intake.review_round import take_reviews
from the_loop.intake.reviews import Review, ReviewComment
from the_loop.intake.revival import forget_restarts, revive
from the_loop.intake.spec_lane import START as LANE_START
from the_loop.intake.spec_lane import settle_lane, take_decision, tend_lane
from the_loop.intake.stall import watch_stall
from the_loop.intake.usage_limit import continue_after_limit
from the_loop.intake.watched import ListedNumbers, OpenItem, WatchedSet, watched_set
from the_loop.portable.control import CLEANUP, RESUME, START, STOP, ControlRecord
from the_loop.portable.poll import DELIVERIES, Ledger
from the_loop.ref import WorkItemRef


class Intake:
    """The intake of one cycle: its settings and collaborators, handed in once, and the
    tally every round adds to."""

    def __init__(
        self, settings: IntakeSettings, ports: IntakePorts, counts: CycleCounts | None = None
    ) -> None:
        self.settings = settings
        self.ports = ports
        self.counts = counts if counts is not None else CycleCounts()

    def stopping(self) -> bool:
        """Whether to end before the next item (a stop was asked for)."""
        return self.counts.stop_requested(self.ports.should_stop)

    def tend(self, sessions: Sequence[LiveSession]) -> None:
        """Between cycles, with nothing read from GitHub: what each of the live ``sessions``'
        active agents is doing (a block said once, or its end), an exited one restarted
        for the comments that wait, and those comments delivered once it takes a paste."""
        waiting: list[LiveSession] = []
        for session in sessions:
            if self.stopping():
                break
            if session.state is SessionState.ACTIVE:
                state = attend(session, self)
                watch_stall(session, self, state)
                if keep_budget(session, self, state):
                    continue  # over its budget: its comments wait for a raise
                continue_after_limit(session, self, state)
                tend_lane(session, self)
                if not revive(session, self, state):
                    waiting.append(session)
        drain(waiting, self)

    def keep_budgets(self, sessions: Sequence[LiveSession]) -> None:
        """Between tendings, with nothing read from GitHub and no pane asked: each live
        session whose item has a budget metered, and a limit reached acted on at once (its
        turn interrupted, said once), so a fast agent spends little past its limit."""
        for session in sessions:
            if self.stopping():
                break
            if session.state is SessionState.ACTIVE:
                keep_budget(session, self, None, limited_only=True)

    def round(self, repository: WorkItemRef) -> Round:
        """A round over ``repository`` (any ref of it), with its live sessions as they are
        and the numbers a reader keeps for them (theirs and their linked PRs')."""
        sessions = self.live_sessions(repository)
        linked = [pr for s in sessions.values() for pr in s.pull_requests]
        keep = frozenset(r.number for r in (*sessions, *linked) if same_repository(r, repository))
        return Round(self, repository, sessions, keep)

    def live_sessions(self, repository: WorkItemRef) -> dict[WorkItemRef, LiveSession]:
        return {s.ref: s for s in self.ports.sessions() if same_repository(s.ref, repository)}


@dataclass
class Round:
    """One repository's round: its live sessions, then (once watched) what the reader
    knows of its items, the watched set, and the window its comments were read from."""

    intake: Intake
    repository: WorkItemRef
    sessions: dict[WorkItemRef, LiveSession]
    #: The numbers of the live sessions' items and linked PRs when the round began.
    keep: frozenset[int] = frozenset()
    knowledge: ItemKnowledge | None = None
    watched: WatchedSet = field(default_factory=lambda: WatchedSet({}))
    #: Where the reader's comment window starts (see :meth:`watch`).
    read_from: datetime | None = None
    first_seen: set[WorkItemRef] = field(default_factory=set[WorkItemRef])
    #: The round's claims (None: ``routing.claim`` is never, or no reader wired them).
    claiming: Claiming | None = None
    #: The item whose hold this round has now (a comment being decided), if any.
    holding: WorkItemRef | None = None
    #: Each item's seen comment ids, read once a round (see :meth:`_seen_before`).
    seen_ids: dict[WorkItemRef, frozenset[int]] = field(
        default_factory=dict[WorkItemRef, frozenset[int]]
    )

    def __post_init__(self) -> None:
        claims = self.intake.ports.claims
        if claims is not None and self.claiming is None:
            self.claiming = Claiming(self, claims)

    def pulls(self, pulls: Sequence[PullRequest]) -> list[WorkItemRef]:
        """Link each pull request to the live work items it delivers (by its head branch,
        or a closing keyword in its body), as ``sessions link-pr`` would; call it before
        :meth:`watch`, so the round watches what was just linked. The pull requests it
        linked, in order (see :mod:`~the_loop.intake.linking`)."""
        return link_pulls(self, pulls)

    def reviews(
        self,
        reviews: Sequence[Review],
        comments: Sequence[ReviewComment],
        *,
        read_from: datetime | None = None,
        thread_heads: Mapping[int, ReviewComment] | None = None,
        first_sight: Mapping[WorkItemRef, datetime | None] | None = None,
    ) -> None:
        """The submitted reviews of the live sessions' pull requests and their inline
        comments: each settled, a command, or one paste (see
        :mod:`~the_loop.intake.review_round`). History, settled: a review of a pull
        request in ``first_sight`` (the reader's first read of its reviews) submitted at
        or before its bound there (None: every one), and one submitted before
        ``read_from`` (None: no such bound). Call it before :meth:`deliver`."""
        take_reviews(
            self,
            reviews,
            comments,
            read_from=read_from,
            thread_heads=thread_heads or {},
            first_sight=first_sight,
        )

    def ci(self, heads: Sequence[HeadChecks], *, details: Details) -> None:
        """The watched heads whose checks the reader read anew: each failure one paste
        into the owner's session (see :mod:`~the_loop.intake.ci_round`), ``details``
        asked only for a failure about to be pasted. Call it before :meth:`deliver`."""
        take_checks(self, heads, details)

    def watch(
        self, *, listed: ListedNumbers | None, knowledge: ItemKnowledge, read_from: datetime | None
    ) -> None:
        """The watched set: the open items carrying every label, by ``listed`` (what the
        reader keeps) or by what GitHub just said of them (``knowledge.changed``: a push
        carries the item, relabelled or not), the live sessions, their linked PRs and the
        armed refs.

        ``read_from`` is where the reader's window of comments starts: a poll's cursor
        (less an overlap), a push's own ``updated_at``; None claims no window, so each
        watched thread is met as first sight. A comment written before it that the
        ledger does not hold is an edit, never handled."""
        ports = self.intake.ports
        armed = [a for a in ports.armed() if same_repository(a, self.repository)]
        self.knowledge, self.read_from = knowledge, read_from
        said = [OpenItem(i.ref, i.labels, is_open=i.is_open) for i in knowledge.changed.values()]
        self.watched = watched_set(
            said,
            labels=self.intake.settings.labels,
            listed=listed,
            live_sessions=self.sessions,
            linked_pull_requests=[pr for s in self.sessions.values() for pr in s.pull_requests],
            armed=armed,
        )

    def read_ahead(self, comments: Sequence[IssueComment]) -> None:
        """The comments the reader is about to feed, all at once, before the first: a
        claim another machine posted after a start, in the same batch, is known before
        the start is decided (so this machine never posts its own)."""
        if self.claiming is not None:
            for comment in comments:
                self.claiming.note(comment)

    def comment(self, comment: IssueComment) -> None:
        """One new or edited comment: first sight, or settled, a command, queued, or seen;
        under the item's hold, so a command another reader runs on it (a start's spawn)
        has ended, and is seen, before this comment is decided. One the ledger already
        held is settled without the hold."""
        ref = comment.work_item
        if ref in self.first_seen:
            return  # its whole thread was baselined this round
        if self._seen_before(comment):
            self.intake.counts.settled += 1
            return
        with self.intake.ports.hold(ref):
            self.holding = ref
            try:
                if ref not in self.sessions:  # another reader may have started it since
                    self.refresh(ref)
                self._decide(comment)
            finally:
                self.holding = None

    def _seen_before(self, comment: IssueComment) -> bool:
        """Whether the item's ledger held ``comment`` when the round first looked (one read
        per item, without the hold): queued or settled already, so it is settled again at
        no cost. A poll's overlap and a push fed again after a crash are mostly these, and
        neither waits for the hold another reader keeps while it pastes."""
        ref = comment.work_item
        if self.read_from is None or ref not in self.watched:
            return False
        seen = self.seen_ids.get(ref)
        if seen is None:
            ids = self.intake.ports.ledger.seen_comments(ref)
            seen = self.seen_ids[ref] = frozenset(int(i) for i in ids if i.isdigit())
        return comment.id in seen

    def _decide(self, comment: IssueComment) -> None:
        ref = comment.work_item
        ledger, counts = self.intake.ports.ledger, self.intake.counts
        watched = ref in self.watched
        if watched and (self.read_from is None or not ledger.is_known(ref)):
            # No ledger, or no cursor (lost, or a ledger carried from another machine): the
            # thread is history, baselined; only a command still owed runs.
            self.first_seen.add(ref)
            self._first_sight(ref)
            return
        session = self.sessions.get(ref)
        state = session.state if session is not None else SessionState.NONE
        if self.claiming is not None and self.claiming.held_elsewhere(ref, fresh=True):
            state = SessionState.NONE  # another machine holds it: its comments are seen only
        seen: frozenset[int] = frozenset()
        if watched:
            seen = frozenset(int(i) for i in ledger.seen_comments(ref) if i.isdigit())
        view = ItemView(watched, state, seen, self.read_from)
        posted = self.intake.ports.posted.posted()
        decision = classify_comment(comment, view, self.intake.settings.policy, posted_ids=posted)
        log_refusal(self.intake, decision, comment, live=state is not SessionState.NONE)
        if decision.outcome is Outcome.COMMAND and decision.verb is not None:
            if self.may_command(comment):
                self.command(comment, decision.verb)
            else:
                ledger.resolve_comment(ref, str(comment.id))
                counts.settled += 1
        elif decision.outcome in (Outcome.DELIVER, Outcome.HOLD):
            self._queue(comment, decision.outcome, decision.trusted)
            counts.held += decision.outcome is Outcome.HOLD
        elif decision.outcome is Outcome.SEEN:
            ledger.resolve_comment(ref, str(comment.id))
            counts.seen += 1
        else:
            counts.settled += 1
            if watched and decision.reason.value not in ("already-seen", "edited"):
                ledger.resolve_comment(ref, str(comment.id))

    def command(self, comment: IssueComment, verb: str, *, key: str = "") -> None:
        """Ledger entry and control record in one write, then the action (at most once);
        ``key`` names a command that is not a comment (``review-<id>``). With claims on,
        a start is only begun here: it is acted on once its round is decided
        (:meth:`claims`)."""
        if verb in ANSWERS:
            self._answer(comment, verb)
            return
        if verb == BUDGET:
            text = self.intake.settings.policy.grammar.arguments(comment.body, BUDGET)
            raise_budget(self.intake, comment, text)
            return
        if verb in SPEC_VERBS:
            self._decide_lane(comment, verb, key)
            return
        ports, counts = self.intake.ports, self.intake.counts
        ref = comment.work_item
        lane = verb == START and self._asks_for_lane(comment)
        if lane and (key or str(comment.id)) not in ports.ledger.seen_comments(ref):
            # Kept before the start is recorded: a crash between the two loses neither.
            lane_key = f"lane-{key or comment.id}"
            take_decision(self.intake, comment, LANE_START, key=lane_key, settle=False)
        record = ControlRecord(ref.ref, verb, "comment", comment.login, _iso(comment.created_at))
        if not ports.ledger.record_command(ref, key or str(comment.id), record.to_dict()):
            return
        counts.commands += 1
        if self.claiming is not None and not key:
            if verb == START:
                self._claim(comment)  # the lane begins once its session runs here
                self.refresh(ref)
                return
            if verb in (STOP, CLEANUP):
                self.claiming.release(ref)
        self.act(ref, verb, comment.login, comment.id)
        if lane:
            owner = ports.ledger.owner_of(ref)
            settle_lane(self.intake, owner, held=self.holding == owner)

    def _asks_for_lane(self, comment: IssueComment) -> bool:
        """``start spec``: the start's words name the spec lane."""
        words = self.intake.settings.policy.grammar.arguments(comment.body, START).split()
        return bool(words) and words[0].lower() == "spec"

    def _decide_lane(self, comment: IssueComment, verb: str, key: str) -> None:
        """``approve``, ``changes``, ``skip``: a decision for the item's spec lane, carried
        out once; an item with nothing live to take what it owes is started for it."""
        ref = comment.work_item
        owner = self.intake.ports.ledger.owner_of(ref)
        review = key.startswith("review-")
        if self.claiming is not None and self.claiming.held_elsewhere(owner, fresh=True):
            # The machine that holds the item decides; here it is only seen.
            if not key:
                self.intake.ports.ledger.resolve_comment(ref, str(comment.id))
            elif review:
                settle_pastes(self.intake.ports, owner, [key])
            return
        held = self.holding == owner
        settled = key if review else ""
        if not take_decision(self.intake, comment, verb, key=key, held=held, settle_key=settled):
            return
        self.refresh(owner)
        if owner not in self.sessions and self._lane_waits(owner):
            self.act(owner, START, comment.login, comment.id)

    def _lane_waits(self, owner: WorkItemRef) -> bool:
        """Whether a paste of the item's lane waits for a session."""
        return any(
            str(row.get("id", "")).startswith("spec-") and row.get("state") in ("waiting", "held")
            for row in self.intake.ports.ledger.deliveries(owner)
        )

    def _answer(self, comment: IssueComment, verb: str) -> None:
        """``allow`` or ``deny``: the agent's permission prompt answered, at most once, and
        only the prompt that was on when the comment was written (see :mod:`answers`)."""
        ref = comment.work_item
        if not self.intake.ports.ledger.record_answer(ref, str(comment.id)):
            return
        self.intake.counts.commands += 1
        answer_prompt(self.intake, self.sessions.get(ref), comment, verb)

    def _claim(self, comment: IssueComment) -> None:
        """Begin the start's round and decide it now, under the item's hold; a round that
        could not even be begun fails as a command's action does."""
        assert self.claiming is not None
        try:
            self.claiming.begin(comment)
        except TheLoopError as error:
            ref, counts = comment.work_item, self.intake.counts
            counts.failed.append(f"{ref.ref}: start: {error}")
            action = Action("command", ref.ref, comment.login, START, comment.id)
            counts.actions.append(replace(action, outcome="failed"))
            self.intake.ports.emit(
                "poll.command",
                work_item=ref.ref,
                command=START,
                actor=comment.login,
                comment_id=comment.id,
                outcome="failed",
            )

    def act(self, ref: WorkItemRef, verb: str, actor: str, comment_id: int) -> str:
        """Run ``verb`` for ``ref`` through the sessions' own code; its outcome word."""
        ports, counts = self.intake.ports, self.intake.counts
        facts = self._facts(ref)  # a failed read fails the repository's round, as a read does
        try:
            outcome = ports.control(facts, verb, actor)
        except TheLoopError as error:
            outcome = "failed"
            counts.failed.append(f"{ref.ref}: {verb}: {error}")
        if verb in (START, RESUME):
            forget_restarts(self.intake, ref)  # a person started it: its next exit may be too
        # The comments after this one meet the session as the command left it.
        self.refresh(ref)
        counts.actions.append(Action("command", ref.ref, actor, verb, comment_id, outcome=outcome))
        ports.emit(
            "poll.command",
            work_item=ref.ref,
            command=verb,
            actor=actor,
            comment_id=comment_id,
            outcome=outcome,
        )
        return outcome

    def refresh(self, ref: WorkItemRef) -> None:
        """See ``ref``'s session as it is now (it was started or ended meanwhile)."""
        session_of = self.intake.ports.session_of
        if session_of is None:
            self.sessions = self.intake.live_sessions(self.repository)
            return
        found = session_of(ref)
        if found is None:
            self.sessions.pop(ref, None)
        else:
            self.sessions[ref] = found

    def claims(self) -> None:
        """Decide the repository's claims still pending (a crash's, or one whose claim
        GitHub did not show yet): each spawns here, is held elsewhere, or waits for the
        next cycle. Call it after the comments, before :meth:`deliver`."""
        if self.claiming is not None:
            self.claiming.settle()

    def deliver(self, only: Collection[WorkItemRef] | None = None) -> None:
        """Deliver what waits for each active watched session, as the commands left them
        (``only``: just the sessions of these items, the ones a push touched)."""
        intake = self.intake
        waiting: list[LiveSession] = []
        for session in intake.ports.sessions():
            if intake.stopping():
                break
            if only is not None and session.ref not in only:
                continue
            if self.claiming is not None and self.claiming.held_elsewhere(session.ref):
                continue  # another machine holds the item: nothing reaches a pane here
            if session.ref in self.watched and session.state is SessionState.ACTIVE:
                state = attend(session, intake)  # a block said once on the ticket, or its end
                watch_stall(session, intake, state)
                if keep_budget(session, intake, state):
                    continue  # over its budget: its comments wait for a raise
                continue_after_limit(session, intake, state)
                tend_lane(session, intake)
                if revive(session, intake, state, partial(self._facts, session.ref)):
                    continue  # its comments go in once the restarted agent takes a paste
                waiting.append(session)
        drain(waiting, intake)  # a paste per pane in turn: no backlog holds another's

    def closures(self) -> None:
        """End the sessions of closed items and endpoints of closed linked PRs; clear the
        closed state of items seen open again."""
        if self.knowledge is None:
            return
        close_finished(self.sessions, self.knowledge, self.intake)
        if self.claiming is not None:
            for ref in sorted(self.claiming.open_rounds(), key=lambda r: r.ref):
                closed = self.knowledge.known_open(ref) is False
                if closed and same_repository(ref, self.repository):
                    with self.intake.ports.hold(ref):
                        self.claiming.release(ref, control_too=True)  # its round is over

    def _first_sight(self, ref: WorkItemRef) -> None:
        """Baseline the thread as seen; run the authorized commands still owed."""
        ports, counts = self.intake.ports, self.intake.counts
        thread = ports.github.thread(ref)
        self.read_ahead(thread)  # a claim another machine made on a start still owed
        control = ports.ledger.store.section(ref, "control")
        requested = control.get("requestedAt") if isinstance(control, dict) else None
        at = parse_timestamp(requested) if isinstance(requested, str) and requested else None
        sight = first_sight(
            thread,
            self.intake.settings.policy,
            control_requested_at=at,
            posted_ids=ports.posted.posted(),
            may_command=self.may_command,
        )
        since_start = self._since_start(ref, thread, at, control, set(sight.baseline_ids))
        baseline = [i for i in sight.baseline_ids if i not in since_start]
        ports.ledger.baseline_comments(ref, [str(i) for i in baseline])
        counts.baselined += len(baseline)
        for comment in thread:
            if comment.id in since_start:
                self._queue(comment, *since_start[comment.id])
        ports.emit("poll.baselined", work_item=ref.ref, comments=len(baseline))
        for stranger in sight.refused:
            if self.read_from is not None and stranger.comment.created_at >= self.read_from:
                refused_at_first_sight(self.intake, stranger.comment, stranger.verb)
        for owed in sight.commands:
            self.command(owed.comment, owed.verb)

    def _since_start(
        self,
        ref: WorkItemRef,
        thread: Sequence[IssueComment],
        started_at: datetime | None,
        control: dict[str, Any] | None,
        baseline: set[int],
    ) -> dict[int, tuple[Outcome, bool]]:
        """The comments of a first sight written after the start of the item's live session
        (a `sessions start` by hand: the poller never saw the thread), as the round would
        have decided them then: they reach the agent instead of being baselined away."""
        session = self.sessions.get(ref)
        verb = control.get("command") if control is not None else None
        if session is None or started_at is None or verb not in (START, RESUME):
            return {}
        view = ItemView(True, session.state, frozenset(), started_at)
        posted = self.intake.ports.posted.posted()
        found: dict[int, tuple[Outcome, bool]] = {}
        for comment in thread:
            if comment.id not in baseline or comment.created_at <= started_at:
                continue
            decision = classify_comment(
                comment, view, self.intake.settings.policy, posted_ids=posted
            )
            if decision.outcome in (Outcome.DELIVER, Outcome.HOLD):
                found[comment.id] = (decision.outcome, decision.trusted)
        return found

    def may_command(self, comment: IssueComment) -> bool:
        """Whether the (authorized) login of ``comment`` may still command: with write
        access required, GitHub must say it can write to the repository. A refusal, and
        a check that could not be made (the command is refused then too), is an event."""
        intake = self.intake
        if not intake.settings.require_write_access:
            return True
        ports, ref, login = intake.ports, comment.work_item, comment.login
        try:
            if ports.permission is None:
                raise TheLoopError("no permission check is wired into this reader")
            permission = ports.permission(ref, login)
        except TheLoopError as error:
            ports.warn(
                f"{ref.ref}: refused the command of @{login} (comment {comment.id}): "
                f"could not check that @{login} may still write to the repository: {error}"
            )
            refused(intake, comment, "unknown", error=str(error))
            return False
        if may_write(permission):
            return True
        refused(intake, comment, permission)
        return False

    def _facts(self, ref: WorkItemRef) -> ItemFacts:
        changed = self.knowledge.changed.get(ref) if self.knowledge is not None else None
        issue = changed if changed is not None else self.intake.ports.github.item(ref)
        return ItemFacts(ref, issue.title, issue.url, issue.body, issue.author)

    def _queue(self, comment: IssueComment, outcome: Outcome, trusted: bool) -> None:
        """Record the comment seen and its delivery row (waiting, or held while paused)."""
        state = "held" if outcome is Outcome.HOLD else "waiting"
        row: dict[str, Any] = {
            "id": str(comment.id),
            "state": state,
            "attempts": 0,
            "by": comment.login,
            "text": delivery_text(comment, trusted=trusted),
        }

        queued: list[bool] = []

        def change(ledger: Ledger) -> None:
            if str(comment.id) in ledger["seenComments"]:
                return  # another reader queued (or settled) it since this one looked
            ledger["seenComments"].append(str(comment.id))
            rows = ledger.get(DELIVERIES)
            ledger[DELIVERIES] = [*(rows if isinstance(rows, list) else []), row]  # pyright: ignore[reportUnknownArgumentType]
            queued.append(True)

        ports = self.intake.ports
        ports.ledger.change(comment.work_item, change)
        if outcome is Outcome.HOLD and queued:
            ports.emit("poll.comment_held", work_item=comment.work_item.ref, comment_id=comment.id)


def same_repository(a: WorkItemRef, b: WorkItemRef) -> bool:
    return (a.host, a.owner.casefold(), a.repo.casefold()) == (
        b.host,
        b.owner.casefold(),
        b.repo.casefold(),
    )


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
