"""Comments that wait together go in together: the ledger's runs (one attempt, one
number, one mark for all) and which comments may join one (the_loop.intake.runs)."""

from __future__ import annotations

import pytest

from the_loop.intake.ledger import (
    DeliveryEntry,
    DeliveryLedger,
    DeliveryState,
    LedgerTransitionError,
    Resolution,
    Verdict,
    Why,
    pane_mark_of,
)
from the_loop.intake.runs import MOST_CHARACTERS, MOST_TOGETHER, run_of

W, D, P = DeliveryState.WAITING, DeliveryState.DELIVERED, DeliveryState.PENDING


def test_a_run_is_pending_under_one_number_and_its_mark_settles_every_entry() -> None:
    ledger = DeliveryLedger().add(1).add(2).add(3).add(4)
    begun = ledger.begin_run((1, 2, 3), max_retries=3)
    assert [(e.state, e.attempts, e.begun) for e in begun.entries] == [
        (P, 1, 1),
        (P, 1, 1),
        (P, 1, 1),
        (W, 0, 0),
    ]
    pasted = tuple(Resolution(n, Verdict.DELIVERED, Why.MARKED) for n in (1, 2, 3))
    assert begun.resolve(pane_mark_of(3, 1), max_retries=3) == pasted
    not_pasted = tuple(Resolution(n, Verdict.RETRY, Why.NOT_PASTED) for n in (1, 2, 3))
    assert begun.resolve(None, max_retries=3) == not_pasted


def test_a_mark_of_an_earlier_paste_says_nothing_of_a_later_run() -> None:
    ledger = DeliveryLedger().add(1).add(2).add(3)
    ledger = ledger.begin(1, max_retries=3).delivered(1)
    begun = ledger.begin_run((2, 3), max_retries=3)
    retried = tuple(Resolution(n, Verdict.RETRY, Why.NOT_PASTED) for n in (2, 3))
    assert begun.resolve(pane_mark_of(1, 1), max_retries=3) == retried


def test_a_run_overtakes_nothing_and_needs_an_attempt_left_for_each() -> None:
    ledger = DeliveryLedger().add(1).add(2).add(3)
    with pytest.raises(LedgerTransitionError, match="not the next"):
        ledger.begin_run((2, 3), max_retries=3)
    with pytest.raises(LedgerTransitionError, match="not the next"):
        ledger.begin_run((1, 3), max_retries=3)
    with pytest.raises(LedgerTransitionError, match="not the next"):
        ledger.begin_run((), max_retries=3)
    spent = DeliveryLedger((DeliveryEntry(1, W), DeliveryEntry(2, W, attempts=3)))
    with pytest.raises(LedgerTransitionError, match="comment 2 has no attempt left"):
        spent.begin_run((1, 2), max_retries=3)
    with pytest.raises(LedgerTransitionError, match="not settled"):
        ledger.begin(1, max_retries=3).begin_run((2, 3), max_retries=3)


def _run(ledger: DeliveryLedger, **given: object) -> tuple[object, ...]:
    options: dict[str, object] = {
        "waiting": {e.comment_id for e in ledger.entries},
        "allowance": 30,
        "text": lambda key: f"comment {key}",
    }
    options |= given
    return run_of(ledger, **options)  # pyright: ignore[reportArgumentType]


def test_the_comments_after_the_due_one_join_it_up_to_the_caps() -> None:
    many = DeliveryLedger(tuple(DeliveryEntry(n, W) for n in range(1, 30)))
    assert _run(many) == tuple(range(1, MOST_TOGETHER + 1))
    assert _run(many, allowance=3) == (1, 2, 3)
    assert _run(many, allowance=0) == (1,)  # the due one goes: the breaker said it may
    big = {1: "x", 2: "y" * (MOST_CHARACTERS - 10), 3: "z" * 20}
    assert _run(many, text=lambda key: big.get(key, "")) == (1, 2)


def test_a_run_stops_at_what_may_not_join_it() -> None:
    mixed = DeliveryLedger(
        (
            DeliveryEntry(1, D, attempts=1, begun=1),
            DeliveryEntry(2, W),
            DeliveryEntry(3, W),
            DeliveryEntry("review-9", W),
            DeliveryEntry(4, W),
        )
    )
    assert _run(mixed) == (2, 3)  # a review's paste goes alone
    assert _run(mixed, waiting={2, 4}) == (2,)  # 3 came after this drain began
    retried = DeliveryLedger((DeliveryEntry(1, W), DeliveryEntry(2, W, attempts=1)))
    assert _run(retried) == (1,)  # a retry never joins a run
    again = DeliveryLedger((DeliveryEntry(1, W, attempts=1), DeliveryEntry(2, W)))
    assert _run(again) == (1,)  # nor begins one: a failing paste spends one entry
    alone = DeliveryLedger((DeliveryEntry("ci-abc-x", W), DeliveryEntry(5, W)))
    assert _run(alone) == ("ci-abc-x",)
    assert _run(DeliveryLedger()) == ()


def test_the_mark_names_the_attempt_so_a_stale_one_vouches_for_nothing_later() -> None:
    """A mark left by an earlier attempt of a run member (a paste tmux made but the client
    counted as failed) says nothing of a later run that holds that member: it is retried
    whole, and the comments that joined it are not counted delivered unpasted."""
    later = DeliveryLedger(tuple(DeliveryEntry(n, P, attempts=1, begun=2) for n in (1, 2, 3, 4, 5)))
    retried = tuple(Resolution(n, Verdict.RETRY, Why.NOT_PASTED) for n in (1, 2, 3, 4, 5))
    assert later.resolve(pane_mark_of(3, 1), max_retries=3) == retried
    pasted = tuple(Resolution(n, Verdict.DELIVERED, Why.MARKED) for n in (1, 2, 3, 4, 5))
    assert later.resolve(pane_mark_of(5, 2), max_retries=3) == pasted
    assert pane_mark_of(5, 2) == "5~2" and pane_mark_of("review-7", 0) == "review-7"


def test_an_older_releases_mark_names_its_entry_by_id_alone() -> None:
    ledger = DeliveryLedger((DeliveryEntry(1, D, 1, begun=1), DeliveryEntry(2, P, 1, begun=2)))
    assert ledger.resolve("2", max_retries=3) == (Resolution(2, Verdict.DELIVERED, Why.MARKED),)
    assert ledger.resolve("1", max_retries=3) == (Resolution(2, Verdict.RETRY, Why.NOT_PASTED),)
    unnumbered = DeliveryLedger((DeliveryEntry(1, P, 1), DeliveryEntry(2, P, 1)))
    assert unnumbered.resolve("1", max_retries=3)[0] == Resolution(1, Verdict.DELIVERED, Why.MARKED)
