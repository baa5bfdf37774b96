"""The delivery ledger's state machine, its crash recovery by pane mark, and the breaker."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from the_loop.intake.ledger import (
    HOUR_SECONDS,
    DeliveryEntry,
    DeliveryKey,
    DeliveryLedger,
    DeliveryState,
    LedgerTransitionError,
    Resolution,
    Verdict,
    Why,
    breaker,
)

RETRIES = 3


def ledger_of(*ids: int) -> DeliveryLedger:
    ledger = DeliveryLedger()
    for comment_id in ids:
        ledger = ledger.add(comment_id)
    return ledger


def test_a_delivery_goes_waiting_pending_delivered_counting_its_attempt() -> None:
    ledger = ledger_of(1).begin(1, max_retries=RETRIES)
    assert ledger.entry(1) == DeliveryEntry(1, DeliveryState.PENDING, 1, begun=1)
    assert ledger.delivered(1).entry(1) == DeliveryEntry(1, DeliveryState.DELIVERED, 1, begun=1)


def test_nothing_new_may_begin_while_an_entry_is_pending() -> None:
    ledger = ledger_of(1, 2).begin(1, max_retries=RETRIES)
    with pytest.raises(LedgerTransitionError, match="comment 1 is still pending"):
        ledger.begin(2, max_retries=RETRIES)


def test_a_delivered_or_unknown_comment_cannot_begin_and_a_known_one_cannot_be_added() -> None:
    delivered = ledger_of(1).begin(1, max_retries=RETRIES).delivered(1)
    with pytest.raises(LedgerTransitionError, match="is delivered, not waiting or held"):
        delivered.begin(1, max_retries=RETRIES)
    with pytest.raises(LedgerTransitionError, match="comment 9 is absent"):
        delivered.begin(9, max_retries=RETRIES)
    with pytest.raises(LedgerTransitionError, match="already in the ledger"):
        delivered.add(1)
    with pytest.raises(LedgerTransitionError, match="waiting or held"):
        DeliveryLedger().add(3, DeliveryState.PENDING)


def test_held_comments_are_released_at_resume_in_the_order_they_were_held() -> None:
    ledger = DeliveryLedger().add(5, DeliveryState.HELD).add(3, DeliveryState.HELD).add(4)
    assert ledger.held == (5, 3)
    released = ledger.release_held()
    assert (
        released.held == () and [e.state for e in released.entries] == [DeliveryState.WAITING] * 3
    )
    assert [e.comment_id for e in released.entries] == [5, 3, 4]


def test_a_new_attempt_keeps_the_entry_in_its_place_and_numbers_it_the_panes_latest() -> None:
    ledger = ledger_of(1, 2)
    ledger = ledger.begin(1, max_retries=RETRIES).delivered(1).begin(2, max_retries=RETRIES)
    ledger = ledger.apply([ledger.paste_failed(2, max_retries=RETRIES)])
    ledger = ledger.begin(2, max_retries=RETRIES)
    assert [e.comment_id for e in ledger.entries] == [1, 2]
    assert ledger.entry(2) == DeliveryEntry(2, DeliveryState.PENDING, 2, begun=3)


def test_a_refused_paste_is_retried_until_the_attempts_are_spent_then_given_up() -> None:
    ledger, verdicts = ledger_of(1), []
    for _ in range(RETRIES):
        ledger = ledger.begin(1, max_retries=RETRIES)
        resolution = ledger.paste_failed(1, max_retries=RETRIES)
        verdicts.append(resolution.verdict)
        ledger = ledger.apply([resolution])
    assert verdicts == [Verdict.RETRY, Verdict.RETRY, Verdict.GIVE_UP]
    assert ledger.entry(1) == DeliveryEntry(1, DeliveryState.GIVEN_UP, RETRIES, begun=RETRIES)
    with pytest.raises(LedgerTransitionError):
        ledger.begin(1, max_retries=RETRIES)


def test_on_restart_a_pending_whose_id_the_pane_carries_counts_as_delivered() -> None:
    ledger = ledger_of(7).begin(7, max_retries=RETRIES)
    assert ledger.resolve("7", max_retries=RETRIES) == (
        Resolution(7, Verdict.DELIVERED, Why.MARKED),
    )


def test_on_restart_a_pending_the_pane_does_not_carry_is_retried() -> None:
    ledger = (
        ledger_of(6, 7).begin(6, max_retries=RETRIES).delivered(6).begin(7, max_retries=RETRIES)
    )
    for mark in ("6", None, "12345"):
        assert ledger.resolve(mark, max_retries=RETRIES) == (
            Resolution(7, Verdict.RETRY, Why.NOT_PASTED),
        )


def test_on_restart_a_pending_with_no_attempt_left_is_given_up() -> None:
    ledger = DeliveryLedger((DeliveryEntry(7, DeliveryState.PENDING, RETRIES),))
    assert ledger.resolve(None, max_retries=RETRIES) == (
        Resolution(7, Verdict.GIVE_UP, Why.RETRIES_SPENT),
    )


def test_a_pending_before_a_later_paste_is_given_up_never_pasted_twice() -> None:
    # The mark holds only the last id: an earlier pending may or may not have reached the pane.
    pending = DeliveryEntry(1, DeliveryState.PENDING, 1)
    later_pending = DeliveryLedger((pending, DeliveryEntry(2, DeliveryState.PENDING, 1)))
    assert later_pending.resolve("2", max_retries=RETRIES) == (
        Resolution(1, Verdict.GIVE_UP, Why.OVERWRITTEN),
        Resolution(2, Verdict.DELIVERED, Why.MARKED),
    )
    later_delivered = DeliveryLedger((pending, DeliveryEntry(2, DeliveryState.DELIVERED, 1)))
    assert later_delivered.resolve(None, max_retries=RETRIES) == (
        Resolution(1, Verdict.GIVE_UP, Why.OVERWRITTEN),
    )


def test_applying_resolutions_writes_delivered_waiting_or_given_up() -> None:
    ledger = DeliveryLedger(
        tuple(DeliveryEntry(i, DeliveryState.PENDING, 1) for i in (1, 2, 3))
    ).apply(
        [
            Resolution(1, Verdict.GIVE_UP, Why.OVERWRITTEN),
            Resolution(2, Verdict.DELIVERED, Why.MARKED),
        ]
    )
    assert [e.state for e in ledger.entries] == [
        DeliveryState.GIVEN_UP,
        DeliveryState.DELIVERED,
        DeliveryState.PENDING,
    ]
    ledger = ledger.apply([Resolution(3, Verdict.RETRY, Why.NOT_PASTED)])
    assert ledger.entry(3) == DeliveryEntry(3, DeliveryState.WAITING, 1)


# Crash points in one delivery: 0 none, 1 after pending, 2 after paste+mark, 3 tmux refused.
@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=8, unique=True),
    st.lists(st.integers(0, 3), max_size=40),
    st.integers(1, 4),
)
def test_a_poller_crashing_anywhere_never_pastes_twice_and_loses_nothing_silently(
    ids: list[int], crashes: list[int], max_retries: int
) -> None:
    ledger, mark, pastes = ledger_of(*ids), None, Counter[DeliveryKey]()
    crash_points = iter(crashes)
    while waiting := [e for e in ledger.entries if e.state is DeliveryState.WAITING]:
        comment_id = waiting[0].comment_id
        ledger = ledger.begin(comment_id, max_retries=max_retries)
        crash = next(crash_points, 0)
        if crash == 3:
            ledger = ledger.apply([ledger.paste_failed(comment_id, max_retries=max_retries)])
            continue
        if crash != 1:
            pastes[comment_id] += 1  # the paste and the mark: one tmux command list
            mark = str(comment_id)
        if crash in (1, 2):
            ledger = ledger.apply(ledger.resolve(mark, max_retries=max_retries))
            continue
        ledger = ledger.delivered(comment_id)
    assert max(pastes.values(), default=0) <= 1
    for entry in ledger.entries:
        assert entry.state in (DeliveryState.DELIVERED, DeliveryState.GIVEN_UP)
        assert pastes[entry.comment_id] == (1 if entry.state is DeliveryState.DELIVERED else 0)
        assert entry.attempts <= max_retries


_STATES = st.sampled_from(list(DeliveryState))


@given(
    st.lists(st.tuples(_STATES, st.booleans(), st.integers(0, 5)), min_size=1, max_size=8),
    st.sampled_from([None, "999999"]),
)
def test_resolving_any_ledger_never_retries_a_paste_and_never_claims_one_that_did_not_happen(
    shapes: list[tuple[DeliveryState, bool, int]], foreign_mark: str | None
) -> None:
    # Even a ledger that broke the one-pending rule: whatever was pasted, the mark is the last.
    entries, pasted = [], set[int]()
    for comment_id, (state, was_pasted, attempts) in enumerate(shapes, start=1):
        entries.append(DeliveryEntry(comment_id, state, attempts))
        if state is DeliveryState.DELIVERED or (
            was_pasted and state in (DeliveryState.PENDING, DeliveryState.GIVEN_UP)
        ):
            pasted.add(comment_id)
    mark = str(max(pasted)) if pasted else foreign_mark
    resolutions = DeliveryLedger(tuple(entries)).resolve(mark, max_retries=RETRIES)
    pending = [e.comment_id for e in entries if e.state is DeliveryState.PENDING]
    assert [r.comment_id for r in resolutions] == pending
    for resolution in resolutions:
        if resolution.comment_id in pasted:
            assert resolution.verdict is not Verdict.RETRY
        else:
            assert resolution.verdict is not Verdict.DELIVERED


def test_the_breaker_stays_closed_below_the_limit_within_the_hour() -> None:
    now = 10_000.0
    state = breaker([now - 10, now - 20], now=now, max_per_hour=3)
    assert (state.open, state.recent, state.closes_at) == (False, 2, None)


def test_the_breaker_opens_at_the_limit_and_closes_when_the_oldest_leaves_the_hour() -> None:
    now = 10_000.0
    times = [now - 3000, now - 100, now - 50, now - 4000]
    state = breaker(times, now=now, max_per_hour=3)
    assert (state.open, state.recent) == (True, 3)
    assert state.closes_at == now - 3000 + HOUR_SECONDS
    assert not breaker(times, now=now - 3000 + HOUR_SECONDS, max_per_hour=3).open


def test_a_delivery_exactly_an_hour_old_no_longer_counts() -> None:
    assert breaker([0.0], now=HOUR_SECONDS, max_per_hour=1).recent == 0


def test_a_delivery_stamped_in_the_future_counts_as_recent() -> None:
    assert breaker([500.0], now=100.0, max_per_hour=1).open


def test_a_limit_of_zero_holds_every_delivery_and_a_negative_one_is_refused() -> None:
    assert breaker([], now=0.0, max_per_hour=0) == breaker([], now=0.0, max_per_hour=0)
    assert breaker([], now=0.0, max_per_hour=0).open
    assert breaker([], now=0.0, max_per_hour=0).closes_at is None
    with pytest.raises(ValueError, match="0 or more"):
        breaker([], now=0.0, max_per_hour=-1)


@given(
    st.lists(st.floats(0, 20_000, allow_nan=False), max_size=60),
    st.integers(1, 8),
)
def test_delivering_only_while_the_breaker_is_closed_never_exceeds_the_limit_in_any_hour(
    arrivals: list[float], limit: int
) -> None:
    delivered: list[float] = []
    for moment in sorted(arrivals):
        if not breaker(delivered, now=moment, max_per_hour=limit).open:
            delivered.append(moment)
    for start in delivered:
        assert sum(1 for t in delivered if start <= t < start + HOUR_SECONDS) <= limit
