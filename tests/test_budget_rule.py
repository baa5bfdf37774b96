"""The budget as values (issue 29): a raise read from a comment, limits over defaults,
and which limit was crossed; the ``budget`` keyword and what follows it."""

from __future__ import annotations

import pytest

from the_loop.intake.budget_rule import Limits, Raise, crossed, parse_raise, raised
from the_loop.intake.keywords import KeywordGrammar


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+5", Raise("usd", 5.0)),
        ("+0.50", Raise("usd", 0.5)),
        ("+$5", Raise("usd", 5.0)),
        ("+5 usd", Raise("usd", 5.0)),
        ("+2h", Raise("hours", 2.0)),
        ("+1.5 hours", Raise("hours", 1.5)),
        ("+10 turns", Raise("turns", 10.0)),
        ("+1 turn", Raise("turns", 1.0)),
    ],
)
def test_a_raise_is_read_in_dollars_hours_or_turns(text: str, expected: Raise) -> None:
    assert parse_raise(text) == expected


@pytest.mark.parametrize(
    "text", ["5", "-5", "+0", "+", "+five", "+5 euros", "+1.5 turns", "+5; rm -rf /", "lots"]
)
def test_anything_else_is_no_raise(text: str) -> None:
    assert parse_raise(text) is None


def test_an_items_own_limits_go_over_the_defaults_and_a_raise_adds_to_the_limit() -> None:
    defaults = Limits(usd=1.0)
    limits = defaults.over({"usd": 6.0, "turns": 20, "hours": "x"})
    assert limits == Limits(usd=6.0, turns=20.0)
    assert raised(limits, {"usd": 6.3}, Raise("usd", 5)) == 11.0, "the limit, not what was spent"
    assert raised(limits, {"hours": 0.7}, Raise("hours", 2)) == 2.7, "none: what was spent"


def test_the_first_limit_reached_is_the_one_crossed() -> None:
    limits = Limits(usd=1.0, turns=10)
    assert crossed({"usd": 0.5, "turns": 9}, limits) is None
    crossing = crossed({"usd": 1.0, "turns": 3}, limits)
    assert crossing is not None and (crossing.kind, crossing.said()) == ("usd", "$1.00 of $1.00")
    warning = crossed({"usd": 0.5, "turns": 8}, limits, at=0.8)
    assert warning is not None and warning.kind == "turns"
    assert crossed({"usd": 99.0}, Limits()) is None, "no limit, nothing crossed"


def test_the_budget_keyword_and_its_argument() -> None:
    grammar = KeywordGrammar()
    body = "Thanks!\n> the-loop budget +100\n\nthe-loop budget +5 please\n"
    assert grammar.scan(body).verb == "budget"
    assert grammar.arguments(body, "budget") == "+5 please", "the quoted line never counts"
    assert parse_raise(grammar.arguments(body, "budget")) is None, "only an exact raise"
    assert grammar.arguments("the-loop budget\n", "budget") == ""
    assert grammar.scan("the-loop budgets +5").verb is None
