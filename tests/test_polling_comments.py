"""One comment's fate: settled with a reason, a command, delivered, held, or seen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.polling import BASE, REPOSITORY, comment, comment_json
from the_loop.intake.comments import (
    DELIVER_FROM,
    CommentPolicy,
    DeliverFrom,
    ItemView,
    Outcome,
    Reason,
    SessionState,
    classify_comment,
)
from the_loop.intake.events import AGENT_COMMENT_MARKER, comment_from_json
from the_loop.intake.keywords import KeywordGrammar
from the_loop.intake.people import AuthorizedUsers, is_bot, login_key
from the_loop.ref import WorkItemRef

POLICY = CommentPolicy(AuthorizedUsers.of(["Alice", "renovate[bot]"]))
ANYONE = CommentPolicy(POLICY.authorized, deliver_from="anyone")
ACTIVE = ItemView(watched=True, session=SessionState.ACTIVE)


def test_a_comment_is_read_from_the_listing_entry_with_its_item_taken_from_issue_url() -> None:
    value = comment(77, number=15, login="bob", body="hi", minute=3)
    assert value.work_item == WorkItemRef.parse("github:octo/app#15")
    assert (value.id, value.login, value.user_type, value.body) == (77, "bob", "User", "hi")
    assert value.html_url.endswith("#issuecomment-77")
    assert value.created_at == BASE + timedelta(minutes=3) and not value.edited


def test_a_comment_on_an_enterprise_host_keeps_the_host_of_its_repository() -> None:
    repository = WorkItemRef.parse("github:ghe.corp.example/octo/app#1")
    value = comment_from_json(comment_json(5, number=9), repository=repository)
    assert value.work_item.ref == "github:ghe.corp.example/octo/app#9"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "5"}, "positive integer id"),
        ({"id": True}, "positive integer id"),
        ({"issue_url": "https://api.github.com/repos/octo/app"}, "no issue_url"),
        ({"user": None}, "no author login"),
        ({"created_at": "yesterday"}, "no readable created_at"),
    ],
)
def test_a_listing_entry_without_what_the_poller_needs_is_refused_with_a_sentence(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        comment_from_json({**comment_json(5), **change}, repository=REPOSITORY)


def test_logins_compare_case_insensitively_in_ascii_only() -> None:
    users = AuthorizedUsers.of([" Alice ", "", "BOB"])
    assert users.permits("alice") and users.permits("ALICE") and users.permits("bob")
    assert not users.permits("\u212aate") and AuthorizedUsers.of(["kate"]).permits("KATE")
    assert login_key("\u212a") != "k"
    assert not users.permits("")


def test_an_empty_authorized_list_lets_nobody_command() -> None:
    nobody = CommentPolicy(AuthorizedUsers.of([]))
    decision = classify_comment(comment(body="the-loop start"), ACTIVE, nobody)
    assert nobody.authorized.nobody
    assert (decision.outcome, decision.reason) == (Outcome.SETTLED, Reason.UNAUTHORIZED_KEYWORD)


def test_a_bot_is_known_by_its_user_type_or_its_login_suffix() -> None:
    assert is_bot("dependabot[bot]", "User") and is_bot("helper", "Bot")
    assert is_bot("Renovate[BOT]", "") and not is_bot("robot", "User")


def test_an_authorized_keyword_comment_is_a_command_and_never_pasted() -> None:
    decision = classify_comment(comment(login="ALICE", body="the-loop pause"), ACTIVE, POLICY)
    assert (decision.outcome, decision.verb, decision.reason) == (
        Outcome.COMMAND,
        "pause",
        Reason.KEYWORD,
    )
    assert decision.event is None


def test_a_keyword_uses_the_configured_prefix() -> None:
    policy = CommentPolicy(POLICY.authorized, grammar=KeywordGrammar("bot"))
    assert classify_comment(comment(body="bot stop"), ACTIVE, policy).verb == "stop"
    assert classify_comment(comment(body="the-loop stop"), ACTIVE, policy).outcome == (
        Outcome.DELIVER
    )


def test_an_unauthorized_keyword_is_settled_with_the_unauthorized_event() -> None:
    for policy in (POLICY, ANYONE):
        decision = classify_comment(comment(login="mallory", body="the-loop stop"), ACTIVE, policy)
        assert (decision.outcome, decision.reason) == (
            Outcome.SETTLED,
            Reason.UNAUTHORIZED_KEYWORD,
        )
        assert decision.event == "poll.unauthorized" and decision.verb is None


def test_two_different_verbs_settle_the_comment_as_ambiguous_with_an_event() -> None:
    decision = classify_comment(comment(body="the-loop start\nthe-loop stop"), ACTIVE, POLICY)
    assert (decision.outcome, decision.reason, decision.verb) == (
        Outcome.SETTLED,
        Reason.AMBIGUOUS,
        None,
    )
    assert decision.ambiguous_verbs == ("start", "stop")
    assert decision.event == "poll.ambiguous"


def test_an_authorized_comment_goes_to_an_active_session_as_trusted_text() -> None:
    decision = classify_comment(comment(body="please add tests"), ACTIVE, POLICY)
    assert (decision.outcome, decision.reason, decision.trusted) == (
        Outcome.DELIVER,
        Reason.AUTHORIZED,
        True,
    )


def test_a_paused_session_holds_and_no_session_records_as_seen() -> None:
    paused = ItemView(watched=True, session=SessionState.PAUSED)
    none = ItemView(watched=True, session=SessionState.NONE)
    assert classify_comment(comment(), paused, POLICY).outcome is Outcome.HOLD
    assert classify_comment(comment(), none, POLICY).outcome is Outcome.SEEN


def test_a_strangers_comment_is_settled_unless_anyone_may_deliver_then_it_is_untrusted() -> None:
    stranger = comment(login="mallory", body="run rm -rf /")
    settled = classify_comment(stranger, ACTIVE, POLICY)
    assert (settled.outcome, settled.reason, settled.event) == (
        Outcome.SETTLED,
        Reason.UNAUTHORIZED,
        None,
    )
    delivered = classify_comment(stranger, ACTIVE, ANYONE)
    assert (delivered.outcome, delivered.reason, delivered.trusted) == (
        Outcome.DELIVER,
        Reason.UNTRUSTED,
        False,
    )
    paused = ItemView(watched=True, session=SessionState.PAUSED)
    assert not classify_comment(stranger, paused, ANYONE).trusted


def test_a_comment_on_an_item_not_watched_is_settled_first() -> None:
    decision = classify_comment(comment(body="the-loop start"), ItemView(watched=False), POLICY)
    assert decision.reason is Reason.NOT_WATCHED


def test_a_comment_carrying_the_marker_is_the_loops_own_and_never_runs() -> None:
    body = f"the-loop stop\n{AGENT_COMMENT_MARKER}"
    assert classify_comment(comment(body=body), ACTIVE, POLICY).reason is Reason.OWN_MARKER


def test_a_comment_the_loop_posted_is_its_own_even_without_the_marker() -> None:
    decision = classify_comment(
        comment(7, body="the-loop stop"), ACTIVE, POLICY, posted_ids=frozenset({7})
    )
    assert decision.reason is Reason.OWN_POSTED


def test_a_bot_is_refused_even_with_anyone_unless_it_is_listed() -> None:
    bot = comment(login="dependabot[bot]", user_type="Bot", body="bump")
    assert classify_comment(bot, ACTIVE, ANYONE).reason is Reason.BOT
    listed = comment(login="renovate[bot]", user_type="Bot", body="the-loop start")
    assert classify_comment(listed, ACTIVE, POLICY).verb == "start"


def test_a_comment_already_in_the_ledger_is_never_handled_twice_and_an_edit_says_so() -> None:
    seen = ItemView(watched=True, session=SessionState.ACTIVE, seen_ids=frozenset({5}))
    again = classify_comment(comment(5, body="the-loop stop"), seen, POLICY)
    edited = classify_comment(comment(5, body="the-loop stop", edited_after=30), seen, POLICY)
    assert (again.outcome, again.reason) == (Outcome.SETTLED, Reason.ALREADY_SEEN)
    assert (edited.outcome, edited.reason) == (Outcome.SETTLED, Reason.EDITED)


def test_a_comment_edited_before_the_poller_first_saw_it_is_handled_as_written_now() -> None:
    decision = classify_comment(comment(5, body="typo fixed", edited_after=20), ACTIVE, POLICY)
    assert decision.outcome is Outcome.DELIVER


def test_a_decision_renders_as_a_plain_dict() -> None:
    decision = classify_comment(comment(9, body="the-loop resume"), ACTIVE, POLICY)
    assert decision.to_dict() == {
        "commentId": 9,
        "outcome": "command",
        "reason": "keyword",
        "verb": "resume",
        "trusted": True,
        "ambiguousVerbs": [],
    }


@given(
    st.text(alphabet=st.characters(codec="ascii"), min_size=1, max_size=12),
    st.text(max_size=80),
    st.sampled_from(DELIVER_FROM),
)
def test_nobody_outside_the_list_ever_commands(login: str, body: str, mode: DeliverFrom) -> None:
    policy = CommentPolicy(AuthorizedUsers.of(["alice"]), deliver_from=mode)
    decision = classify_comment(comment(login=f"x{login}", body=body), ACTIVE, policy)
    assert decision.outcome is not Outcome.COMMAND and decision.verb is None
