"""Two readers on one item without waiting on each other (issue 28, item 11): a comment
the ledger already holds is settled without the item's hold, a drain takes the hold for
one paste at a time, and a row queued after a drain began is kept and left to the reader
that queued it. Over the seam's real stores, tmux and git."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_intake_seam import ITEM, T0, Known, SeamWorld, comment, started, world  # noqa: F401
from the_loop.intake.delivery import Delivery
from the_loop.intake.intake import Intake
from the_loop.intake.ports import LiveSession
from the_loop.intake.watched import ListedNumbers
from the_loop.portable.poll import DELIVERIES, Ledger
from the_loop.ref import WorkItemRef


def one_round(intake: Intake, *comments: Any) -> None:
    """What a reader does with ``comments``: watch, each comment, then the deliveries."""
    round_ = intake.round(ITEM)
    round_.watch(listed=ListedNumbers(ITEM, frozenset({15})), knowledge=Known(), read_from=T0)
    for each in comments:
        round_.comment(each)
    round_.deliver()


class Logged:
    """An intake whose hold and pastes write what they do, in order, to ``log``."""

    def __init__(self, intake: Intake, on_paste: Any = None) -> None:
        self.log: list[str] = []
        hold, paste = intake.ports.hold, intake.ports.deliver

        @contextmanager
        def logged_hold(ref: WorkItemRef) -> Iterator[None]:
            with hold(ref):
                self.log.append("hold")
                yield
                self.log.append("let go")

        def logged_paste(session: LiveSession, delivery: Delivery) -> None:
            paste(session, delivery)
            self.log.append(f"paste {delivery.comment_id}")
            if on_paste is not None:
                on_paste(delivery)

        ports = dataclasses.replace(intake.ports, hold=logged_hold, deliver=logged_paste)
        self.intake = Intake(intake.settings, ports)


def test_a_comment_the_ledger_holds_is_settled_while_another_reader_holds_its_item(
    world: SeamWorld,  # noqa: F811 - the imported fixture
) -> None:
    started(world)
    note = comment(102, "Please also fix the docs.", minutes=1)
    world.feed(note)
    assert wait_until(lambda: "Please also fix the docs." in world.read())
    intake = world.intake()
    round_ = intake.round(ITEM)
    round_.watch(listed=ListedNumbers(ITEM, frozenset({15})), knowledge=Known(), read_from=T0)
    settled = threading.Event()

    def settle_again() -> None:  # a poll's overlap, or a push fed again after a crash
        round_.comment(note)
        settled.set()

    with intake.ports.hold(ITEM):  # the other reader, pasting into this item
        threading.Thread(target=settle_again, daemon=True).start()
        assert settled.wait(30), "an already seen comment waited for the item's hold"
    assert (intake.counts.settled, intake.counts.delivered) == (1, 0)
    assert world.read().count("Please also fix the docs.") == 1


def test_a_drain_takes_its_items_hold_for_one_paste_at_a_time(
    world: SeamWorld,  # noqa: F811 - the imported fixture
) -> None:
    """A backlog of comments is one paste (a run, named by its last comment), and a
    review's paste after it is another: the hold is let go between them."""
    started(world)
    backlog = [comment(110 + n, f"Backlog note {n}.", minutes=1 + n) for n in range(3)]
    logged = Logged(world.intake())

    def review_queued(ledger: Ledger) -> None:  # as a review's paste is queued: no hold
        row = {"id": "review-7", "state": "waiting", "attempts": 0, "by": "bob"}
        ledger[DELIVERIES] = [*ledger.get(DELIVERIES, []), {**row, "text": "A review."}]

    round_ = logged.intake.round(ITEM)
    round_.watch(listed=ListedNumbers(ITEM, frozenset({15})), knowledge=Known(), read_from=T0)
    for note in backlog:
        round_.comment(note)
    world.intake().ports.ledger.change(ITEM, review_queued)
    round_.deliver()
    assert wait_until(lambda: "A review." in world.read())
    queued = ["hold", "let go"] * 3
    pastes = ["hold", "paste 112", "let go", "hold", "paste review-7", "let go"]
    assert logged.log == [*queued, *pastes, "hold", "let go"]
    text = world.read()
    assert text.index("Backlog note 0.") < text.index("Backlog note 2.") < text.index("A review.")


def test_what_the_other_reader_queued_after_a_drain_began_is_its_own_to_paste(
    world: SeamWorld,  # noqa: F811 - the imported fixture
) -> None:
    started(world)
    first, second = comment(111, "First of two.", minutes=1), comment(112, "Second.", minutes=2)
    later = comment(130, "Queued meanwhile.", minutes=3)

    def queue_later(delivery: Delivery) -> None:  # as the first paste goes in
        del delivery
        if str(later.id) in str(world.intake().ports.ledger.deliveries(ITEM)):
            return

        def change(ledger: Ledger) -> None:  # as a review's paste is queued: no hold taken
            ledger["seenComments"].append(str(later.id))
            row = {"id": str(later.id), "state": "waiting", "attempts": 0, "by": "alice"}
            ledger[DELIVERIES] = [*ledger.get(DELIVERIES, []), {**row, "text": later.body}]

        world.intake().ports.ledger.change(ITEM, change)

    logged = Logged(world.intake(), on_paste=queue_later)
    one_round(logged.intake, first, second)
    # The two went in as one paste (a run, named by its last comment); 130 was not in it.
    assert [step for step in logged.log if step.startswith("paste")] == ["paste 112"]
    other = Logged(world.intake())
    one_round(other.intake)  # the other reader's deliveries
    assert [step for step in other.log if step.startswith("paste")] == ["paste 130"]
    assert wait_until(lambda: "Queued meanwhile." in world.read())
    text = world.read()
    assert [text.count(c.body) for c in (first, second, later)] == [1, 1, 1]


def test_a_run_takes_only_what_waited_when_its_drain_began(
    world: SeamWorld,  # noqa: F811 - the imported fixture
) -> None:
    """A comment queued while the drain pasted a review comes after the run's comments in
    the thread, but is not in the run: the reader that queued it pastes it."""
    started(world)
    first, second = comment(111, "First of two.", minutes=1), comment(112, "Second.", minutes=2)
    later = comment(130, "Queued meanwhile.", minutes=3)

    def review_first(ledger: Ledger) -> None:
        row = {
            "id": "review-7",
            "state": "waiting",
            "attempts": 0,
            "by": "bob",
            "text": "A review.",
        }
        ledger[DELIVERIES] = [row, *ledger.get(DELIVERIES, [])]

    def queue_later(delivery: Delivery) -> None:  # as the review's paste goes in
        if delivery.comment_id != "review-7":
            return

        def change(ledger: Ledger) -> None:
            ledger["seenComments"].append(str(later.id))
            row = {"id": str(later.id), "state": "waiting", "attempts": 0, "by": "alice"}
            ledger[DELIVERIES] = [*ledger.get(DELIVERIES, []), {**row, "text": later.body}]

        world.intake().ports.ledger.change(ITEM, change)

    logged = Logged(world.intake(), on_paste=queue_later)
    round_ = logged.intake.round(ITEM)
    round_.watch(listed=ListedNumbers(ITEM, frozenset({15})), knowledge=Known(), read_from=T0)
    round_.comment(first)
    round_.comment(second)
    world.intake().ports.ledger.change(ITEM, review_first)
    round_.deliver()
    pastes = [step for step in logged.log if step.startswith("paste")]
    assert pastes == ["paste review-7", "paste 112"]
    other = Logged(world.intake())
    one_round(other.intake)
    assert [step for step in other.log if step.startswith("paste")] == ["paste 130"]
    assert wait_until(lambda: "Queued meanwhile." in world.read())
    text = world.read()
    assert [text.count(c.body) for c in (first, second, later)] == [1, 1, 1]
