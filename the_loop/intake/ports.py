"""What the intake is given once: its settings, its collaborators as one object, and
what a reader tells it of a repository's items. Also the tally it keeps.

GitHub's writes, tmux, the dispatcher, the stores, the clock and the event log reach
the intake only through :class:`IntakePorts`, which an adapter factory builds. Every
collaborator raises :class:`~the_loop.errors.TheLoopError` with a sentence on failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from the_loop.agent.state import AgentState
from the_loop.intake.budget_rule import WARN_AT, Limits
from the_loop.intake.claim_ports import ClaimPorts
from the_loop.intake.comments import CommentPolicy, SessionState
from the_loop.intake.delivery import Delivery
from the_loop.intake.events import Issue, IssueComment
from the_loop.intake.people import AuthorizedUsers
from the_loop.portable.poll import PollState
from the_loop.ref import WorkItemRef
from the_loop.repofile.values import WorkItemState
from the_loop.spec.words import ReviewEntry

Json = Mapping[str, Any]


@dataclass(frozen=True)
class IntakeSettings:
    """The keys the intake decides by (``polling.*`` and ``routing.*``), read once."""

    labels: tuple[str, ...] = ()
    max_retries: int = 3
    max_deliveries_per_hour: int = 30
    policy: CommentPolicy = field(default_factory=lambda: CommentPolicy(AuthorizedUsers.of(())))
    prompt_template: str = ""
    #: ``routing.requireWriteAccess`` (true unless the config says otherwise; a reader's
    #: settings come from ``poll_settings``): an authorized login commands only while
    #: GitHub says it may write to the repository.
    require_write_access: bool = False
    #: ``polling.ci.maxFailingPushes``: the consecutive failing heads of a pull request
    #: whose CI failures are pasted; the one that reaches it posts one notice.
    max_failing_pushes: int = 3
    #: ``routing.harnesses.claude.trustCheckouts``: answer Claude Code's folder-trust
    #: dialog in the checkouts the-loop made (and no other dialog).
    trust_checkouts: bool = False
    #: ``routing.resumeAfterLimit``: continue an agent once after the usage limit it
    #: stopped at resets (its dialog answered with its wait).
    resume_after_limit: bool = False
    #: ``routing.stallMinutes``: a working agent with no sign of progress for this long is
    #: said stalled on its ticket, once (0: never).
    stall_minutes: float = 15.0
    #: ``routing.budget``: every item's default limits (its raises go on top).
    budget: Limits = field(default_factory=Limits)
    #: ``routing.budget.warnAt``: the share of a limit at which the ticket is warned.
    budget_warn_at: float = WARN_AT


class GitHubPort(Protocol):
    """What the intake itself asks of GitHub, as values: a thread at first sight (its
    comments oldest first), an item's facts for a command, and the one write (a marked
    notice, whose id it returns when GitHub said)."""

    def thread(self, ref: WorkItemRef) -> Sequence[IssueComment]: ...

    def item(self, ref: WorkItemRef) -> Issue: ...

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None: ...


class PostedComments(Protocol):
    """The ids of the comments the-loop posted (never read back as anyone's words)."""

    def posted(self) -> frozenset[int]: ...

    def remember_posted(self, comment_id: int) -> None: ...


class ItemKnowledge(Protocol):
    """What a reader knows of one repository's items in a round.

    ``changed`` holds the items GitHub said changed (a poll: the changed-items listing;
    a push: the event's item), in GitHub's order; ``known_open`` says whether an item is
    open by what the reader knows without asking (None: unknown); ``look_up`` asks
    GitHub now (a reader may keep the answer).
    """

    @property
    def changed(self) -> Mapping[WorkItemRef, Issue]: ...

    def known_open(self, ref: WorkItemRef) -> bool | None: ...

    def look_up(self, ref: WorkItemRef) -> Issue: ...


class SpecPort(Protocol):
    """The spec lane's files in a work item's checkout (its session record's): the
    repository file, read (None: the item has no checkout, or its checkout no file) and
    changed in one locked read-modify-write (made when there is none; ``TheLoopError``
    without a checkout), where its documents are (``docs/specs/<id>``), the link of a
    phase's document at the commit that last changed it, and the review comments
    appended to a document and committed (each at most once: by its link)."""

    def state(self, ref: WorkItemRef) -> WorkItemState | None: ...

    def update(
        self, ref: WorkItemRef, change: Callable[[WorkItemState], WorkItemState]
    ) -> WorkItemState: ...

    def spec_dir(self, ref: WorkItemRef) -> str: ...

    def artifact_link(self, ref: WorkItemRef, phase: str) -> str: ...

    def append_review(
        self, ref: WorkItemRef, phase: str, entries: Sequence[ReviewEntry]
    ) -> None: ...


@dataclass(frozen=True)
class LiveSession:
    """A live session as the intake sees it: its state and the tmux target of its pane."""

    ref: WorkItemRef
    state: SessionState
    tmux_target: str = ""
    pull_requests: tuple[WorkItemRef, ...] = ()
    #: The harness its agent runs (``""``: not said).
    harness: str = ""


@dataclass(frozen=True)
class ItemFacts:
    """What a control action needs of the ticket: its title, URL and body, and who wrote
    it (``""``: GitHub did not say)."""

    ref: WorkItemRef
    title: str = ""
    url: str = ""
    body: str = ""
    author: str = ""


#: ``permission(repository, login)``: GitHub's word for the login's access to the
#: repository of ``repository`` (any ref of it): ``admin``, ``write``, ``read`` or
#: ``none``, as ``GET /repos/{o}/{r}/collaborators/{login}/permission`` says (maintain
#: reads as write). Raises :class:`~the_loop.errors.TheLoopError` when GitHub could not say.
RepositoryPermission = Callable[[WorkItemRef, str], str]

#: ``acknowledge(on, kind, subject)``: one 👀 reaction, by the token's login, on what a
#: delivery pasted: ``kind`` ``issue_comment`` or ``review_comment`` with ``subject`` a
#: comment id in ``on``'s repository, or ``issue`` with ``subject`` ``on``'s number (a
#: pull request itself). A repeat is GitHub's no-op. Raises
#: :class:`~the_loop.errors.TheLoopError` when GitHub did not take it.
Acknowledge = Callable[[WorkItemRef, str, int], None]


@dataclass(frozen=True)
class IntakePorts:
    """Every collaborator of the intake, handed in once.

    ``ledger`` is the poll ledger store; ``control(facts, verb, actor)`` runs a verb
    through the sessions' own code and returns its outcome word; ``close(ref,
    cleanup)`` takes the dispatcher's one close path (and says how many checkouts it
    removed and how many it kept for the work they hold), and ``close_gone(ref, why)`` the
    same for an item GitHub no longer has (checkouts kept); ``end_endpoint(owner, pr,
    state)`` ends only a linked PR's endpoint; ``deliver(session, delivery)`` pastes
    into the session's pane and marks it in one tmux command list; ``pane_mark(target)``
    reads the mark back; ``checkpoint(step)`` is a no-op hook the crash test uses to stop
    the process at each step of a delivery; ``should_stop()`` is asked between items;
    ``permission`` is asked before an authorized login commands, when the settings
    require write access (None: nobody can be checked, so no such command runs).
    """

    github: GitHubPort
    ledger: PollState
    posted: PostedComments
    sessions: Callable[[], Sequence[LiveSession]]
    armed: Callable[[], Sequence[WorkItemRef]]
    control: Callable[[ItemFacts, str, str], str]
    close: Callable[[WorkItemRef, bool], tuple[int, int]]
    close_gone: Callable[[WorkItemRef, str], None]
    end_endpoint: Callable[[WorkItemRef, WorkItemRef, str], None]
    deliver: Callable[[LiveSession, Delivery], None]
    pane_mark: Callable[[str], str | None]
    emit: Callable[..., object]
    clock: Callable[[], float]
    warn: Callable[[str], None] = lambda _message: None
    checkpoint: Callable[[str], None] = lambda _step: None
    should_stop: Callable[[], bool] = lambda: False
    permission: RepositoryPermission | None = None
    #: ``link(owner, pr)``: link ``pr`` to ``owner``'s session as ``sessions link-pr``
    #: does; True when it was not linked before (None: this reader links nothing).
    link: Callable[[WorkItemRef, WorkItemRef], bool] | None = None
    #: The 👀 on each delivered comment and review (None: ``integrations.github.acknowledge``
    #: is off, or this reader acknowledges nothing).
    acknowledge: Acknowledge | None = None
    #: ``hold(ref)``: the item's exclusive hold for one whole delivery (pending, paste and
    #: mark, delivered) and one closure, shared by every reader on this state root, so a
    #: ``pending`` another live process holds is never taken for a crash's (the default
    #: holds nothing: one reader alone).
    hold: Callable[[WorkItemRef], AbstractContextManager[None]] = lambda _ref: nullcontext()
    #: The claims on the ticket that decide which machine takes a start (None:
    #: ``routing.claim`` is never: this machine starts what it is asked, alone).
    claims: ClaimPorts | None = None
    #: ``end_here(ref, reason)``: the one close path, checkouts kept, for an item another
    #: machine now holds (None: this reader ends nothing for a claim).
    end_here: Callable[[WorkItemRef, str], None] | None = None
    #: ``session_of(ref)``: ``ref``'s own live session, read alone (None: the round
    #: reads every live session again after a command instead).
    session_of: Callable[[WorkItemRef], LiveSession | None] | None = None
    #: ``agent(session)``: what the session's agent is doing now (None: no pane, or tmux
    #: could not say); asked before each paste, which only an agent ``idle`` or
    #: ``working`` takes (None as a port: this reader pastes without asking).
    agent: Callable[[LiveSession], AgentState | None] | None = None
    #: ``restart(ref, facts)``: start ``ref``'s exited agent again as ``sessions start``
    #: does (its transcript resumed when there is one, else afresh with the first prompt
    #: of ``facts()``, the ticket read only then), for the comments that wait (None: this
    #: reader restarts nothing).
    restart: Callable[[WorkItemRef, Callable[[], ItemFacts]], None] | None = None
    #: ``receipt(session, text, since)``: whether the agent took ``text`` as a turn at or
    #: after ``since`` (None: it cannot say; a paste then counts once made). None as a
    #: port: every paste counts once made.
    receipt: Callable[[LiveSession, str, float], bool | None] | None = None
    #: ``meter(session, state, watched)``: what ``session``'s item has spent, all its
    #: sessions together, once what its agent (seen in ``state``) appended since is read
    #: (``{usd, turns, hours, tokens}``); None: not known, or, when not ``watched`` by a
    #: limit, not due yet (its figures are kept fresh every few seconds, not each round).
    #: None as a port: this reader meters nothing.
    meter: Callable[[LiveSession, AgentState | None, bool], dict[str, Any] | None] | None = None
    #: ``interrupt(session)``: interrupt the agent's running turn with the key its harness
    #: takes for that, never a kill (None: this reader interrupts nothing).
    interrupt: Callable[[LiveSession], None] | None = None
    #: ``submit(target)``: press Enter in the agent's pane, on what waits in its input
    #: box (None: this reader presses nothing).
    submit: Callable[[str], None] | None = None
    #: ``answer(target, dialog, option)``: choose ``option`` of the dialog on the pane
    #: (None: this reader answers no dialog).
    answer: Callable[[str, str, str], None] | None = None
    #: ``edit_comment(ref, comment_id, body)``: rewrite one of the-loop's own comments
    #: (None: this reader edits nothing; a blocked notice then stays as posted).
    edit_comment: Callable[[WorkItemRef, int, str], None] | None = None
    #: The spec lane's files in the items' checkouts (None: this reader moves no lane;
    #: its keywords are answered so).
    spec: SpecPort | None = None


#: The kinds of :class:`Action`: a command ran; a command (or a stranger's comment) was
#: refused; a comment reached a pane; a closed, merged or gone item ended its session;
#: a linked PR's endpoint ended; an item seen open again lost its closed state; a pull
#: request was linked to the work item it delivers; a pull request's CI failed too often
#: in a row and its failures are no longer pasted; another machine's claim won an item
#: this machine ran a session for, and that session ended here.
ACTION_KINDS = (
    "command",
    "refused",
    "delivered",
    "closed",
    "gone",
    "endpoint",
    "reopened",
    "linked",
    "escalated",
    "handed",
)


@dataclass(frozen=True)
class Action:
    """One thing a cycle did that its operator reads about, as a value (a reader renders
    it): ``work_item`` and, where they apply, who asked (``actor``), the ``verb``, the
    comment, what came of it (``outcome``) and why (``reason``)."""

    kind: str
    work_item: str
    actor: str = ""
    verb: str = ""
    #: The comment's id, or the key of another paste (``review-<id>``, ``ci-…``).
    comment_id: int | str | None = None
    outcome: str = ""
    reason: str = ""
    pull_request: str = ""
    #: A closure's cleanup: the checkouts it removed, and those it kept holding work.
    checkouts_removed: int = 0
    checkouts_kept: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "workItem": self.work_item,
            "actor": self.actor,
            "verb": self.verb,
            "commentId": self.comment_id,
            "outcome": self.outcome,
            "reason": self.reason,
            "pullRequest": self.pull_request,
            "checkoutsRemoved": self.checkouts_removed,
            "checkoutsKept": self.checkouts_kept,
        }


@dataclass
class CycleCounts:
    """The tally of one cycle or delivery batch (the report a reader adds requests to)."""

    delivered: int = 0
    commands: int = 0
    settled: int = 0
    held: int = 0
    seen: int = 0
    baselined: int = 0
    closed: int = 0
    #: Reviews queued as one paste each (a paste reached the pane is also ``delivered``).
    reviews: int = 0
    #: Deliveries acknowledged on GitHub with a 👀 this cycle (a late one included).
    acknowledged: int = 0
    failed: list[str] = field(default_factory=list[str])
    #: Repositories whose comments were read but not handled (below the rate reserve):
    #: the reader must not keep this cycle's ETags, or the next read would be a 304.
    deferred: list[str] = field(default_factory=list[str])
    #: A stop was asked for and the cycle ended early, between two items.
    stopped: bool = False
    #: What the cycle did, in the order it did it: one per command, refusal, delivery
    #: and closure.
    actions: list[Action] = field(default_factory=list[Action])
    #: Failed checks queued as one paste each (a paste reached the pane is also ``delivered``).
    ci_failures: int = 0
    #: Pull requests linked to the work item they deliver.
    linked: int = 0

    def stop_requested(self, should_stop: Callable[[], bool]) -> bool:
        """Whether to end the cycle before the next item (and remember that it did)."""
        self.stopped = self.stopped or should_stop()
        return self.stopped

    def to_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "commands": self.commands,
            "settled": self.settled,
            "held": self.held,
            "seen": self.seen,
            "baselined": self.baselined,
            "closed": self.closed,
            "reviews": self.reviews,
            "acknowledged": self.acknowledged,
            "failed": list(self.failed),
            "deferred": list(self.deferred),
            "stopped": self.stopped,
            "actions": [action.to_dict() for action in self.actions],
            "ci_failures": self.ci_failures,
            "linked": self.linked,
        }
