"""The spec lane's gates against a corpus, end to end (issue 31): `the-loop poll --once`
against the loopback fake GitHub, real tmux on a private socket, real git, and the
stand-in agent of :mod:`tests.helpers.spec_agent`.

Two of the issue's proofs:

- a corpus of comments and reviews — negations, "LGTM" inside a sentence, emoji, quoted,
  fenced, indented and commented-out keywords, words that are not the verb, strangers, a
  bot, a writer turned reader, an empty-body APPROVED review, a CHANGES_REQUESTED review
  that says "LGTM", reviews whose state and body disagree — gives 0 wrong decisions.
  Three items open their requirements gate once; each is fed its cases in steps: the
  cases that must decide nothing, read by one poll while the gate is open, then at most
  one that must decide, and the lane's move waited for (a ``changes`` reopens the phase
  and the agent's ``done`` opens the gate again; an ``approve`` passes the phase and the
  next gate opens after the agent's ``done``). A decision is wrong when the repository
  file's ``decisions`` or the ``spec.decided`` events hold one a case must not make (or
  miss one it must), or ``currentNode`` is not where the case leaves it;
- 100 unrelated events at an open gate, and 100 more at an active phase, move nothing:
  the repository file's ``currentNode``, ``nodes`` and ``decisions`` are the same bytes
  before and after, and no ``spec.decided`` event is emitted.

The config turns the 👀 acknowledgement off (each is a POST, spaced a second apart) and
raises ``polling.maxDeliveriesPerHour`` (the corpus pastes more than 30 comments into one
session within the hour): neither has a part in a decision.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fake_github import FakeGitHub
from tests.helpers.spec_world import REPO, LaneWorld, github, lane_world  # noqa: F401
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from the_loop.intake.events import AGENT_COMMENT_MARKER

#: The corpus's items, each with the pull request linked to it (whose reviews decide its
#: gates), and a pull request linked to none.
FIRST, SECOND, THIRD = 15, 17, 19
PULLS = {FIRST: 16, SECOND: 18, THIRD: 20}
UNLINKED = 30
#: In ``authorizedUsers``, but GitHub says this login may only read the repository.
READER = "carol"
STRANGER = "mallory"
NONE, APPROVE, CHANGES = "none", "approved", "changes"


@dataclass(frozen=True)
class Case:
    """One comment, review or edit, and the decision it must make (``none``: none)."""

    name: str
    expect: str
    body: str = ""
    login: str = "alice"
    #: ``comment``, ``bot`` (a bot's comment), ``edit`` (the comment of the case named
    #: ``target`` edited to ``body``), or a review's state (``APPROVED``, ...) on the
    #: item's pull request (or on ``pull``).
    kind: str = "comment"
    target: str = ""
    pull: int = 0


@dataclass(frozen=True)
class Step:
    """Cases that must decide nothing, then at most one that must decide."""

    quiet: tuple[Case, ...] = ()
    decides: Case | None = None


def says(name: str, body: str, login: str = "alice") -> Case:
    return Case(name, NONE, body, login)


def review(
    name: str, expect: str, state: str, body: str = "", login: str = "bob", pull: int = 0
) -> Case:
    return Case(name, expect, body, login, state, pull=pull)


# -- the corpus --------------------------------------------------------------------------

FIRST_STEPS = (
    Step(
        (
            says("a negation", "I have not approved this yet; the unit tests are missing"),
            says("do not approve", "do not approve"),
            says("not LGTM", "not LGTM"),
            says("LGTM in a sentence", "LGTM, no changes requested"),
            says("LGTM alone", "LGTM"),
            says("lgtm and an emoji", "lgtm 👍"),
            says("an emoji only", "👍"),
            says("emoji only, several", "🎉🚀✅"),
            says("Approved!", "Approved!"),
            says("approve, no prefix", "approve"),
            says("/approve", "/approve"),
            says("the-loop approved: not the verb", "the-loop approved"),
        ),
        Case("changes with what to change", CHANGES, "the-loop changes name the widget's limits"),
    ),
    Step(
        (
            says("the-loop approves: not the verb", "the-loop approves this"),
            says("the verb followed by a dash", "the-loop approve-all"),
            says("the verb followed by a colon", "the-loop approve: yes"),
            says("a quoted keyword", "> the-loop approve\nquoted, so it never commands"),
            says("a keyword in a ``` fence", "Like this:\n```\nthe-loop approve\n```"),
            says("a keyword in a ~~~ fence", "~~~\nthe-loop approve\n~~~"),
            says("a keyword indented four spaces", "An example:\n\n    the-loop approve"),
            says("a keyword indented a tab", "\tthe-loop approve"),
            says("a keyword in an HTML comment", "<!-- the-loop approve -->"),
            says("a keyword in a multi-line HTML comment", "<!--\nthe-loop approve\n-->\nsoon"),
            says("inline code mid-sentence", "When ready, say `the-loop approve` here."),
            says("not at the line's start", "please the-loop approve"),
        ),
        Case("changes in capitals", CHANGES, "THE-LOOP Changes add a section on errors"),
    ),
    Step(
        (
            review("a COMMENTED review saying LGTM", NONE, "COMMENTED", "LGTM"),
            review("a stranger's APPROVED review", NONE, "APPROVED", login=STRANGER),
            review("a reader's APPROVED review", NONE, "APPROVED", "LGTM", login=READER),
            review("a stranger's CHANGES_REQUESTED", NONE, "CHANGES_REQUESTED", login=STRANGER),
            review("APPROVED on an unlinked pull request", NONE, "APPROVED", pull=UNLINKED),
            says("approve a phase whose gate is not open", "the-loop approve design"),
            says("changes: with a colon", "the-loop changes: tighten the limits"),
            says("changed: not the verb", "the-loop changed my mind, it is fine"),
            says("two verbs: ambiguous", "the-loop approve\nthe-loop changes add limits"),
            says("skip without a phase", "the-loop skip"),
        ),
        review("a CHANGES_REQUESTED review saying LGTM", CHANGES, "CHANGES_REQUESTED", "LGTM"),
    ),
    Step(
        (
            says("a stranger's approve", "the-loop approve", login=STRANGER),
            says("a stranger's changes", "the-loop changes add limits", login=STRANGER),
            says("a read-only login's approve", "the-loop approve", login=READER),
            Case("a bot's approve", NONE, "the-loop approve", "renovate[bot]", "bot"),
            Case(
                "the-loop's own marked comment",
                NONE,
                f"{AGENT_COMMENT_MARKER}\nthe-loop approve",
                "the-loop-bot",
            ),
            Case(
                "an edit into a keyword", NONE, "the-loop approve", kind="edit", target="LGTM alone"
            ),
            says("a full-width letter", "the-loop ａpprove"),
        ),
        review("an empty CHANGES_REQUESTED review", CHANGES, "CHANGES_REQUESTED"),
    ),
    Step(
        (),
        review(
            "CHANGES_REQUESTED whose body approves: the state decides",
            CHANGES,
            "CHANGES_REQUESTED",
            "the-loop approve",
        ),
    ),
    Step((), Case("approve in capitals", APPROVE, "The-Loop APPROVE")),
    Step(
        (
            says("approve a phase already passed", "the-loop approve requirements"),
            says("LGTM at the design gate", "LGTM, ship it"),
            review("a COMMENTED review at the design gate", NONE, "COMMENTED", "Approved."),
        ),
        review("an empty-body APPROVED review", APPROVE, "APPROVED"),
    ),
)

SECOND_STEPS = (
    Step(
        (
            says("a question", "Should the limits be configurable? I'd approve either way."),
            says("LGTM mid-sentence", "Mostly LGTM but let me read it again"),
        ),
        Case(
            "changes on a later line",
            CHANGES,
            "Two things.\n\nthe-loop changes say what happens at zero",
        ),
    ),
    Step(
        (says("triple backticks inline", "```the-loop approve```"),),
        Case("changes, bare", CHANGES, "the-loop changes"),
    ),
    Step(
        (),
        Case(
            "changes with a quoted approve",
            CHANGES,
            "the-loop changes cover the error path\n> the-loop approve\nsaid last week",
        ),
    ),
    Step(
        (says("a 👎", "👎 not yet"),),
        Case("changes indented two spaces", CHANGES, "  the-loop changes one more example"),
    ),
    Step(
        (),
        review(
            "a COMMENTED review's keyword", CHANGES, "COMMENTED", "the-loop changes add an example"
        ),
    ),
    Step(
        (says("ok by me", "OK by me, approve when you like"),),
        Case("approve on a later line after prose", APPROVE, "Looks good.\n\nthe-loop approve"),
    ),
    Step(
        (),
        review(
            "APPROVED whose body asks for changes: the state decides",
            APPROVE,
            "APPROVED",
            "the-loop changes fix the naming",
        ),
    ),
)

THIRD_STEPS = (
    Step(
        (says("a thumbs-up in prose", "👍 from me, LGTM!"),),
        review(
            "CHANGES_REQUESTED with the changes keyword",
            CHANGES,
            "CHANGES_REQUESTED",
            "the-loop changes split the second requirement",
        ),
    ),
    Step((), review("APPROVED with the approve keyword", APPROVE, "APPROVED", "the-loop approve")),
    Step(
        (says("approve a passed phase, named", "the-loop approve requirements"),),
        Case(
            "approve indented three spaces, naming the open gate",
            APPROVE,
            "   the-loop approve design",
        ),
    ),
)

CORPUS = {FIRST: FIRST_STEPS, SECOND: SECOND_STEPS, THIRD: THIRD_STEPS}


# -- the world -----------------------------------------------------------------------


@dataclass
class Ticket:
    """The lane's world with GitHub's clock kept monotonic: every write is stamped at
    least the real time plus an offset that only grows (2 s more before each review:
    GitHub's times have one-second resolution, and a review is new only after the
    reader's last look)."""

    world: LaneWorld
    github: FakeGitHub
    offset: float = 0.0
    last: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: Each case's comment id, by the case's name.
    comment_ids: dict[str, int] = field(default_factory=dict[str, int])

    def stamp(self, ahead: float = 0.0) -> None:
        self.offset += ahead
        moment = max(datetime.now(UTC) + timedelta(seconds=self.offset), self.last)
        self.last = self.github.now = moment

    def comment(self, number: int, body: str, *, login: str = "alice", bot: bool = False) -> int:
        self.stamp()
        return self.github.add_comment(REPO, number, body, login=login, bot=bot).id

    def review(self, pull: int, state: str, body: str, login: str) -> str:
        self.stamp(2.0)
        added = self.github.add_review(REPO, pull, login=login, state=state, body=body)
        return f"https://github.com/{REPO}/pull/{pull}#pullrequestreview-{added.id}"

    def post(self, number: int, case: Case) -> str:
        """The case on GitHub; the link a decision it made records."""
        if case.kind in ("comment", "bot"):
            said = self.comment(number, case.body, login=case.login, bot=case.kind == "bot")
            self.comment_ids[case.name] = said
        elif case.kind == "edit":
            self.stamp()
            said = self.comment_ids[case.target]
            self.github.edit_comment(said, case.body)
        else:
            return self.review(case.pull or PULLS[number], case.kind, case.body, case.login)
        return comment_link(number, said)

    def has_checkout(self, number: int) -> bool:
        record = self.world.registry.find_by_work_item(f"github:{REPO}#{number}")
        return record is not None and bool(record.cwd)

    def state_file(self, number: int) -> Path:
        record = self.world.registry.find_by_work_item(f"github:{REPO}#{number}")
        assert record is not None and record.cwd
        return Path(record.cwd) / f"docs/specs/issue-{number}/work-item-state.json"

    def lane(self, number: int) -> dict[str, Any]:
        path = self.state_file(number)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def status_of(self, number: int, phase: str) -> str:
        return str(self.lane(number).get("nodes", {}).get(phase, {}).get("status", ""))

    def decision_links(self, number: int, phase: str) -> list[str]:
        return [d.get("link") for d in self.lane(number).get("decisions", {}).get(phase, [])]

    def poll_until(self, condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.world.poll()
            if condition():
                return
            time.sleep(0.05)
        raise AssertionError(f"{what}; the agent read:\n{self.world.read()}")

    def open_gates(self, *numbers: int) -> None:
        """``start spec`` on each item, the agent's requirements done: its gate open."""
        for number in numbers:
            self.comment(number, "the-loop start spec")
        self.poll_until(
            lambda: all(
                self.has_checkout(n) and self.status_of(n, "requirements") == "waiting"
                for n in numbers
            ),
            "the requirements gates open",
        )

    def link_pull_requests(self, *numbers: int) -> None:
        """Each item's pull request (``Closes #<item>``) linked to it, and its reviews read
        once: what comes after is new, not history."""
        self.stamp()
        for number in numbers:
            title, body = f"Work on #{number}", f"Closes #{number}"
            self.github.add_pull(REPO, PULLS[number], title=title, body=body, login="the-loop-bot")
        self.poll_until(
            lambda: len(self.world.events_named("pr.linked")) == len(numbers),
            "the pull requests linked",
        )
        self.world.poll()


def comment_link(number: int, comment_id: int) -> str:
    return f"https://github.com/{REPO}/issues/{number}#issuecomment-{comment_id}"


def configure(world: LaneWorld, fake: FakeGitHub) -> None:
    """carol joins ``authorizedUsers`` (GitHub says she may only read the repository);
    no 👀 on deliveries, and no breaker on this many of them."""
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["routing"]["authorizedUsers"] = ["alice", "bob", READER]
    document["polling"]["maxDeliveriesPerHour"] = 1000
    document["integrations"]["github"]["acknowledge"] = False
    world.configure(document)
    fake.set_role(REPO, READER, "read")


def decided_events(world: LaneWorld) -> list[dict[str, Any]]:
    """The ``spec.decided`` events of a decision (not a start, not a refusal)."""
    return [
        e for e in world.events_named("spec.decided") if e["outcome"] not in ("started", "refused")
    ]


# -- the corpus ----------------------------------------------------------------------


@dataclass
class Track:
    """One item's way through its steps: ``ready`` (its gate open, the next step to
    post), ``quiet`` (the step's quiet cases posted) or ``deciding`` (its deciding case
    posted, its move awaited)."""

    number: int
    steps: list[Step]
    state: str = "ready"
    step: Step = field(default_factory=Step)
    gate: str = "requirements"
    link: str = ""

    @property
    def finished(self) -> bool:
        return self.state == "ready" and not self.steps


@dataclass
class Corpus:
    """The cases posted so far, each with its item and the link a decision it made
    records, and the wrong moves of the lane seen."""

    ticket: Ticket
    posted: list[tuple[Case, int, str]] = field(default_factory=list[tuple[Case, int, str]])
    wrong_moves: list[str] = field(default_factory=list[str])

    def post(self, track: Track, case: Case) -> str:
        link = self.ticket.post(track.number, case)
        self.posted.append((case, track.number, link))
        return link

    def advance(self, track: Track) -> None:
        """The track's next move, once the poll before read what it posted last."""
        if track.state == "ready" and track.steps:
            track.step = track.steps.pop(0)
            for case in track.step.quiet:
                self.post(track, case)
            track.state = "quiet"
        elif track.state == "quiet":  # the quiet cases were read while the gate was open
            if track.step.decides is None:
                track.state = "ready"
            else:
                track.link = self.post(track, track.step.decides)
                track.state = "deciding"
        elif track.state == "deciding" and self.settled(track):
            track.state = "ready"
            self.advance(track)

    def settled(self, track: Track) -> bool:
        """Whether the deciding case's move is made (the lane's pointer checked then)."""
        ticket, number, case = self.ticket, track.number, track.step.decides
        assert case is not None
        if track.link not in ticket.decision_links(number, track.gate):
            return False
        lane = ticket.lane(number)
        if case.expect == CHANGES:
            if ticket.status_of(number, track.gate) != "waiting":
                return False  # the agent revises and says done: the gate opens again
            expected: tuple[str, ...] = (track.gate,)
        elif track.gate == "requirements":
            if ticket.status_of(number, "design") != "waiting":
                return False  # the agent writes the design and says done
            expected = ("design",)
        else:
            expected = ("tasks", "implementation", "done")
        status = lane["nodes"][track.gate]["status"]
        if lane["currentNode"] not in expected or (status == "pass") != (case.expect == APPROVE):
            self.wrong_moves.append(
                f"{case.name!r} on #{number}: the lane is at {lane['currentNode']} "
                f"({track.gate} {status}), expected one of {expected}"
            )
        if case.expect == APPROVE:
            track.gate = "design"
        return True

    def wrong(self, *, final: bool) -> list[str]:
        """Every wrong decision: one a case must not make (or another than its own, or a
        second), one no case made; at the end also one a case did not make. From the
        repository files' ``decisions`` and the ``spec.decided`` events."""
        ticket = self.ticket
        recorded = [
            (str(d.get("outcome")), str(d.get("link")))
            for number in CORPUS
            for found in ticket.lane(number).get("decisions", {}).values()
            for d in found
        ]
        said = [(str(e["outcome"]), str(e["link"])) for e in decided_events(ticket.world)]
        wrong = list(self.wrong_moves)
        for case, number, link in self.posted:
            want = [] if case.expect == NONE else [case.expect]
            for where, found in (("the file records", recorded), ("spec.decided says", said)):
                made = [outcome for outcome, at in found if at == link]
                extra = len(made) > len(want) or any(m not in want for m in made)
                if made != want if final else extra:
                    wrong.append(
                        f"{case.name!r} on #{number}: expected {case.expect}, {where} {made}"
                    )
        links = {link for _, _, link in self.posted}
        for where, found in (("the file records", recorded), ("spec.decided says", said)):
            wrong += [
                f"{where} {o} by {at}, which no case made" for o, at in found if at not in links
            ]
        return wrong


def test_a_corpus_of_comments_and_reviews_makes_no_wrong_decision(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    configure(lane_world, github)
    github.add_issue(REPO, SECOND, title="Steady the gizmo", labels=("the-loop",))
    github.add_issue(REPO, THIRD, title="Quiet the gadget", labels=("the-loop",))
    github.add_pull(REPO, UNLINKED, title="Unrelated", body="No item", login="the-loop-bot")
    ticket = Ticket(lane_world, github)
    ticket.open_gates(*CORPUS)
    ticket.link_pull_requests(*CORPUS)
    cases = [c for steps in CORPUS.values() for s in steps for c in (*s.quiet, s.decides) if c]
    assert len(cases) >= 40 and len({c.name for c in cases}) == len(cases)

    corpus = Corpus(ticket)
    tracks = [Track(number, list(steps)) for number, steps in CORPUS.items()]
    deadline = time.monotonic() + 120
    while not all(track.finished for track in tracks):
        for track in tracks:
            corpus.advance(track)
        lane_world.poll()
        wrong = corpus.wrong(final=False)
        assert not wrong, f"{len(wrong)} wrong decisions:\n" + "\n".join(wrong)
        waiting = {t.number: t.step.decides for t in tracks if t.state == "deciding"}
        assert time.monotonic() < deadline, (
            f"the lane did not move as the deciding cases say: {waiting}; "
            f"the lanes: { {n: ticket.lane(n) for n in CORPUS} }"
        )

    for _ in range(2):  # anything late shows now
        lane_world.poll()
    wrong = corpus.wrong(final=True)
    assert not wrong, f"{len(wrong)} wrong decisions in {len(cases)} cases:\n" + "\n".join(wrong)
    assert len(corpus.posted) == len(cases)
    assert [ticket.status_of(n, "design") for n in CORPUS] == ["pass"] * len(CORPUS)


# -- 100 unrelated events ------------------------------------------------------------


def frozen(ticket: Ticket) -> list[str]:
    """The first item's ``currentNode``, ``nodes`` and ``decisions`` as the file holds
    them (their keys in the file's order), the file's bytes, and how many moves and gate
    openings were said."""
    raw = ticket.state_file(FIRST).read_bytes()
    lane = json.loads(raw)
    kept = [f"{key}: {json.dumps(lane.get(key), ensure_ascii=False)}" for key in LANE_KEYS]
    said = [len(ticket.world.events_named(name)) for name in ("spec.decided", "spec.gate_opened")]
    return [*kept, f"the file: {raw!r}", f"spec.decided {said[0]}, spec.gate_opened {said[1]}"]


LANE_KEYS = ("currentNode", "nodes", "decisions")


@dataclass
class Feed:
    """Events on the first item and its pull request that are no decision."""

    ticket: Ticket
    said: list[int] = field(default_factory=list[int])

    @property
    def fake(self) -> FakeGitHub:
        return self.ticket.github

    def note(self, i: int) -> str:
        self.said.append(self.ticket.comment(FIRST, f"Note {i}: it wobbles at {i} rpm."))
        return "a comment by an authorized login"

    def opinion(self, i: int) -> str:
        words = ("LGTM so far", "not approved yet", "👍", "Looks good, approve soon?")
        self.said.append(self.ticket.comment(FIRST, words[i % len(words)], login="bob"))
        return "an opinion by an authorized login"

    def stranger(self, i: int) -> str:
        self.ticket.comment(FIRST, f"+1, LGTM ({i})", login=STRANGER)
        return "a comment by a stranger"

    def bot(self, i: int) -> str:
        self.ticket.comment(FIRST, f"Coverage {i}% ✅ approve", login="codecov[bot]", bot=True)
        return "a bot's comment"

    def own(self, i: int) -> str:
        body = f"{AGENT_COMMENT_MARKER}\nthe-loop: status {i}\n\nthe-loop approve"
        self.ticket.comment(FIRST, body, login="the-loop-bot")
        return "the-loop's own marked comment"

    def edit(self, i: int) -> str:
        self.ticket.stamp()
        bodies = ("the-loop approve", "the-loop changes rewrite it", f"edited {i}")
        self.fake.edit_comment(self.said[i % len(self.said)], bodies[i % len(bodies)])
        return "an edit of an earlier comment"

    def commented(self, i: int) -> str:
        login = ("bob", STRANGER)[i % 2]
        self.ticket.review(PULLS[FIRST], "COMMENTED", f"LGTM, one nit ({i})", login)
        return "a COMMENTED review"

    def push(self, i: int) -> str:
        self.ticket.stamp()
        self.fake.push(REPO, PULLS[FIRST])
        return "a push to the linked pull request"

    def check(self, i: int) -> str:
        self.ticket.stamp()
        sha = self.fake.pull(REPO, PULLS[FIRST]).head_sha
        conclusion = ("failure", "success")[i % 2]
        self.fake.add_check_run(REPO, sha, name=f"test ({i % 3})", conclusion=conclusion)
        return f"a check run that ended in {conclusion}"

    def labels(self, i: int) -> str:
        self.ticket.stamp()
        self.fake.set_labels(REPO, FIRST, ("the-loop", f"area-{i % 3}"))
        return "a label change"

    def feed(self, count: int, *, session_commands: bool) -> list[str]:
        """``count`` events, a poll after every fifth; what each was. ``session_commands``:
        ``the-loop pause`` and, later, ``the-loop resume`` among them."""
        kinds = (
            self.note,
            self.opinion,
            self.stranger,
            self.bot,
            self.own,
            self.edit,
            self.commented,
            self.push,
            self.check,
            self.labels,
        )
        commands = {count // 3: "the-loop pause", 2 * count // 3: "the-loop resume"}
        fed: list[str] = []
        for i in range(count):
            if session_commands and i in commands:
                self.ticket.comment(FIRST, commands[i])
                fed.append(commands[i])
            else:
                fed.append(kinds[i % len(kinds)](i))
            if i % 5 == 4:
                self.ticket.world.poll()
        for _ in range(2):
            self.ticket.world.poll()
        return fed


def paused(world: LaneWorld) -> bool:
    record = world.registry.find_by_work_item(f"github:{REPO}#{FIRST}")
    return record is not None and record.status == "paused"


def test_a_hundred_unrelated_events_move_no_gate_and_no_phase(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    configure(lane_world, github)
    ticket = Ticket(lane_world, github)
    ticket.open_gates(FIRST)
    ticket.link_pull_requests(FIRST)

    # At an open gate.
    before = frozen(ticket)
    events = Feed(ticket)
    fed = events.feed(100, session_commands=True)
    assert len(fed) == 100 and {"the-loop pause", "the-loop resume"} <= set(fed)
    assert frozen(ticket) == before, f"the gate moved after {sorted(set(fed))}"
    assert ticket.status_of(FIRST, "requirements") == "waiting"
    assert not paused(lane_world)

    # At an active phase: paused, a `changes` reopens requirements and its paste waits,
    # so the phase stays active while the events come.
    ticket.comment(FIRST, "the-loop pause")
    lane_world.poll()
    assert paused(lane_world)
    asked = comment_link(FIRST, ticket.comment(FIRST, "the-loop changes cover the error path"))
    ticket.poll_until(
        lambda: asked in ticket.decision_links(FIRST, "requirements"), "the changes taken"
    )
    assert ticket.status_of(FIRST, "requirements") == "active"
    before = frozen(ticket)
    fed = events.feed(100, session_commands=False)
    assert len(fed) == 100
    assert frozen(ticket) == before, f"the phase moved after {sorted(set(fed))}"
    assert ticket.status_of(FIRST, "requirements") == "active"

    # Resumed, the agent is told, revises and says done: only that moves the lane.
    ticket.comment(FIRST, "the-loop resume")
    ticket.poll_until(
        lambda: ticket.status_of(FIRST, "requirements") == "waiting", "requirements done again"
    )
    outcomes = [e["outcome"] for e in lane_world.events_named("spec.decided")]
    assert outcomes == ["started", "changes"]
