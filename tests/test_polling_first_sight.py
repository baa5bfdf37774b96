"""First sight of an item: baseline the thread, run only the commands still owed."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.polling import BASE, comment
from the_loop.intake.comments import CommentPolicy
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.first_sight import OwedCommand, first_sight
from the_loop.intake.keywords import LEDGER_VERBS, VERBS
from the_loop.intake.people import AuthorizedUsers

POLICY = CommentPolicy(AuthorizedUsers.of(["alice"]))
#: The verbs of a session's life (an answer to a prompt is never owed).
LIFE_VERBS = [verb for verb in VERBS if verb not in LEDGER_VERBS]


def test_a_thread_without_commands_is_baselined_whole_in_thread_order() -> None:
    thread = [comment(3, minute=1), comment(1, minute=2), comment(2, minute=3)]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert (sight.baseline_ids, sight.commands) == ((3, 1, 2), ())


def test_with_no_control_record_a_start_then_a_pause_are_both_owed_in_thread_order() -> None:
    thread = [
        comment(1, body="the-loop start", minute=1),
        comment(2, body="chatter", minute=2),
        comment(3, body="the-loop pause", minute=3),
        comment(4, body="more chatter", minute=4),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert sight.commands == (OwedCommand(thread[0], "start"), OwedCommand(thread[2], "pause"))
    assert sight.baseline_ids == (2, 4)  # the owed ones are written with their control records


def test_history_before_the_last_start_or_stop_is_not_replayed() -> None:
    verbs = ["start", "pause", "stop", "start", "pause", "resume", "pause", "note"]
    thread = [
        comment(i, body=f"the-loop {verb}" if verb != "note" else verb, minute=i)
        for i, verb in enumerate(verbs, start=1)
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert [(c.comment.id, c.verb) for c in sight.commands] == [(4, "start"), (7, "pause")]


def test_a_pause_or_resume_alone_is_owed_as_the_last_of_them() -> None:
    thread = [comment(1, body="the-loop pause", minute=1), comment(2, body="the-loop resume")]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert [c.verb for c in sight.commands] == ["resume"]


def test_a_command_older_than_the_control_record_is_history_and_not_run_again() -> None:
    thread = [comment(1, body="the-loop start", minute=1), comment(2, body="hi", minute=5)]
    recorded = BASE + timedelta(minutes=2)
    sight = first_sight(thread, POLICY, control_requested_at=recorded)
    assert (sight.baseline_ids, sight.commands) == ((1, 2), ())


def test_a_command_written_after_the_control_record_is_still_run() -> None:
    thread = [
        comment(1, body="the-loop start", minute=1),
        comment(2, body="the-loop stop", minute=9),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=BASE + timedelta(minutes=2))
    assert sight.commands == (OwedCommand(thread[1], "stop"),) and sight.baseline_ids == (1,)


def test_a_command_in_the_same_second_as_the_control_record_counts_as_recorded() -> None:
    thread = [comment(1, body="the-loop start", minute=2)]
    sight = first_sight(thread, POLICY, control_requested_at=BASE + timedelta(minutes=2))
    assert sight.commands == ()


def test_strangers_ambiguous_comments_and_the_loops_own_words_are_never_owed() -> None:
    thread = [
        comment(1, body="the-loop start", login="alice", minute=1),
        comment(2, body="the-loop stop", login="mallory", minute=2),
        comment(3, body="the-loop stop\nthe-loop start", minute=3),
        comment(4, body=f"the-loop stop\n{AGENT_COMMENT_MARKER}", minute=4),
        comment(5, body="the-loop stop", minute=5),
        comment(6, body="> the-loop stop", minute=6),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None, posted_ids=frozenset({5}))
    assert sight.commands == (OwedCommand(thread[0], "start"),)
    assert sight.baseline_ids == (2, 3, 4, 5, 6)


@given(
    st.lists(
        st.tuples(st.sampled_from(["alice", "mallory"]), st.sampled_from([*LIFE_VERBS, "note"])),
        max_size=12,
    )
)
def test_every_comment_is_either_baselined_or_owed_and_the_owed_ones_end_where_the_thread_does(
    shapes: list[tuple[str, str]],
) -> None:
    thread = [
        comment(i, login=login, minute=i, body=f"the-loop {verb}" if verb in VERBS else verb)
        for i, (login, verb) in enumerate(shapes, start=1)
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    owed = [command.comment.id for command in sight.commands]
    assert sorted([*sight.baseline_ids, *owed]) == [c.id for c in thread]
    assert owed == sorted(owed), "in thread order"
    authorized = [c for c in thread if c.login == "alice" and c.body.startswith("the-loop ")]
    assert (owed[-1] if owed else None) == (authorized[-1].id if authorized else None)
    lives = [c.id for c in authorized if c.body.split()[1] not in ("pause", "resume")]
    assert len(owed) <= 2 and (not lives or owed[0] == lives[-1])


def test_an_allow_or_deny_in_history_is_never_owed_and_never_hides_the_start_before_it() -> None:
    thread = [
        comment(1, body="the-loop start", minute=1),
        comment(2, body="the-loop allow", minute=2),
        comment(3, body="the-loop deny", minute=3),
        comment(4, body="the-loop budget +5", minute=4),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert sight.commands == (OwedCommand(thread[0], "start"),)
    assert sight.baseline_ids == (2, 3, 4), "a raise in history acted on a ledger that travels"
