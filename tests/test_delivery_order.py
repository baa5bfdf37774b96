"""Comments reach a pane in thread order, retries included: a delivery cut short by a
crash is retried before the comments after it (real processes, real tmux and git, the
loopback fake), and the ledger's state machine keeps that order whatever happens."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_intake_seam import SeamWorld, comment, started
from tests.test_poll_crash import comment_row, poll_in_child
from tests.test_poll_e2e import REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.errors import TheLoopError
from the_loop.intake.delivery import Delivery
from the_loop.intake.intake import Intake
from the_loop.intake.ledger import (
    DeliveryEntry,
    DeliveryKey,
    DeliveryLedger,
    DeliveryState,
    LedgerTransitionError,
    Resolution,
    Verdict,
    Why,
)
from the_loop.intake.ports import LiveSession


@pytest.mark.parametrize("crash_at", ["after-pending", "after-paste"])
def test_five_comments_pasted_together_and_a_crash_arrive_in_thread_order_once(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    tmux_socket: str,  # noqa: F811 - the imported fixture
    crash_at: str,
) -> None:
    """Five comments waiting at once go in as one run (one paste: the stand-in agent
    does not say what it received), every one pending under one attempt; a crash before
    the paste retries them all, one after it finds the run's mark and settles them all,
    and either way each is in the pane once, in thread order."""
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_in_child(world) == 0
    assert wait_until(lambda: "PROMPT" in world.read())
    texts = [f"comment number {n} of the thread." for n in range(5)]
    ids = [github.add_comment(REPO, 15, text, login="alice").id for text in texts]
    assert poll_in_child(world, crash_at=crash_at) == -signal.SIGKILL
    rows = [comment_row(world, i) for i in ids]
    assert [row["state"] for row in rows] == ["pending"] * 5
    assert len({row["begun"] for row in rows}) == 1  # one attempt, numbered once
    assert poll_in_child(world) == 0
    assert wait_until(lambda: texts[-1] in world.read())
    assert poll_in_child(world) == 0  # nothing is left to paste, or pasted again
    read = world.read()
    assert [read.count(text) for text in texts] == [1] * 5
    assert sorted(texts, key=read.index) == texts, read
    events = world.events_named("poll.comment_delivered")
    assert [e["comment_id"] for e in events] == ids
    resolved = {e.get("resolved") for e in events}
    assert resolved == ({"marked"} if crash_at == "after-paste" else {None})
    assert {e["attempt"] for e in events} == ({1} if crash_at == "after-paste" else {2})


class RefusingWorld(SeamWorld):
    """The seam's world, whose tmux refuses the first paste holding a text named."""

    def __init__(self, tmp_path: Path, socket: str) -> None:
        super().__init__(tmp_path, socket)
        self.refuse_once: set[str] = set()

    def intake(self) -> Intake:
        intake = super().intake()
        paste = intake.ports.deliver

        def deliver(session: LiveSession, delivery: Delivery) -> None:
            refused = {text for text in self.refuse_once if text in delivery.text}
            if refused:
                self.refuse_once -= refused
                raise TheLoopError("tmux refused the paste")
            paste(session, delivery)

        return Intake(intake.settings, dataclasses.replace(intake.ports, deliver=deliver))


@pytest.fixture
def refusing(tmp_path: Path, tmux_socket: str) -> Iterator[RefusingWorld]:  # noqa: F811
    yield RefusingWorld(tmp_path, tmux_socket)


def test_a_refused_paste_holds_the_comments_after_it_until_its_retry_went_in(
    refusing: RefusingWorld,
) -> None:
    started(refusing)
    notes = [comment(200 + n, f"Note {n} of three.", minutes=n + 1) for n in range(3)]
    refusing.refuse_once = {"Note 0 of three."}
    first = refusing.feed(*notes)
    assert first.counts.delivered == 0, "nothing overtakes the refused paste"
    second = refusing.feed()
    assert second.counts.delivered == 3
    assert wait_until(lambda: "Note 2 of three." in refusing.read())
    read = refusing.read()
    texts = [f"Note {n} of three." for n in range(3)]
    assert [read.count(text) for text in texts] == [1, 1, 1]
    assert sorted(texts, key=read.index) == texts, read


def test_a_retried_entry_keeps_its_place_and_goes_before_the_later_ones() -> None:
    ledger = DeliveryLedger().add(1).add(2).add(3)
    ledger = ledger.begin(1, max_retries=3)
    ledger = ledger.apply(ledger.resolve(None, max_retries=3))  # a crash: not pasted
    assert [e.comment_id for e in ledger.entries] == [1, 2, 3]
    assert ledger.due is not None and ledger.due.comment_id == 1
    with pytest.raises(LedgerTransitionError, match="comment 1 comes first"):
        ledger.begin(2, max_retries=3)


def test_a_pending_entry_is_judged_by_when_its_attempt_began_not_by_its_place() -> None:
    # First in the thread, but its attempt began after the other's paste: a mark naming
    # the other says nothing of it. Begun before the other's paste, it may have been pasted.
    after = DeliveryLedger(
        (
            DeliveryEntry(1, DeliveryState.PENDING, 2, begun=2),
            DeliveryEntry(2, DeliveryState.DELIVERED, 1, begun=1),
        )
    )
    assert after.resolve("2", max_retries=3) == (Resolution(1, Verdict.RETRY, Why.NOT_PASTED),)
    assert after.resolve("1", max_retries=3) == (Resolution(1, Verdict.DELIVERED, Why.MARKED),)
    before = DeliveryLedger(
        (
            DeliveryEntry(1, DeliveryState.PENDING, 1, begun=1),
            DeliveryEntry(2, DeliveryState.DELIVERED, 1, begun=2),
        )
    )
    assert before.resolve("2", max_retries=3) == (Resolution(1, Verdict.GIVE_UP, Why.OVERWRITTEN),)


# Crash points in one delivery: 0 none, 1 after pending, 2 after paste+mark, 3 tmux refused.
@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=8, unique=True),
    st.lists(st.integers(0, 3), max_size=40),
    st.integers(1, 4),
)
def test_whatever_crashes_the_pane_receives_its_comments_in_thread_order_at_most_once(
    ids: list[int], crashes: list[int], max_retries: int
) -> None:
    ledger, mark, pasted = DeliveryLedger(), None, list[DeliveryKey]()
    for comment_id in ids:
        ledger = ledger.add(comment_id)
    crash_points = iter(crashes)
    while (due := ledger.due) is not None:
        ledger = ledger.begin(due.comment_id, max_retries=max_retries)
        crash = next(crash_points, 0)
        if crash == 3:
            ledger = ledger.apply([ledger.paste_failed(due.comment_id, max_retries=max_retries)])
            continue
        if crash != 1:
            pasted.append(due.comment_id)
            mark = str(due.comment_id)
        if crash in (1, 2):
            ledger = ledger.apply(ledger.resolve(mark, max_retries=max_retries))
            continue
        ledger = ledger.delivered(due.comment_id)
    assert pasted == [i for i in ids if i in pasted], "a paste out of thread order"
    assert len(pasted) == len(set(pasted))
    delivered = [e.comment_id for e in ledger.entries if e.state is DeliveryState.DELIVERED]
    assert delivered == pasted
