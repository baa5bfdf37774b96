"""The claim rule: a claim is the token's own unedited comment with one well-formed
marker; the lowest comment id for a start wins; a forged or edited claim decides nothing."""

from __future__ import annotations

import pytest

from tests.helpers.polling import comment
from the_loop.intake.claims import (
    CLAIM_MARKER,
    claim_body,
    claims_for,
    read_claim,
    shown_name,
    winner,
)

BOT = "the-loop-bot"
A, B = "a" * 32, "b" * 32
NONCE = "0123456789abcdef"


def claim(comment_id: int, machine: str = A, *, start: int = 500, login: str = BOT, **fields):  # type: ignore[no-untyped-def]
    body = claim_body(name=f"machine-{machine[0]}", start=start, machine=machine, nonce=NONCE)
    return comment(comment_id, login=login, body=fields.pop("body", body), **fields)


def test_a_claim_reads_back_as_posted() -> None:
    found = read_claim(claim(1001), own_login=BOT)
    assert found is not None
    assert (found.comment_id, found.start, found.machine, found.nonce) == (1001, 500, A, NONCE)
    assert found.name == "machine-a"
    assert claim(1001).body.startswith("the-loop: starting an agent on machine-a")


def test_the_lowest_comment_id_wins_whatever_the_order_read() -> None:
    comments = [claim(1009, B), claim(1003, A), claim(1005, B)]
    found = winner(500, comments, own_login=BOT)
    assert found is not None and (found.comment_id, found.machine) == (1003, A)
    assert [c.comment_id for c in claims_for(500, comments, own_login=BOT)] == [1003, 1005, 1009]


def test_a_claim_on_another_start_does_not_count() -> None:
    assert winner(500, [claim(1003, A, start=499)], own_login=BOT) is None


@pytest.mark.parametrize("login", ["mallory", "the-loop-bot2", ""])
def test_a_forged_marker_by_anyone_else_decides_nothing(login: str) -> None:
    forged = claim(1001, B, login=login or "x")
    assert read_claim(forged, own_login=BOT if login else "") is None
    assert winner(500, [forged, claim(1002, A)], own_login=BOT).machine == A  # type: ignore[union-attr]


def test_the_login_is_compared_as_github_does_without_case() -> None:
    assert read_claim(claim(1001, login="The-Loop-Bot"), own_login=BOT) is not None


def test_an_edited_claim_decides_nothing() -> None:
    edited = claim(1001, B, edited_after=30)
    assert read_claim(edited, own_login=BOT) is None
    assert winner(500, [edited, claim(1002, A)], own_login=BOT).machine == A  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body",
    [
        "the-loop: starting an agent on x\n<!-- the-loop:claim start=500 machine=zz nonce=1 -->",
        f"<!-- the-loop:claim start=500 machine={A} nonce={NONCE} -->"
        f"<!-- the-loop:claim start=500 machine={B} nonce={NONCE} -->",
        f"<!-- the-loop:claim start=0500 machine={A} nonce={NONCE} -->",
        "no marker at all",
    ],
)
def test_a_malformed_or_doubled_marker_decides_nothing(body: str) -> None:
    assert read_claim(claim(1001, body=body), own_login=BOT) is None


def test_a_name_shows_only_plain_characters() -> None:
    assert shown_name("box <img src=x> `rm`") == "box -img src-x- -rm-"
    assert shown_name("   ") == "a machine with no name"
    assert len(shown_name("n" * 500)) == 64


def test_a_claim_body_refuses_what_its_marker_cannot_hold() -> None:
    with pytest.raises(ValueError):
        claim_body(name="x", start=500, machine="not-hex", nonce=NONCE)
    assert CLAIM_MARKER.search(claim_body(name="x", start=1, machine=A, nonce=NONCE))
