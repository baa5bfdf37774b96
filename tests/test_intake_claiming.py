"""A round's claims at the intake, over plain values: the ticket's thread is a list kept
in memory and shared by the machines that read it, each machine has its own store (a
real poll ledger over a real ``WorkItemStore``), its own claim book (a dict, or the file
book) and records what it asked of GitHub, so every request a start costs is counted.

The rule itself (which claim counts, the lowest wins) is ``test_intake_claims``'s; the
whole poll of two state roots against the loopback fake is ``test_poll_claims``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from the_loop.adapters.claim_file import FileClaimBook
from the_loop.errors import TheLoopError
from the_loop.intake.claim_ports import ClaimBook, ClaimPorts, Holder, Machine, PendingClaim
from the_loop.intake.claims import claim_body, no_machine_body
from the_loop.intake.comments import CommentPolicy, SessionState
from the_loop.intake.delivery import Delivery
from the_loop.intake.events import Issue, IssueComment
from the_loop.intake.intake import Intake, Round
from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.ports import Action, IntakePorts, IntakeSettings, ItemFacts, LiveSession
from the_loop.intake.watched import ListedNumbers
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import CLEANUP, START, STOP
from the_loop.portable.poll import DELIVERIES, SEEN_COMMENTS, Ledger, PollState
from the_loop.portable.store import CONTROL, WorkItemStore
from the_loop.ref import WorkItemRef

BOT = "the-loop-bot"
ME, OTHER, THIRD = "a" * 32, "b" * 32, "c" * 32
ITEM = WorkItemRef.parse("github:octo/app#15")
ELSEWHERE = WorkItemRef.parse("github:octo/lib#3")
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TITLE = "Fix the wobbling widget"


# -- the ticket, as GitHub keeps it ----------------------------------------------


@dataclass
class Ticket:
    """Every comment GitHub has, numbered in the order it took them (shared by every
    machine that reads the repository)."""

    comments: list[IssueComment] = field(default_factory=list[IssueComment])
    next_id: int = 2000
    seconds: int = 0

    def add(
        self,
        body: str,
        *,
        login: str = "alice",
        ref: WorkItemRef = ITEM,
        edited: bool = False,
    ) -> IssueComment:
        comment_id, self.next_id = self.next_id, self.next_id + 1
        self.seconds += 7
        at = T0 + timedelta(minutes=10, seconds=self.seconds)
        url = f"https://github.com/{ref.owner}/{ref.repo}/issues/{ref.number}#{comment_id}"
        updated = at + timedelta(seconds=30) if edited else at
        found = IssueComment(comment_id, ref, login, "User", body, url, at, updated)
        self.comments.append(found)
        return found

    def claim(
        self,
        start: IssueComment,
        machine: str = OTHER,
        *,
        name: str = "buildbox",
        login: str = BOT,
        edited: bool = False,
        nonce: str = "1" * 16,
    ) -> IssueComment:
        """Another machine's claim on ``start`` (or a stranger's forgery of one)."""
        body = claim_body(name=name, start=start.id, machine=machine, nonce=nonce)
        return self.add(body, login=login, ref=start.work_item, edited=edited)

    def remove(self, comment_id: int) -> None:
        self.comments = [c for c in self.comments if c.id != comment_id]

    def ours(self, machine: str = ME) -> list[IssueComment]:
        """The marked comments (claims and notices) that ``machine`` has standing."""
        return [c for c in self.comments if f"machine={machine} " in c.body]


class MachineGitHub:
    """One machine's view of GitHub: what it asks, counted, and faults to inject."""

    def __init__(self, ticket: Ticket) -> None:
        self.ticket = ticket
        #: The bodies GitHub took (a refused POST is not here; a lost answer is).
        self.posts: list[str] = []
        self.post_attempts = 0
        #: The ``since`` of each ``comments_after``.
        self.reads: list[datetime] = []
        self.deletes: list[int] = []
        #: ``refused`` (nothing made), ``lost-answer`` (made, then an error), ``no-id``.
        self.post_fault = ""
        self.read_fault = False
        self.delete_fault = False
        #: This machine's posts are not in the thread it reads until shown.
        self.hide_own_posts = False
        self.hidden: set[int] = set()
        #: Runs once, just before GitHub takes the next POST (another machine's race).
        self.before_post: Callable[[], object] | None = None

    def thread(self, ref: WorkItemRef) -> Sequence[IssueComment]:
        return [c for c in self.ticket.comments if c.work_item == ref]

    def item(self, ref: WorkItemRef) -> Issue:
        return Issue(ref, True, title=TITLE, url=f"https://github.com/octo/app/issues/{ref.number}")

    def post_comment(self, ref: WorkItemRef, body: str) -> int | None:
        self.post_attempts += 1
        if self.before_post is not None:
            hook, self.before_post = self.before_post, None
            hook()
        if self.post_fault == "refused":
            raise TheLoopError("GitHub answered 502 Bad Gateway")
        posted = self.ticket.add(body, login=BOT, ref=ref)
        self.posts.append(body)
        if self.hide_own_posts:
            self.hidden.add(posted.id)
        if self.post_fault == "lost-answer":
            raise TheLoopError("GitHub did not answer in time")
        return None if self.post_fault == "no-id" else posted.id

    def comments_after(self, ref: WorkItemRef, since: datetime) -> Sequence[IssueComment]:
        self.reads.append(since)
        if self.read_fault:
            raise TheLoopError("GitHub could not be reached: connection reset")
        return [c for c in self.thread(ref) if c.updated_at >= since and c.id not in self.hidden]

    def delete_comment(self, ref: WorkItemRef, comment_id: int) -> None:
        del ref
        self.deletes.append(comment_id)
        if self.delete_fault:
            raise TheLoopError("GitHub answered 403 Forbidden")
        self.ticket.remove(comment_id)


# -- the claim book, in memory ---------------------------------------------------


class DictBook:
    """The :class:`ClaimBook` in dicts, each change recorded."""

    def __init__(self) -> None:
        self.rounds: dict[WorkItemRef, PendingClaim] = {}
        self.held: dict[WorkItemRef, Holder] = {}
        self.known: dict[str, dict[str, str]] = {}
        self.calls: list[tuple[str, WorkItemRef | str]] = []

    def pending(self) -> Sequence[PendingClaim]:
        return list(self.rounds.values())

    def begin(self, claim: PendingClaim) -> None:
        self.calls.append(("begin", claim.ref))
        self.rounds[claim.ref] = claim

    def update(self, claim: PendingClaim) -> None:
        self.calls.append(("update", claim.ref))
        current = self.rounds.get(claim.ref)
        if current is not None and current.start == claim.start:
            self.rounds[claim.ref] = claim

    def settle(self, ref: WorkItemRef, start: int, holder: Holder | None) -> None:
        self.calls.append(("settle", ref))
        current = self.rounds.get(ref)
        if current is not None and current.start <= start:
            del self.rounds[ref]
        if holder is None:
            self.held.pop(ref, None)
        else:
            self.held[ref] = holder

    def release(self, ref: WorkItemRef) -> None:
        self.calls.append(("release", ref))
        self.rounds.pop(ref, None)
        self.held.pop(ref, None)

    def holders(self) -> Mapping[WorkItemRef, Holder]:
        return dict(self.held)

    def machines(self, repository: str) -> Mapping[str, str]:
        return dict(self.known.get(repository.casefold(), {}))

    def note_machines(self, repository: str, seen: Mapping[str, str]) -> None:
        self.calls.append(("note_machines", repository))
        key = repository.casefold()
        self.known[key] = {**self.known.get(key, {}), **seen}


# -- one machine -------------------------------------------------------------------


@dataclass
class Posted:
    ids: set[int] = field(default_factory=set[int])

    def posted(self) -> frozenset[int]:
        return frozenset(self.ids)

    def remember_posted(self, comment_id: int) -> None:
        self.ids.add(comment_id)


@dataclass
class Known:
    """What the reader knows of the items: the changed ones, every other one open."""

    changed: Mapping[WorkItemRef, Issue] = field(default_factory=dict[WorkItemRef, Issue])

    def known_open(self, ref: WorkItemRef) -> bool | None:
        issue = self.changed.get(ref)
        return True if issue is None else issue.is_open

    def look_up(self, ref: WorkItemRef) -> Issue:
        return self.changed.get(ref) or Issue(ref, True)


@dataclass(frozen=True)
class Control:
    ref: WorkItemRef
    verb: str
    actor: str
    #: Whether the item's hold was held when the verb ran.
    held: bool


class World:
    """One machine sharing the repository: its state root, book, sessions and GitHub."""

    def __init__(
        self,
        root: Path,
        ticket: Ticket,
        *,
        machine: str = ME,
        name: str = "laptop",
        book: str = "dict",
        claims: bool = True,
    ) -> None:
        layout = StateLayout(root)
        self.store = WorkItemStore(
            layout.portable_dir, legacy_layout(layout), locks_dir=layout.portable_locks_dir
        )
        self.polls = PollState(self.store)
        self.polls.baseline_comments(ITEM, [])  # met before: its comments are decided
        self.ticket = ticket
        self.github = MachineGitHub(ticket)
        self.book: ClaimBook = (
            DictBook()
            if book == "dict"
            else FileClaimBook(root / "local" / "claims.json", root / "local" / "claims.lock")
        )
        self.machine = Machine(machine, name)
        self.claims_on = claims
        self.live: dict[WorkItemRef, LiveSession] = {}
        self.controls: list[Control] = []
        self.pasted: list[int | str] = []
        self.events: list[tuple[str, str, dict[str, Any]]] = []
        self.warnings: list[str] = []
        self.checkpoints: list[str] = []
        self.posted = Posted()
        self.login_calls = 0
        self.login_fault = False
        #: A GitHub App's installation token: GitHub will not say whose it is; only the
        #: logins learned from its claims are known.
        self.app_token = False
        self.learned: list[str] = []
        self.nonces = 0
        self.holding: dict[WorkItemRef, int] = {}
        #: Runs once, when the next hold is taken (another reader that had it first).
        self.on_hold: Callable[[], object] | None = None

    # -- the ports -------------------------------------------------------------

    def own_login(self) -> str | None:
        self.login_calls += 1
        if self.login_fault:
            raise TheLoopError("GitHub answered 401 Bad credentials for GET /user")
        if self.app_token:
            return self.learned[-1] if self.learned else None
        return BOT

    def learn_login(self, login: str) -> None:
        self.learned.append(login)

    def nonce(self) -> str:
        self.nonces += 1
        return f"{self.nonces:016x}"

    @contextmanager
    def hold(self, ref: WorkItemRef) -> Iterator[None]:
        self.holding[ref] = self.holding.get(ref, 0) + 1
        if self.on_hold is not None:
            hook, self.on_hold = self.on_hold, None
            hook()
        try:
            yield
        finally:
            self.holding[ref] -= 1

    def control(self, facts: ItemFacts, verb: str, actor: str) -> str:
        ref = facts.ref
        self.controls.append(Control(ref, verb, actor, self.holding.get(ref, 0) > 0))
        if verb == START:
            if ref in self.live:
                return "already running"
            self.live[ref] = LiveSession(ref, SessionState.ACTIVE, f"loop:{ref.number}")
            return "started"
        if verb in (STOP, CLEANUP):
            return "closed" if self.live.pop(ref, None) is not None else "no session"
        return "no session"

    def close(self, ref: WorkItemRef, cleanup: bool) -> tuple[int, int]:
        del cleanup
        self.live.pop(ref, None)
        return 0, 0

    def deliver(self, session: LiveSession, delivery: Delivery) -> None:
        del session
        self.pasted.append(delivery.comment_id)

    def emit(self, event: str, level: str = "info", **fields: Any) -> None:
        self.events.append((event, level, fields))

    def ports(self) -> IntakePorts:
        claims = None
        if self.claims_on:
            claims = ClaimPorts(
                machine=self.machine,
                own_login=self.own_login,
                comments_after=self.github.comments_after,
                delete_comment=self.github.delete_comment,
                book=self.book,
                nonce=self.nonce,
                learn_login=self.learn_login,
            )
        return IntakePorts(
            github=self.github,
            ledger=self.polls,
            posted=self.posted,
            sessions=lambda: list(self.live.values()),
            armed=lambda: (),
            control=self.control,
            close=self.close,
            close_gone=lambda _ref, _why: None,
            end_endpoint=lambda _owner, _pr, _state: None,
            deliver=self.deliver,
            pane_mark=lambda _target: None,
            emit=self.emit,
            clock=lambda: T0.timestamp(),
            warn=self.warnings.append,
            checkpoint=self.checkpoints.append,
            hold=self.hold,
            claims=claims,
        )

    # -- rounds ------------------------------------------------------------------

    def round(self, known: Known | None = None) -> tuple[Intake, Round]:
        """A fresh intake (a new cycle) and its watched round over the repository."""
        settings = IntakeSettings(
            labels=("the-loop",), policy=CommentPolicy(AuthorizedUsers.of(["alice"]))
        )
        intake = Intake(settings, self.ports())
        round_ = intake.round(ITEM)
        listed = ListedNumbers(ITEM, frozenset({ITEM.number}))
        round_.watch(listed=listed, knowledge=known or Known(), read_from=T0)
        return intake, round_

    def cycle(self, *comments: IssueComment, known: Known | None = None) -> Intake:
        """One whole cycle, in the poll's order: the batch read ahead, each comment fed,
        the pending claims, then the deliveries and the closures."""
        intake, round_ = self.round(known)
        round_.read_ahead(comments)
        for each in comments:
            round_.comment(each)
        round_.claims()
        round_.deliver()
        round_.closures()
        return intake

    # -- what it did ---------------------------------------------------------------

    def starts(self) -> list[Control]:
        return [c for c in self.controls if c.verb == START]

    def named(self, event: str) -> list[dict[str, Any]]:
        return [fields for name, _level, fields in self.events if name == event]

    def control_section(self) -> dict[str, Any]:
        found = self.store.section(ITEM, CONTROL)
        return dict(found) if isinstance(found, dict) else {}

    def rounds(self) -> list[PendingClaim]:
        return [p for p in self.book.pending() if p.ref == ITEM]

    def queued(self) -> list[str]:
        return [str(row.get("id")) for row in self.polls.deliveries(ITEM)]


@pytest.fixture
def ticket() -> Ticket:
    return Ticket()


@pytest.fixture
def laptop(tmp_path: Path, ticket: Ticket) -> World:
    return World(tmp_path / "laptop", ticket)


@pytest.fixture(params=["dict", "file"])
def either(request: pytest.FixtureRequest, tmp_path: Path, ticket: Ticket) -> World:
    """The laptop over the in-memory book, then over ``local/claims.json``."""
    return World(tmp_path / "laptop", ticket, book=str(request.param))


def holding_elsewhere(world: World, machine: str = OTHER, name: str = "buildbox") -> None:
    """The item is held by another machine, as a round lost earlier left it."""
    world.book.settle(ITEM, 1500, Holder(1500, machine, name, 1501))


# -- a lone machine --------------------------------------------------------------------


def test_a_lone_machine_posts_one_claim_reads_the_thread_once_and_spawns(either: World) -> None:
    start = either.ticket.add("the-loop start")
    intake = either.cycle(start)
    assert either.starts() == [Control(ITEM, START, "alice", held=True)], "spawned under the hold"
    [body] = either.github.posts
    assert body.startswith("the-loop: starting an agent on laptop\n")
    assert f"<!-- the-loop:claim start={start.id} machine={ME} nonce=" in body
    assert either.github.reads == [start.created_at], "the thread after the start, read once"
    assert either.github.deletes == []
    [mine] = either.ticket.ours()
    assert mine.id in either.posted.posted(), "its own claim is never read as anyone's words"
    assert either.rounds() == []
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, ME, "laptop", mine.id)}
    [won] = either.named("claim.won")
    assert (won["start"], won["comment_id"], won["outcome"]) == (start.id, mine.id, "started")
    [posted] = either.named("claim.posted")
    assert (posted["comment_id"], posted["kind"]) == (mine.id, "claim")
    [command] = either.named("poll.command")
    assert (command["command"], command["comment_id"], command["outcome"]) == (
        "start",
        start.id,
        "started",
    )
    assert intake.counts.commands == 1 and intake.counts.failed == []
    assert [c for c in either.checkpoints if c.startswith("claim-")] == [
        f"claim-posted-{start.id}",
        f"claim-won-{start.id}",
    ]
    assert either.warnings == []


def test_the_next_cycle_asks_nothing_more_of_a_decided_start(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    laptop.cycle(start)
    [mine] = laptop.ticket.ours()
    laptop.cycle(mine)  # the next cycle's batch holds the claim it posted
    assert (len(laptop.github.posts), len(laptop.github.reads)) == (1, 1)
    assert len(laptop.starts()) == 1
    assert laptop.named("claim.lost") == []


def test_a_comment_after_the_start_in_the_same_batch_meets_the_new_session(
    laptop: World,
) -> None:
    start = laptop.ticket.add("the-loop start")
    note = laptop.ticket.add("Please also fix the docs.")
    intake = laptop.cycle(start, note)
    assert laptop.pasted == [note.id]
    assert intake.counts.delivered == 1


def test_a_batch_without_a_claim_does_not_ask_for_the_tokens_login(laptop: World) -> None:
    _, round_ = laptop.round()
    round_.read_ahead([laptop.ticket.add("hello"), laptop.ticket.add("more words")])
    assert laptop.login_calls == 0


# -- another machine's claim -------------------------------------------------------------


def test_a_winning_claim_by_another_machine_in_the_batch_is_never_answered_with_a_post(
    either: World,
) -> None:
    start = either.ticket.add("the-loop start")
    theirs = either.ticket.claim(start)
    intake = either.cycle(start, theirs)
    assert either.github.posts == [] and either.github.post_attempts == 0
    assert either.github.reads == [], "the batch already said who won: no read"
    assert either.starts() == []
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, OTHER, "buildbox", theirs.id)}
    assert either.rounds() == []
    assert either.control_section()["heldBy"] == {
        "machine": OTHER,
        "name": "buildbox",
        "start": start.id,
    }
    [lost] = either.named("claim.lost")
    assert (lost["machine"], lost["name"], lost["start"], lost["comment_id"]) == (
        OTHER,
        "buildbox",
        start.id,
        theirs.id,
    )
    assert Action("command", ITEM.ref, "alice", START, start.id, outcome="held by buildbox") in (
        intake.counts.actions
    )
    assert dict(either.book.machines("octo/app")) == {OTHER: "buildbox"}, "the machine is known"


def test_a_comment_after_a_lost_start_in_the_same_batch_is_seen_only(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(start)
    note = laptop.ticket.add("Please also fix the docs.")
    intake = laptop.cycle(start, theirs, note)
    assert laptop.starts() == [] and laptop.pasted == []
    assert laptop.queued() == []
    assert str(note.id) in laptop.polls.seen_comments(ITEM)
    assert intake.counts.seen == 1


def test_a_claim_on_an_older_start_in_the_batch_does_not_decide_this_one(laptop: World) -> None:
    older = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(older)
    start = laptop.ticket.add("the-loop start")
    laptop.polls.resolve_comment(ITEM, str(older.id))  # the older start was handled before
    laptop.cycle(theirs, start)
    assert len(laptop.github.posts) == 1
    assert len(laptop.starts()) == 1


def test_another_machines_lower_claim_seen_after_posting_loses_and_deletes_its_own(
    either: World,
) -> None:
    start = either.ticket.add("the-loop start")
    raced: list[IssueComment] = []
    either.github.before_post = lambda: raced.append(either.ticket.claim(start))
    either.cycle(start)
    [theirs] = raced
    [body] = either.github.posts
    assert f"machine={ME} " in body
    mine = theirs.id + 1  # GitHub took this machine's POST right after the other's
    assert either.github.deletes == [mine], "it deletes its own claim, and only that"
    assert either.starts() == []
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, OTHER, "buildbox", theirs.id)}
    assert either.ticket.ours() == [], "the loser's claim is gone from the ticket"
    assert [c.id for c in either.ticket.comments] == [start.id, theirs.id]
    assert either.rounds() == []
    assert len(either.github.reads) == 1
    [lost] = either.named("claim.lost")
    assert lost["comment_id"] == theirs.id


def test_a_higher_claim_by_another_machine_is_not_deleted_and_this_machine_wins(
    laptop: World,
) -> None:
    start = laptop.ticket.add("the-loop start")
    laptop.github.hide_own_posts = True
    laptop.cycle(start)  # its claim is not shown yet: undecided
    [mine] = laptop.ticket.ours()
    theirs = laptop.ticket.claim(start)  # the other machine posts after it
    laptop.github.hidden.clear()
    laptop.cycle(theirs)
    assert laptop.github.deletes == []
    assert len(laptop.starts()) == 1
    assert dict(laptop.book.holders())[ITEM].comment_id == mine.id
    assert laptop.named("claim.lost") == []


def test_a_losing_claim_that_cannot_be_deleted_still_loses_and_holds(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    laptop.github.before_post = lambda: laptop.ticket.claim(start)
    laptop.github.delete_fault = True
    laptop.cycle(start)
    assert laptop.starts() == []
    assert len(laptop.github.deletes) == 1
    assert [c.id for c in laptop.ticket.ours()] == laptop.github.deletes, "still standing"
    assert dict(laptop.book.holders())[ITEM].machine == OTHER
    assert len(laptop.named("claim.lost")) == 1
    [warning] = laptop.warnings
    assert "could not delete this machine's losing claim" in warning
    assert "403 Forbidden" in warning
    assert laptop.rounds() == []


def test_two_machines_reading_one_ticket_spawn_once(tmp_path: Path, ticket: Ticket) -> None:
    laptop = World(tmp_path / "laptop", ticket)
    buildbox = World(tmp_path / "buildbox", ticket, machine=OTHER, name="buildbox")
    start = ticket.add("the-loop start")
    # The buildbox's whole cycle runs while the laptop's POST is in flight: both post.
    laptop.github.before_post = lambda: buildbox.cycle(start)
    laptop.cycle(start)
    assert (len(laptop.starts()), len(buildbox.starts())) == (0, 1)
    assert len(laptop.github.posts) == len(buildbox.github.posts) == 1
    assert [c.body.splitlines()[0] for c in ticket.comments if "the-loop:claim " in c.body] == [
        "the-loop: starting an agent on buildbox"
    ]
    assert dict(laptop.book.holders())[ITEM].machine == OTHER
    assert dict(buildbox.book.holders())[ITEM].machine == OTHER


# -- forged and edited claims -------------------------------------------------------------


def test_a_forged_or_edited_claim_with_the_lowest_id_decides_nothing(either: World) -> None:
    start = either.ticket.add("the-loop start")
    forged = either.ticket.claim(start, THIRD, name="elsewhere", login="mallory")

    def race() -> None:
        either.ticket.claim(start, THIRD, name="elsewhere", login="Mallory")
        either.ticket.claim(start, OTHER, edited=True)

    either.github.before_post = race
    either.cycle(start, forged)
    assert len(either.github.posts) == 1, "the forged claim in the batch was not taken as won"
    assert len(either.starts()) == 1
    assert either.github.deletes == []
    assert either.named("claim.lost") == []
    assert dict(either.book.holders())[ITEM].machine == ME
    assert THIRD not in either.book.machines("octo/app"), "a forger is not a machine seen"


def test_an_edited_claim_in_the_batch_is_not_taken_as_won(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    edited = laptop.ticket.claim(start, edited=True)
    laptop.cycle(start, edited)
    assert len(laptop.github.posts) == 1
    assert len(laptop.starts()) == 1


# -- a partition, a crash ---------------------------------------------------------------------


def test_a_thread_that_cannot_be_read_never_spawns_and_the_round_waits(either: World) -> None:
    start = either.ticket.add("the-loop start")
    either.github.read_fault = True
    intake = either.cycle(start)
    assert either.starts() == []
    [pending] = either.rounds()
    [mine] = either.ticket.ours()
    assert (pending.start, pending.comment_id, pending.posting) == (start.id, mine.id, True)
    assert any("not decided yet" in w and "connection reset" in w for w in either.warnings)
    assert intake.counts.failed and all(": claim: " in f for f in intake.counts.failed)
    assert dict(either.book.holders()) == {}
    either.github.read_fault = False
    later = either.cycle()
    assert either.starts() == [Control(ITEM, START, "alice", held=True)]
    assert len(either.github.posts) == 1, "the claim already posted is not posted again"
    assert either.rounds() == []
    assert later.counts.failed == []


def test_a_login_that_cannot_be_asked_never_spawns_and_the_round_waits(either: World) -> None:
    start = either.ticket.add("the-loop start")
    either.login_fault = True
    either.cycle(start)
    assert either.starts() == []
    assert either.github.post_attempts == 0 and either.github.reads == []
    [pending] = either.rounds()
    assert (pending.start, pending.posting, pending.comment_id) == (start.id, False, None)
    assert any("401 Bad credentials" in w for w in either.warnings)
    either.login_fault = False
    either.cycle()
    assert len(either.starts()) == 1
    assert len(either.github.posts) == 1


def test_a_claim_login_unknown_while_reading_ahead_still_decides_safely(laptop: World) -> None:
    """The batch's claims cannot be read (no login): the round posts, and the thread it
    reads after says who won."""
    start = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(start)
    laptop.login_fault = True
    _, round_ = laptop.round()
    round_.read_ahead([start, theirs])
    assert any("claims are not read" in w for w in laptop.warnings)
    laptop.login_fault = False
    round_.comment(start)
    assert laptop.starts() == []
    assert dict(laptop.book.holders())[ITEM].machine == OTHER


def test_an_app_token_github_will_not_name_learns_its_login_from_its_own_claim_and_spawns(
    either: World,
) -> None:
    either.app_token = True
    start = either.ticket.add("the-loop start")
    intake = either.cycle(start)
    assert either.starts() == [Control(ITEM, START, "alice", held=True)]
    [mine] = either.ticket.ours()
    assert either.learned == [BOT], "the author GitHub shows on its own claim"
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, ME, "laptop", mine.id)}
    assert (len(either.github.posts), len(either.github.reads)) == (1, 1)
    assert intake.counts.failed == [] and either.warnings == []


def test_an_app_token_meeting_a_claim_before_it_knows_its_login_posts_then_yields(
    laptop: World,
) -> None:
    """The batch's claim cannot be judged yet: the machine posts its own, learns its
    login from it in the thread it reads, and there the lower claim wins."""
    laptop.app_token = True
    start = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(start)
    laptop.cycle(start, theirs)
    assert laptop.starts() == []
    assert laptop.learned == [BOT]
    holder = dict(laptop.book.holders())[ITEM]
    assert (holder.machine, holder.comment_id) == (OTHER, theirs.id)
    assert laptop.ticket.ours() == [], "its own losing claim is deleted"
    assert laptop.warnings == []


def test_an_app_tokens_claim_not_shown_yet_waits_for_the_next_cycle_then_decides(
    laptop: World,
) -> None:
    laptop.app_token = True
    laptop.github.hide_own_posts = True
    start = laptop.ticket.add("the-loop start")
    intake = laptop.cycle(start)
    assert laptop.starts() == [] and laptop.learned == [] and intake.counts.failed == []
    [pending] = laptop.rounds()
    assert pending.comment_id is not None
    laptop.github.hidden.clear()
    laptop.cycle()
    assert len(laptop.starts()) == 1 and laptop.learned == [BOT]
    assert len(laptop.github.posts) == 1


def test_an_app_tokens_claim_whose_post_answer_was_lost_is_posted_again_the_lower_deciding(
    either: World,
) -> None:
    """No comment is taken for the claim by its nonce: it is posted again under a new
    one, GitHub's answer names it, and the copy the lost answer left is this machine's
    claim too once the login is known: the lower wins, the other is deleted."""
    either.app_token = True
    either.github.post_fault = "lost-answer"
    start = either.ticket.add("the-loop start")
    either.cycle(start)
    assert either.starts() == [] and either.learned == []
    [first] = either.ticket.ours()
    either.github.post_fault = ""
    either.cycle()
    assert len(either.starts()) == 1 and either.learned == [BOT]
    assert len(either.github.posts) == 2, "posted again, under a new nonce"
    assert "nonce=0000000000000002" in either.github.posts[1]
    [second] = either.github.deletes
    assert second > first.id and either.ticket.ours() == [first], "the higher copy deleted"
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, ME, "laptop", first.id)}
    assert either.rounds() == []


def test_an_app_tokens_lost_claim_and_its_copy_are_both_deleted_when_another_wins(
    laptop: World,
) -> None:
    laptop.app_token = True
    laptop.github.post_fault = "lost-answer"
    start = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(start)
    laptop.cycle(start, theirs)
    laptop.github.post_fault = ""
    laptop.cycle()
    assert laptop.starts() == [] and laptop.learned == [BOT]
    assert len(laptop.github.posts) == 2 and len(laptop.github.deletes) == 2
    assert laptop.ticket.ours() == [], "every claim of its own on the start is deleted"
    holder = dict(laptop.book.holders())[ITEM]
    assert (holder.machine, holder.comment_id) == (OTHER, theirs.id)


def test_an_app_token_never_learns_its_login_from_an_older_comment_edited_to_carry_its_nonce(
    either: World,
) -> None:
    """The POST's answer is lost; a stranger then edits an older comment of theirs to
    carry the claim's marker (public once posted). It is the lowest comment carrying the
    marker, and the thread after the start holds it (it was updated since), yet its
    author is never taken for the token's login: its claims would count as this
    machine's, and this machine's own would stop counting."""
    either.app_token = True
    older = either.ticket.add("looks good to me", login="mallory")
    start = either.ticket.add("the-loop start")
    either.github.post_fault = "lost-answer"
    either.cycle(start)
    [posted] = [c for c in either.ticket.comments if c.login == BOT]
    marker = posted.body.splitlines()[-1]
    edited = replace(
        older, body=f"{older.body}\n{marker}", updated_at=posted.created_at + timedelta(minutes=1)
    )
    either.ticket.comments[either.ticket.comments.index(older)] = edited
    either.github.post_fault = ""
    either.cycle()
    assert "mallory" not in either.learned
    assert either.learned == [BOT], "learned from the comment GitHub's answer named"
    assert len(either.starts()) == 1
    assert dict(either.book.holders())[ITEM].comment_id == posted.id
    assert edited.id not in either.github.deletes, "a stranger's comment is never deleted"


def test_an_app_token_never_learns_its_login_from_a_strangers_copy_of_its_claim(
    laptop: World,
) -> None:
    """The POST's answer is lost and the claim is not shown yet; a stranger's App posts
    an exact copy of it (unedited, after the start, one well-formed marker: only its
    author differs), the one comment carrying the nonce the thread shows. Its author is
    never taken for the token's login; the claim posted again is, once shown."""
    laptop.app_token = True
    laptop.github.hide_own_posts = True
    laptop.github.post_fault = "lost-answer"
    start = laptop.ticket.add("the-loop start")
    laptop.cycle(start)
    [posted] = [c for c in laptop.ticket.comments if c.login == BOT]
    copy = laptop.ticket.add(posted.body, login="mallory-app[bot]")
    laptop.ticket.comments[-1] = replace(copy, user_type="Bot")
    laptop.github.post_fault = ""
    laptop.cycle()
    assert laptop.learned == [] and laptop.starts() == []
    laptop.github.hidden.clear()
    laptop.cycle()
    assert laptop.learned == [BOT] and len(laptop.starts()) == 1
    assert dict(laptop.book.holders())[ITEM].comment_id == posted.id
    assert copy.id not in laptop.github.deletes


def test_a_refused_post_never_spawns_and_is_posted_once_next_cycle(either: World) -> None:
    start = either.ticket.add("the-loop start")
    either.github.post_fault = "refused"
    either.cycle(start)
    assert either.starts() == []
    assert either.ticket.ours() == []
    [pending] = either.rounds()
    assert (pending.posting, pending.comment_id) == (True, None)
    assert any("502 Bad Gateway" in w for w in either.warnings)
    either.github.post_fault = ""
    either.cycle()
    assert len(either.starts()) == 1
    assert len(either.ticket.ours()) == 1
    assert len(either.github.posts) == 1


def test_a_post_whose_answer_was_lost_is_found_by_its_nonce_and_not_posted_again(
    either: World,
) -> None:
    start = either.ticket.add("the-loop start")
    either.github.post_fault = "lost-answer"
    _, round_ = either.round()
    round_.read_ahead([start])
    round_.comment(start)
    assert either.starts() == []
    assert any("did not answer in time" in w for w in either.warnings)
    reads = len(either.github.reads)
    round_.claims()  # tried once this cycle: not again
    assert (either.starts(), len(either.github.reads)) == ([], reads)
    _, later = either.round()  # the next cycle
    later.claims()
    assert len(either.starts()) == 1
    assert either.github.post_attempts == 1, "posted twice"
    [mine] = either.ticket.ours()
    assert dict(either.book.holders())[ITEM].comment_id == mine.id


def test_a_post_without_an_id_is_found_by_its_nonce_in_the_read_after_it(either: World) -> None:
    start = either.ticket.add("the-loop start")
    either.github.post_fault = "no-id"
    _, round_ = either.round()
    round_.read_ahead([start])
    round_.comment(start)
    [mine] = either.ticket.ours()
    assert len(either.starts()) == 1
    assert either.github.post_attempts == 1
    assert either.rounds() == []
    assert dict(either.book.holders())[ITEM] == Holder(start.id, ME, "laptop", mine.id)


def crashed_while_posting(world: World, start: IssueComment, *, posted: bool) -> PendingClaim:
    """A round a crash left ``posting``: its POST sent, its answer never kept."""
    nonce = "00000000000000c5"
    world.polls.resolve_comment(ITEM, str(start.id))  # the start's command was recorded
    pending = PendingClaim(ITEM, start.id, start.created_at, "alice", nonce, posting=True)
    world.book.begin(pending)
    if posted:
        world.ticket.claim(start, ME, name="laptop", nonce=nonce)
    return pending


def test_a_round_left_posting_whose_claim_is_in_the_thread_is_not_posted_twice(
    either: World,
) -> None:
    start = either.ticket.add("the-loop start")
    crashed_while_posting(either, start, posted=True)
    [mine] = either.ticket.ours()
    either.cycle()
    assert either.github.post_attempts == 0
    assert either.starts() == [Control(ITEM, START, "alice", held=True)]
    assert dict(either.book.holders())[ITEM].comment_id == mine.id
    assert len(either.github.reads) == 1


def test_a_round_left_posting_whose_claim_is_not_in_the_thread_is_posted_once(
    either: World,
) -> None:
    start = either.ticket.add("the-loop start")
    crashed_while_posting(either, start, posted=False)
    either.cycle()
    assert either.github.post_attempts == 1
    [mine] = either.ticket.ours()
    assert "nonce=00000000000000c5 " in mine.body, "the round's own nonce, kept"
    assert len(either.starts()) == 1
    either.cycle()
    assert either.github.post_attempts == 1


def test_a_round_left_posting_that_lost_meanwhile_deletes_its_claim(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    theirs = laptop.ticket.claim(start)
    crashed_while_posting(laptop, start, posted=True)
    [mine] = laptop.ticket.ours()
    laptop.cycle(theirs, mine)  # the batch holds both: a posting round reads the thread
    assert laptop.github.post_attempts == 0
    assert laptop.starts() == []
    assert laptop.github.deletes == [mine.id]
    assert dict(laptop.book.holders())[ITEM].comment_id == theirs.id


def test_its_own_claim_not_yet_in_the_thread_keeps_the_round_pending(either: World) -> None:
    start = either.ticket.add("the-loop start")
    either.github.hide_own_posts = True
    intake = either.cycle(start)
    assert either.starts() == []
    [pending] = either.rounds()
    assert pending.comment_id is not None and pending.posting
    assert intake.counts.failed == [] and either.warnings == [], "not a failure: a wait"
    assert dict(either.book.holders()) == {}
    either.github.hidden.clear()
    either.cycle()
    assert len(either.starts()) == 1
    assert len(either.github.posts) == 1


def test_a_round_is_only_decided_for_its_own_repository(laptop: World) -> None:
    laptop.book.begin(PendingClaim(ELSEWHERE, 77, T0, "alice", "0" * 16))
    laptop.cycle()
    assert laptop.github.reads == [] and laptop.github.post_attempts == 0
    assert [p.ref for p in laptop.book.pending()] == [ELSEWHERE]


def test_a_round_decided_by_the_other_reader_meanwhile_is_not_decided_again(
    laptop: World,
) -> None:
    start = laptop.ticket.add("the-loop start")
    crashed_while_posting(laptop, start, posted=True)
    _, round_ = laptop.round()
    decided = Holder(start.id, ME, "laptop", 1)
    # The webhook's reader decided it while this one waited for the item's hold.
    laptop.on_hold = lambda: laptop.book.settle(ITEM, start.id, decided)
    round_.claims()
    assert laptop.on_hold is None, "settled under the item's hold"
    assert laptop.github.reads == [] and laptop.starts() == []
    assert dict(laptop.book.holders()) == {ITEM: decided}


def test_a_round_replaced_by_the_other_reader_meanwhile_is_left_to_it(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    crashed_while_posting(laptop, start, posted=True)
    later = laptop.ticket.add("the-loop start")
    newer = PendingClaim(ITEM, later.id, later.created_at, "alice", "00000000000000d7")
    _, round_ = laptop.round()
    laptop.on_hold = lambda: laptop.book.begin(newer)  # the webhook began a later start
    round_.claims()
    assert laptop.on_hold is None
    assert laptop.github.post_attempts == 0 and laptop.github.reads == []
    assert laptop.starts() == []
    assert laptop.rounds() == [newer], "the other reader's round is its own to decide"


# -- stops, cleanups and closures ----------------------------------------------------------------


@pytest.mark.parametrize("verb", [STOP, CLEANUP])
def test_a_stop_or_cleanup_releases_the_holder_and_a_later_start_is_claimed_afresh(
    either: World, verb: str
) -> None:
    start = either.ticket.add("the-loop start")
    theirs = either.ticket.claim(start)
    either.cycle(start, theirs)
    assert dict(either.book.holders())[ITEM].machine == OTHER
    stop = either.ticket.add(f"the-loop {verb}")
    either.cycle(stop)
    assert dict(either.book.holders()) == {}
    assert "heldBy" not in either.control_section()
    again = either.ticket.add("the-loop start")
    either.cycle(again)
    assert either.starts() == [Control(ITEM, START, "alice", held=True)]
    [body] = either.github.posts
    assert f"start={again.id} " in body
    assert dict(either.book.holders())[ITEM].machine == ME


def test_a_stop_ends_a_round_not_yet_decided(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    laptop.github.hide_own_posts = True
    laptop.cycle(start)
    assert len(laptop.rounds()) == 1
    laptop.cycle(laptop.ticket.add("the-loop stop"))
    laptop.github.hidden.clear()
    laptop.cycle()
    assert laptop.starts() == [], "a stopped start spawned once its claim showed"
    assert laptop.rounds() == []


def test_a_closed_items_holder_is_released_at_closures(laptop: World) -> None:
    holding_elsewhere(laptop)
    laptop.book.settle(ELSEWHERE, 9, Holder(9, OTHER, "buildbox", 10))
    closed = Known(
        changed={
            ITEM: Issue(ITEM, False, closed_by="alice"),
            ELSEWHERE: Issue(ELSEWHERE, False, closed_by="alice"),
        }
    )
    laptop.cycle(known=closed)
    assert dict(laptop.book.holders()) == {ELSEWHERE: Holder(9, OTHER, "buildbox", 10)}, (
        "only this repository's closed item is released"
    )


def test_an_open_items_holder_is_kept_at_closures(laptop: World) -> None:
    holding_elsewhere(laptop)
    laptop.cycle(known=Known(changed={ITEM: Issue(ITEM, True)}))
    assert dict(laptop.book.holders())[ITEM].machine == OTHER


def test_a_closed_items_pending_round_ends_at_closures(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start")
    laptop.github.hide_own_posts = True
    closed = Known(changed={ITEM: Issue(ITEM, False, closed_by="alice")})
    laptop.cycle(start, known=closed)
    assert laptop.rounds() == [], "the closed item's round outlived its closure"
    laptop.github.hidden.clear()
    laptop.cycle(known=closed)
    assert laptop.starts() == []


# -- an item held elsewhere -----------------------------------------------------------------------


@pytest.mark.parametrize("held", [True, False])
def test_comments_on_an_item_held_elsewhere_are_seen_not_queued_even_with_a_session_here(
    laptop: World, held: bool
) -> None:
    laptop.live[ITEM] = LiveSession(ITEM, SessionState.ACTIVE, "loop:15")
    if held:
        holding_elsewhere(laptop)
    note = laptop.ticket.add("Please also fix the docs.")
    intake = laptop.cycle(note)
    assert str(note.id) in laptop.polls.seen_comments(ITEM)
    if held:
        assert (laptop.queued(), laptop.pasted, intake.counts.seen) == ([], [], 1)
    else:
        assert (laptop.queued(), laptop.pasted, intake.counts.delivered) == (
            [str(note.id)],
            [note.id],
            1,
        )


def waiting(world: World, comment_id: int) -> None:
    """A comment queued for the item's pane before the item was held elsewhere."""

    def change(ledger: Ledger) -> None:
        ledger[SEEN_COMMENTS].append(str(comment_id))
        row = {"id": str(comment_id), "state": "waiting", "attempts": 0, "by": "alice"}
        ledger[DELIVERIES] = [{**row, "text": "queued words"}]

    world.polls.change(ITEM, change)


def test_deliver_skips_a_session_held_elsewhere(laptop: World) -> None:
    laptop.live[ITEM] = LiveSession(ITEM, SessionState.ACTIVE, "loop:15")
    waiting(laptop, 1400)
    holding_elsewhere(laptop)
    _, round_ = laptop.round()
    round_.deliver()
    assert laptop.pasted == []
    laptop.book.release(ITEM)
    _, round_ = laptop.round()
    round_.deliver()
    assert laptop.pasted == [1400]


def test_a_start_on_an_item_held_elsewhere_begins_a_new_round(laptop: World) -> None:
    holding_elsewhere(laptop)
    start = laptop.ticket.add("the-loop start")
    laptop.cycle(start)
    assert len(laptop.github.posts) == 1
    assert len(laptop.starts()) == 1
    assert dict(laptop.book.holders())[ITEM].machine == ME


# -- a start that names a machine -----------------------------------------------------------------


@pytest.mark.parametrize("said", ["laptop", "LAPTOP"])
def test_a_start_on_this_machine_is_claimed_as_any_start(either: World, said: str) -> None:
    either.book.note_machines("octo/app", {OTHER: "buildbox"})
    start = either.ticket.add(f"the-loop start on {said}")
    either.cycle(start)
    [body] = either.github.posts
    assert "<!-- the-loop:claim " in body and "no-machine" not in body
    assert len(either.starts()) == 1


def test_a_start_on_another_known_machine_is_held_by_it_without_posting(either: World) -> None:
    either.book.note_machines("octo/app", {OTHER: "buildbox", THIRD: "desk"})
    start = either.ticket.add("the-loop start on BuildBox")
    intake = either.cycle(start)
    assert either.github.post_attempts == 0 and either.github.reads == []
    assert either.starts() == []
    assert dict(either.book.holders()) == {ITEM: Holder(start.id, OTHER, "BuildBox", None)}
    assert either.control_section()["heldBy"]["machine"] == OTHER
    [lost] = either.named("claim.lost")
    assert (lost["machine"], lost["comment_id"]) == (OTHER, None)
    assert intake.counts.actions[-1].outcome == "held by BuildBox"


def test_a_start_on_another_machine_ends_the_items_earlier_round(laptop: World) -> None:
    laptop.book.note_machines("octo/app", {OTHER: "buildbox"})
    first = laptop.ticket.add("the-loop start")
    laptop.github.hide_own_posts = True
    laptop.cycle(first)  # its claim is not shown yet: pending
    laptop.github.hidden.clear()
    named = laptop.ticket.add("the-loop start on buildbox")
    laptop.cycle(named)
    assert laptop.starts() == [], "the laptop spawned although the latest start named buildbox"
    assert dict(laptop.book.holders())[ITEM].machine == OTHER


def test_a_start_on_this_machines_earlier_name_is_not_held_by_itself(
    tmp_path: Path, ticket: Ticket
) -> None:
    desk = World(tmp_path / "desk", ticket, name="desk")  # routing.machineName changed
    desk.book.note_machines("octo/app", {ME: "laptop", OTHER: "buildbox"})
    start = ticket.add("the-loop start on laptop")  # the others know this machine so
    desk.cycle(start)
    assert desk.named("claim.lost") == [], "it lost the start to itself"
    assert len(desk.starts()) == 1


def test_a_start_on_an_unknown_machine_gets_one_notice_and_nobody_spawns(either: World) -> None:
    either.book.note_machines("octo/app", {OTHER: "buildbox"})
    start = either.ticket.add("the-loop start on nowhere")
    either.cycle(start)
    [body] = either.github.posts
    assert body.startswith(
        "the-loop: no machine named nowhere has claimed a start on this repository"
    )
    assert "machines seen claiming here: buildbox, laptop" in body
    assert f"<!-- the-loop:no-machine start={start.id} machine={ME} " in body
    assert either.starts() == []
    assert either.rounds() == [] and dict(either.book.holders()) == {}
    [unknown] = either.named("claim.unknown_machine")
    assert (unknown["named"], unknown["notice_posted"]) == ("nowhere", True)
    assert either.github.deletes == []
    either.cycle(*either.ticket.ours())
    assert len(either.github.posts) == 1, "noticed twice"


def test_a_second_notice_on_an_unknown_machine_is_deleted(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start on nowhere")

    def other_notice() -> None:
        body = no_machine_body(
            named="nowhere", seen=["buildbox"], start=start.id, machine=OTHER, nonce="2" * 16
        )
        laptop.ticket.add(body, login=BOT)

    laptop.github.before_post = other_notice
    laptop.cycle(start)
    mine = laptop.ticket.next_id - 1  # GitHub took this machine's notice last
    assert laptop.github.deletes == [mine]
    assert [c.id for c in laptop.ticket.comments] == [start.id, mine - 1]
    assert laptop.starts() == []
    [unknown] = laptop.named("claim.unknown_machine")
    assert unknown["notice_posted"] is False


def test_a_claim_by_the_named_machine_makes_it_the_holder_and_the_notice_goes(
    laptop: World,
) -> None:
    start = laptop.ticket.add("the-loop start on nowhere")
    raced: list[IssueComment] = []
    laptop.github.before_post = lambda: raced.append(
        laptop.ticket.claim(start, THIRD, name="nowhere")
    )
    laptop.cycle(start)
    [theirs] = raced
    assert laptop.ticket.ours() == [], "its notice still stands"
    assert len(laptop.github.deletes) == 1
    assert dict(laptop.book.holders()) == {ITEM: Holder(start.id, THIRD, "nowhere", theirs.id)}
    assert laptop.starts() == []


def test_a_notice_already_in_the_batch_is_not_answered_with_another(laptop: World) -> None:
    start = laptop.ticket.add("the-loop start on nowhere")
    body = no_machine_body(
        named="nowhere", seen=["buildbox"], start=start.id, machine=OTHER, nonce="2" * 16
    )
    theirs = laptop.ticket.add(body, login=BOT)
    laptop.cycle(start, theirs)
    assert laptop.github.post_attempts == 0
    assert laptop.starts() == []


# -- claims off -----------------------------------------------------------------------------------


def test_with_claims_off_a_start_spawns_at_once_as_today(tmp_path: Path, ticket: Ticket) -> None:
    alone = World(tmp_path / "alone", ticket, claims=False)
    start = ticket.add("the-loop start")
    theirs = ticket.claim(start)
    intake = alone.cycle(start, theirs)
    assert alone.starts() == [Control(ITEM, START, "alice", held=True)]
    assert alone.github.post_attempts == 0 and alone.github.reads == []
    assert alone.login_calls == 0
    assert [a.outcome for a in intake.counts.actions if a.kind == "command"] == ["started"]
    assert alone.named("claim.lost") == [] and alone.named("claim.won") == []
    _, round_ = alone.round()
    assert round_.claiming is None


def test_with_claims_off_a_stop_touches_no_book(tmp_path: Path, ticket: Ticket) -> None:
    alone = World(tmp_path / "alone", ticket, claims=False)
    assert isinstance(alone.book, DictBook)
    alone.cycle(ticket.add("the-loop start"))
    alone.cycle(ticket.add("the-loop stop"))
    assert [c.verb for c in alone.controls] == [START, STOP]
    assert alone.book.calls == []


# -- a claim book with a junk round ---------------------------------------------------------------


def test_a_junk_round_in_the_claim_book_does_not_break_the_round(laptop: World) -> None:
    local = laptop.store.root.parent / "local"
    book = FileClaimBook(local / "claims.json", local / "claims.lock")
    start = laptop.ticket.add("the-loop start")
    pending = PendingClaim(ITEM, start.id, start.created_at, "alice", "0" * 16)
    book.begin(replace(pending, nonce="not-a-nonce"))
    laptop.book = book
    laptop.cycle()  # must not raise
    assert laptop.starts() == []


# -- found by review: a crash-left round the thread moved past; a holder changed meanwhile


def test_a_crash_left_round_the_thread_moved_past_is_given_up_not_spawned(
    either: World,
) -> None:
    """A receiver killed after its claim, back with a batch that holds none of what
    followed (a stop, a new start another machine won): its old round spawns nothing."""
    ticket = either.ticket
    start1 = ticket.add("the-loop start")
    crashed_while_posting(either, start1, posted=True)
    ticket.add("the-loop stop")
    start2 = ticket.add("the-loop start")
    ticket.claim(start2, OTHER)
    either.cycle()  # a batch of nothing for the item: only the pending round is decided
    assert either.starts() == []
    assert either.rounds() == []
    assert any("given up" in w for w in either.warnings)


def test_a_crash_left_round_with_nothing_after_it_is_still_finished(either: World) -> None:
    start = either.ticket.add("the-loop start")
    crashed_while_posting(either, start, posted=True)
    either.ticket.add("a note, not a command")
    either.cycle()
    assert len(either.starts()) == 1


def test_a_holder_the_other_reader_changed_during_a_round_is_read_again(either: World) -> None:
    """The item was another machine's when the round began; the webhook here won a new
    start meanwhile: the next comment is queued for this machine's agent, not dropped."""
    holding_elsewhere(either)
    _, round_ = either.round()
    first = either.ticket.add("first note")
    round_.comment(first)  # the holders as the round began: the buildbox
    either.book.settle(ITEM, 3000, Holder(3000, ME, "laptop", 3001))
    either.live[ITEM] = LiveSession(ITEM, SessionState.ACTIVE, "loop:15")
    second = either.ticket.add("please also cover the empty case")
    round_.comment(second)
    assert either.queued() == [str(second.id)]


def test_a_crash_after_deleting_its_claim_is_lost_without_posting_again(either: World) -> None:
    """A loser killed after deleting its claim, before recording who holds the item: the
    next cycle sees only the winner's claim, and records it, posting nothing."""
    start = either.ticket.add("the-loop start")
    crashed_while_posting(either, start, posted=False)  # its claim posted, then deleted
    theirs = either.ticket.claim(start, OTHER)
    either.cycle()
    assert either.starts() == []
    assert either.github.post_attempts == 0
    assert dict(either.book.holders())[ITEM].comment_id == theirs.id
