"""The spec lane killed at each of its side effects (issue 31): ``kill -9`` at each side
effect × 20 — 0 duplicate gate comments, 0 missing appends, the pointer never moves back.

One walk through the lane (`start spec`; requirements sent back six times, then approved;
design sent back five times, then approved; tasks and implementation done by the stand-in
agent) against the loopback fake GitHub, real tmux and real git. Each effect of the lane
is made by `the-loop poll --once` run as a process of its own with
``THE_LOOP_POLL_CRASH_AT`` naming a checkpoint, which SIGKILLs itself there. The hook
kills at the first visit in its process, so a later effect is aimed at by running only
hooked pollers from the decision on: the effects before it are made by pollers that did
not reach the checkpoint, and none is made by an unhooked one. After each kill, what it
left is checked (proof it died at that effect, of that decision or paste); hooked
pollers go on to the next kill, and ordinary polls (in this process, as the other spec
tests run them) carry the lane on while a gate is open. Then:

- each opening of a gate has exactly one "ready for review" comment on the ticket;
- every authorized comment made while a gate was open, and the decision itself, is in
  the document's ``## Review comments`` exactly once, and the document is committed;
- each paste of the lane (a phase's start, a phase sent back) reached the agent once;
- ``currentNode``, read after every poll (killed or not), never moves back in lane order;
- each decision is recorded once, in order, and none is refused as made twice.

The checkpoints: ``spec-intent`` (a decision kept, not carried out), ``spec-moved`` (the
repository file moved, the intent not dropped), ``specGate-posted`` (the gate's comment on
GitHub, its id not kept), ``spec-appended`` (the review comments appended and committed,
still owed in the ledger) and the drain's five steps a paste passes through
(``before-pending`` … ``after-delivered``). Some decisions are killed twice: at one step,
then again in the recovery, at a later one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.spec_world import ITEM, SPEC_DIR, LaneWorld, github, lane_world  # noqa: F401
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.commands.poll import CRASH_AT_VARIABLE
from the_loop.intake.events import AGENT_COMMENT_MARKER

#: The steps a decision's poll passes, in order: the intent kept, the file moved, the
#: review comments appended and committed.
SPEC_STEPS = ("spec-intent", "spec-moved", "spec-appended")
#: The drain's steps a paste of the lane passes, and its row's state when killed there
#: (the paste and its pane mark are one tmux command list: "after-paste" is "after-mark").
DELIVERY_STEPS = {
    "before-pending": "waiting",
    "after-pending": "pending",
    "after-paste": "pending",
    "after-mark": "pending",
    "after-delivered": "delivered",
}
#: The kills of each decision in turn: each step alone, then a kill in the recovery of
#: another (the second poller killed at a later step of the same decision).
DECISION_KILLS: tuple[tuple[str, ...], ...] = (
    *((step,) for step in (*SPEC_STEPS, *DELIVERY_STEPS)),
    ("spec-intent", "spec-appended"),
    ("spec-moved", "after-pending"),
    ("spec-appended", "after-mark"),
    ("spec-intent", "after-delivered"),
    ("spec-moved", "before-pending"),
)
#: The gate's comment: posted, its id not yet kept (say_once's ``f"{key}-posted"``).
GATE_STEP = "specGate-posted"
#: Where ``currentNode`` may be, in lane order.
ORDER = ("", "requirements", "design", "tasks", "implementation", "done")
#: How many times each gated phase is sent back before it is approved.
CHANGES = {"requirements": 6, "design": 5}
#: Lines each kind of paste starts with, as the agent reads them.
PHASE_PASTE = "Spec lane: the phase now is {phase}."
IMPLEMENTATION_PASTE = "Spec lane: the tasks are approved or done; the phase now is implementation"
CHANGES_PASTE = "Spec lane: @{by} asked for changes to {phase} "
#: The walk pastes some 50 comments and phases within a minute: above the default
#: breaker of 30 an hour, which would hold the lane's pastes (not what is proven here).
DELIVERIES_PER_HOUR = 1000
CRASH_ATTEMPTS = 40
CRASH_TIMEOUT_SECONDS = 60.0


class Walk:
    """The lane's world, the kills made, and the pointer read after every poll."""

    def __init__(self, world: LaneWorld) -> None:
        self.world = world
        self.kills: list[str] = []
        self.pointers: list[str] = []
        self.decisions: list[int] = []
        self.schedule = iter(DECISION_KILLS * 4)

    # -- polls --------------------------------------------------------------------

    def poll(self) -> None:
        """An ordinary poll (in this process, as the other spec tests run it)."""
        self.world.poll()
        self._look()

    def crash(
        self,
        step: str,
        *,
        why: str,
        until: Callable[[], bool] = lambda: True,
        plain: Callable[[], bool] = lambda: False,
    ) -> None:
        """Pollers as processes of their own with the crash hook at ``step``, until one is
        killed there and ``until`` holds (the first ones may find nothing to do there yet,
        or die at the same step of another paste: each kill counts). No ordinary poll
        runs meanwhile, so the effect aimed at is never made by one unhooked; but while
        ``plain`` holds, one does (what it makes is not what is aimed at)."""
        for _ in range(CRASH_ATTEMPTS):
            if plain():
                self.poll()
                continue
            code = self._poll_process(step)
            self._look()
            if code == -signal.SIGKILL:
                self.kills.append(step)
                if until():
                    return
            else:
                assert code == 0, f"poll --once exited {code} with the crash hook at {step}"
            time.sleep(0.05)
        raise AssertionError(f"no poller reached {step} ({why}): lane {self.world.lane()}")

    def _poll_process(self, step: str) -> int:
        env = {**os.environ, CRASH_AT_VARIABLE: step}
        argv = [sys.executable, "-m", "the_loop", "--config", str(self.world.config_path)]
        done = subprocess.run(
            [*argv, "poll", "--once", "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=CRASH_TIMEOUT_SECONDS,
            check=False,
        )
        return done.returncode

    def poll_until(self, condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()
            if condition():
                return
            time.sleep(0.05)
        raise AssertionError(
            f"{what}; kills {self.kills}; the agent read:\n{self.world.read()}\n"
            f"lane: {self.world.lane()}\nledger: {self.ledger()}"
        )

    def _look(self) -> None:
        """``currentNode`` now: never behind where it was after any earlier poll."""
        pointer = str(self._lane().get("currentNode") or "")
        assert pointer in ORDER, pointer
        if self.pointers:
            before = self.pointers[-1]
            assert ORDER.index(pointer) >= ORDER.index(before), (
                f"currentNode moved back from {before} to {pointer} after the kills {self.kills}"
            )
        self.pointers.append(pointer)

    def _lane(self) -> dict[str, Any]:
        record = self.world.registry.find_by_work_item(ITEM, include_closed=True)
        if record is None or not record.cwd:
            return {}
        path = Path(record.cwd) / SPEC_DIR / "work-item-state.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    # -- what the ledger, GitHub, the file and the agent hold ---------------------

    def ledger(self) -> dict[str, Any]:
        return self.world.store.section(ITEM, "poll") or {}

    def owed(self, name: str) -> set[str]:
        """The keys of the ledger's spec ``intents`` or ``appends``."""
        spec = self.ledger().get("spec") or {}
        return {str(each.get("key")) for each in spec.get(name) or []}

    def spec_rows(self) -> list[dict[str, Any]]:
        rows = self.ledger().get("deliveries") or []
        return [row for row in rows if str(row.get("id")).startswith("spec-")]

    def pastes_delivered(self) -> bool:
        """Every paste of the lane queued so far is delivered (the ledger's word)."""
        rows = self.spec_rows()
        return bool(rows) and all(row.get("state") == "delivered" for row in rows)

    def comments_delivered(self) -> bool:
        rows = self.ledger().get("deliveries") or []
        return all(row.get("state") == "delivered" for row in rows if str(row["id"]).isdigit())

    def implementing(self) -> bool:
        """The implementation's paste queued and not yet begun."""
        last = self.spec_rows()[-1]
        return str(last["id"]).startswith("spec-implementation-") and last["state"] == "waiting"

    def tasks_waiting(self) -> bool:
        """The tasks' paste queued and no attempt at it begun: an ordinary poll pastes it,
        and cannot queue the implementation's (the agent has not had the tasks yet)."""
        last = self.spec_rows()[-1]
        return str(last["id"]).startswith("spec-tasks-") and last["state"] == "waiting"

    def dones(self, phase: str) -> int:
        return self.world.read().count(f"DONE {phase} 0")

    def gates(self, phase: str, round_: int) -> int:
        """The marked "ready for review" comments of ``phase``'s gate's ``round_``."""
        again = f"(round {round_})"
        return sum(
            1
            for c in self.world.github.comments
            if c.number == 15
            and AGENT_COMMENT_MARKER in c.body
            and f"the **{phase}** document" in c.body
            and "ready for review" in c.body
            and (again in c.body if round_ > 1 else "(round " not in c.body)
        )

    def decided(self, comment: int) -> bool:
        """Whether the repository file records the decision ``comment`` made."""
        decisions = self._lane().get("decisions") or {}
        links = [d.get("link", "") for entries in decisions.values() for d in entries]
        return any(link.endswith(f"#issuecomment-{comment}") for link in links)

    def committed(self, phase: str) -> bool:
        name = f"{SPEC_DIR}/{phase}.md"
        return self.world.git("status", "--porcelain", "--", name) == ""

    # -- the walk -----------------------------------------------------------------

    def open_gate(self, phase: str, round_: int) -> None:
        """The paste delivered, the agent done, the gate's comment posted by a poller
        killed right after, its id not kept; the next polls find it by its nonce and
        never say it again."""
        self.crash(GATE_STEP, why=f"{phase}'s gate, round {round_}")
        gate = self.ledger().get("specGate") or {}
        assert (gate.get("phase"), gate.get("round")) == (phase, round_), gate
        assert gate.get("posting") is True and not gate.get("comment"), gate
        assert self.gates(phase, round_) == 1, f"{phase} {round_}: the kill came after the post"
        # The stand-in writes its DONE line once `done` has returned, which a poller may
        # outrun: the gate's comment can be made before the line is there.
        assert wait_until(lambda: self.dones(phase) == round_, timeout=30), self.world.read()
        assert self.pointers[-1] == phase, self.pointers[-1]
        self.poll_until(lambda: bool((self.ledger().get("specGate") or {}).get("comment")), "kept")
        self.poll()
        assert self.gates(phase, round_) == 1, f"{phase} round {round_}: kills {self.kills}"
        assert self.pastes_delivered(), self.spec_rows()

    def remarks(self, phase: str, round_: int) -> list[int]:
        """Comments while the gate is open: two authorized (kept), one not (left out);
        delivered to the agent as comments before the decision is taken."""
        said = [
            self.world.comment(f"{phase} {round_}: the limits need numbers"),
            self.world.comment(f"{phase} {round_}: and a word on failure", login="bob"),
        ]
        self.world.comment(f"{phase} {round_}: approve it already", login="mallory")
        self.poll_until(
            lambda: self.comments_delivered() and f"{phase} {round_}: and a" in self.world.read(),
            f"{phase} {round_}: the remarks delivered",
        )
        return said

    def decide(self, body: str, phase: str, *, login: str = "alice") -> int:
        """A decision on the open gate, carried out by pollers killed at the next kills
        of the schedule (what is left is carried out by the pollers that follow)."""
        comment = self.world.comment(body, login=login)
        self.decisions.append(comment)
        for step in next(self.schedule):
            self.crash(step, why=f"the decision {body!r}")
            self.left(step, comment, phase)
        return comment

    def left(self, step: str, comment: int, phase: str) -> None:
        """What a poller killed at ``step`` left of the decision ``comment``: proof that
        it died at that effect of this decision, not elsewhere."""
        key = str(comment)
        if step == "spec-intent":
            assert key in self.owed("intents") and not self.decided(comment), self.ledger()
        elif step == "spec-moved":
            assert key in self.owed("intents") and self.decided(comment), self.ledger()
        elif step == "spec-appended":
            assert key not in self.owed("intents") and key in self.owed("appends")
            assert self.world.document(phase).count(f"#issuecomment-{comment})") == 1
            assert self.committed(phase), f"{phase} appended, not committed"
        else:
            assert not self.owed("intents") and not self.owed("appends"), self.ledger()
            assert self.spec_rows()[-1]["state"] == DELIVERY_STEPS[step], self.spec_rows()

    def appended(self, phase: str, ids: list[int]) -> None:
        """Each of ``ids`` in the document's review comments once, none of the-loop's own
        comments nor the unauthorized ones, the document committed."""
        document = self.world.document(phase)
        assert "## Review comments" in document
        counts = {i: document.count(f"#issuecomment-{i})") for i in ids}
        assert set(counts.values()) == {1}, f"{phase}: {counts}; kills {self.kills}"
        assert "mallory" not in document
        ours = [c.id for c in self.world.github.comments if AGENT_COMMENT_MARKER in c.body]
        assert not [i for i in ours if f"#issuecomment-{i})" in document], "a gate appended"
        assert self.committed(phase), f"{phase}.md uncommitted"


@pytest.mark.slow
def test_killed_at_each_side_effect_the_lane_says_each_thing_once_and_never_moves_back(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    config = json.loads(lane_world.config_path.read_text(encoding="utf-8"))
    config["polling"]["maxDeliveriesPerHour"] = DELIVERIES_PER_HOUR
    lane_world.config_path.write_text(json.dumps(config), encoding="utf-8")
    walk, started = Walk(lane_world), time.monotonic()
    start = lane_world.comment("the-loop start spec")
    walk.crash("spec-intent", why="start spec")
    assert f"lane-{start}" in walk.owed("intents") and not walk.pointers[-1]
    walk.crash("spec-moved", why="start spec's move")
    assert f"lane-{start}" in walk.owed("intents") and walk.pointers[-1] == "requirements"
    walk.crash("after-paste", why="the requirements paste")
    assert walk.spec_rows()[-1]["state"] == "pending"
    kept: dict[str, list[int]] = {}
    for phase in ("requirements", "design"):
        kept[phase] = []
        for round_ in range(1, CHANGES[phase] + 2):
            walk.open_gate(phase, round_)
            for decided, ids in kept.items():
                if ids:
                    walk.appended(decided, ids)
            kept[phase] += walk.remarks(phase, round_)
            if round_ <= CHANGES[phase]:
                body = f"the-loop changes tighten the {phase}, round {round_}"
                kept[phase].append(walk.decide(body, phase))
                assert walk.pointers[-1] == phase, "changes keeps the lane at its phase"
            else:
                kept[phase].append(walk.decide("Thanks.\n\nthe-loop approve", phase, login="bob"))
    # Hooked at before-pending, a poller would die at the tasks' paste every time: it is
    # pasted by an ordinary poll while it waits (the agent cannot be done with it then).
    implementation = "the implementation paste"
    walk.crash(
        "before-pending", why=implementation, until=walk.implementing, plain=walk.tasks_waiting
    )
    walk.poll_until(walk.pastes_delivered, "the implementation paste delivered")
    assert walk.dones("tasks") == 1
    assert wait_until(lambda: walk.dones("implementation") == 1, timeout=30), walk.world.read()
    walk.poll_until(lambda: walk.world.lane().get("currentNode") == "done", "the lane finished")
    for _ in range(3):
        walk.poll()

    _finished(walk, kept)
    print(
        f"{len(walk.kills)} kills in {time.monotonic() - started:.1f}s, "
        f"{len(walk.pointers)} polls: {dict(Counter(walk.kills))}"
    )
    assert len(walk.kills) >= 20


def _finished(walk: Walk, kept: dict[str, list[int]]) -> None:
    """After the walk: each gate said once, each comment appended once, each paste read
    once, each decision recorded once, the pointer only forward."""
    for phase, sent_back in CHANGES.items():
        counts = [walk.gates(phase, r) for r in range(1, sent_back + 2)]
        assert counts == [1] * (sent_back + 1), f"{phase}'s gate comments {counts}"
        walk.appended(phase, kept[phase])
    read = walk.world.read().splitlines()
    pasted = {
        phase: sum(1 for line in read if PHASE_PASTE.format(phase=phase) in line)
        for phase in ("requirements", "design", "tasks")
    }
    pasted["implementation"] = sum(1 for line in read if IMPLEMENTATION_PASTE in line)
    assert pasted == dict.fromkeys(pasted, 1), pasted
    for phase, sent_back in CHANGES.items():
        sent = [line for line in read if CHANGES_PASTE.format(by="alice", phase=phase) in line]
        assert len(sent) == sent_back, sent
        for round_ in range(1, sent_back + 1):
            what = f"> tighten the {phase}, round {round_}"
            assert sum(1 for line in read if line.strip() == what) == 1, (what, read)
    lane = walk.world.lane()
    outcomes = {p: [d["outcome"] for d in lane["decisions"][p]] for p in lane["decisions"]}
    assert outcomes == {p: ["changes"] * n + ["approved"] for p, n in CHANGES.items()}
    links = [d["link"] for p in lane["decisions"] for d in lane["decisions"][p]]
    assert len(links) == len(set(links)) == len(walk.decisions)
    rows = walk.spec_rows()
    assert len({row["id"] for row in rows}) == len(rows) == 4 + sum(CHANGES.values()), rows
    assert {row["state"] for row in rows} == {"delivered"}, rows
    refused = [c.body for c in walk.world.github.comments if "changed nothing" in c.body]
    assert not refused, f"a decision carried out twice was refused: {refused}"
    statuses = [lane["nodes"][p]["status"] for p in ("requirements", "design", "tasks")]
    assert statuses == ["pass"] * 3
    assert walk.pointers[-1] == "done"
    ranks = [ORDER.index(p) for p in walk.pointers]
    assert ranks == sorted(ranks), walk.pointers
