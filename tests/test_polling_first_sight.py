"""First sight of an item: baseline the thread, run only the command still owed."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.polling import BASE, comment
from the_loop.polling.comments import CommentPolicy
from the_loop.polling.first_sight import OwedCommand, first_sight
from the_loop.polling.github_comment import AGENT_COMMENT_MARKER
from the_loop.polling.keywords import VERBS
from the_loop.polling.people import AuthorizedUsers

POLICY = CommentPolicy(AuthorizedUsers.of(["alice"]))


def test_a_thread_without_commands_is_baselined_whole_in_thread_order() -> None:
    thread = [comment(3, minute=1), comment(1, minute=2), comment(2, minute=3)]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert (sight.baseline_ids, sight.command) == ((3, 1, 2), None)


def test_with_no_control_record_the_latest_authorized_command_is_owed() -> None:
    thread = [
        comment(1, body="the-loop start", minute=1),
        comment(2, body="chatter", minute=2),
        comment(3, body="the-loop pause", minute=3),
        comment(4, body="more chatter", minute=4),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    assert sight.command == OwedCommand(thread[2], "pause")
    assert sight.baseline_ids == (1, 2, 4)  # the owed one is written with its control record


def test_a_command_older_than_the_control_record_is_history_and_not_run_again() -> None:
    thread = [comment(1, body="the-loop start", minute=1), comment(2, body="hi", minute=5)]
    recorded = BASE + timedelta(minutes=2)
    sight = first_sight(thread, POLICY, control_requested_at=recorded)
    assert (sight.baseline_ids, sight.command) == ((1, 2), None)


def test_a_command_written_after_the_control_record_is_still_run() -> None:
    thread = [
        comment(1, body="the-loop start", minute=1),
        comment(2, body="the-loop stop", minute=9),
    ]
    sight = first_sight(thread, POLICY, control_requested_at=BASE + timedelta(minutes=2))
    assert sight.command == OwedCommand(thread[1], "stop") and sight.baseline_ids == (1,)


def test_a_command_in_the_same_second_as_the_control_record_counts_as_recorded() -> None:
    thread = [comment(1, body="the-loop start", minute=2)]
    sight = first_sight(thread, POLICY, control_requested_at=BASE + timedelta(minutes=2))
    assert sight.command is None


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
    assert sight.command == OwedCommand(thread[0], "start")
    assert sight.baseline_ids == (2, 3, 4, 5, 6)


@given(
    st.lists(
        st.tuples(st.sampled_from(["alice", "mallory"]), st.sampled_from([*VERBS, "note"])),
        max_size=12,
    )
)
def test_every_comment_is_either_baselined_or_the_one_owed_command(
    shapes: list[tuple[str, str]],
) -> None:
    thread = [
        comment(i, login=login, minute=i, body=f"the-loop {verb}" if verb in VERBS else verb)
        for i, (login, verb) in enumerate(shapes, start=1)
    ]
    sight = first_sight(thread, POLICY, control_requested_at=None)
    owed = [sight.command.comment.id] if sight.command else []
    assert sorted([*sight.baseline_ids, *owed]) == [c.id for c in thread]
    authorized = [c for c in thread if c.login == "alice" and c.body.startswith("the-loop ")]
    assert owed == ([authorized[-1].id] if authorized else [])
