"""The keyword grammar: which comment lines command, and which never do."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from the_loop.intake.keywords import VERBS, KeywordGrammar, KeywordScan, commanding_lines

GRAMMAR = KeywordGrammar()


def verbs(body: str, grammar: KeywordGrammar = GRAMMAR) -> tuple[str, ...]:
    return grammar.scan(body).verbs


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_after_the_prefix_is_a_keyword(verb: str) -> None:
    scan = GRAMMAR.scan(f"the-loop {verb}")
    assert scan.verb == verb and scan.is_keyword and not scan.ambiguous


def test_prefix_and_verb_match_in_any_case_and_words_may_follow() -> None:
    assert verbs("The-Loop STOP please, we are done") == ("stop",)
    assert verbs("THE-LOOP Pause.") == ("pause",)


def test_a_keyword_line_may_be_any_line_of_the_comment() -> None:
    assert verbs("Thanks for the report.\n\nthe-loop start\nLet us see.") == ("start",)


def test_up_to_three_leading_spaces_are_allowed_but_four_or_a_tab_make_code() -> None:
    assert verbs("   the-loop start") == ("start",)
    assert verbs("    the-loop start") == ()
    assert verbs("\tthe-loop start") == ()


def test_spaces_or_tabs_may_separate_prefix_and_verb_but_nothing_else() -> None:
    assert verbs("the-loop \t  resume") == ("resume",)
    assert verbs("the-loopresume") == ()
    assert verbs("the-loop-bot resume") == ()
    assert verbs("the-loop, resume") == ()


@pytest.mark.parametrize("follower", ["-now", ":", "s", "_x", "1", "é"])
def test_a_verb_followed_by_a_word_character_colon_or_dash_is_not_a_keyword(
    follower: str,
) -> None:
    assert verbs(f"the-loop stop{follower}") == ()


def test_a_keyword_must_start_its_line() -> None:
    assert verbs("please the-loop stop") == ()
    assert verbs("`the-loop stop`") == ()


def test_case_folding_is_ascii_only_so_look_alike_letters_do_not_match() -> None:
    assert verbs("the-loop ſtop") == ()  # LATIN SMALL LETTER LONG S
    assert verbs("the-loop \u212aeep") == ()  # the Kelvin sign is no "K"


def test_two_different_verbs_are_ambiguous_and_name_no_verb() -> None:
    scan = GRAMMAR.scan("the-loop start\nthe-loop stop")
    assert scan.ambiguous and scan.verb is None
    assert scan.verbs == ("start", "stop")
    assert scan.is_keyword  # still a keyword comment: it is never pasted


def test_the_same_verb_twice_is_one_command() -> None:
    assert GRAMMAR.scan("the-loop pause\nand again:\nthe-loop PAUSE").verb == "pause"


def test_a_quoted_command_never_commands() -> None:
    assert verbs("> the-loop stop\n\nI agree with alice") == ()
    assert verbs("  > > the-loop stop") == ()


def test_a_line_continuing_a_quote_is_quoted_until_a_blank_line() -> None:
    assert verbs("> alice wrote:\nthe-loop stop") == ()
    assert verbs("> alice wrote:\n\nthe-loop stop") == ("stop",)


def test_lines_in_a_fenced_code_block_never_command() -> None:
    assert verbs("```\nthe-loop stop\n```\nthe-loop pause") == ("pause",)
    assert verbs("~~~~ text\nthe-loop stop\n~~~\nthe-loop stop\n~~~~") == ()


def test_an_unclosed_fence_runs_to_the_end_of_the_comment() -> None:
    assert verbs("```sh\nthe-loop stop") == ()


def test_a_fence_is_closed_only_by_the_same_character() -> None:
    assert verbs("```\n~~~\nthe-loop stop\n```") == ()


def test_a_backtick_run_with_a_backtick_after_it_is_inline_code_not_a_fence() -> None:
    assert verbs("``` a ` b\nthe-loop stop") == ("stop",)


def test_lines_inside_an_html_comment_never_command() -> None:
    assert verbs("<!--\nthe-loop stop\n-->\nthe-loop pause") == ("pause",)
    assert verbs("<!-- one --> <!--\nthe-loop stop") == ()
    assert verbs("<!-- closed on its line -->\nthe-loop stop") == ("stop",)


def test_an_html_comment_opened_inside_a_quote_ends_with_the_quote() -> None:
    assert verbs("> <!-- a quoted comment\n\nthe-loop stop") == ("stop",)


def test_windows_and_old_mac_line_breaks_split_lines() -> None:
    assert verbs("hi\r\nthe-loop start\rthe-loop start") == ("start",)


def test_a_configured_prefix_replaces_the_default_and_is_matched_literally() -> None:
    bot = KeywordGrammar("loop.bot")
    assert verbs("loop.bot start", bot) == ("start",)
    assert verbs("loopxbot start", bot) == ()
    assert verbs("the-loop start", bot) == ()


@pytest.mark.parametrize("prefix", ["", "the loop", "the-loop\n", "x\x00"])
def test_a_prefix_with_space_or_control_characters_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="invalid keyword prefix"):
        KeywordGrammar(prefix)


def test_a_comment_without_keywords_scans_empty() -> None:
    assert GRAMMAR.scan("Nothing for the-loop here") == KeywordScan()
    assert commanding_lines("") == [""]


@given(
    st.sampled_from(VERBS),
    st.one_of(
        st.sampled_from([":", "-"]),
        st.characters(categories=("L", "N")),
        st.just("_"),
    ),
    st.text(max_size=20),
)
def test_a_verb_followed_by_a_word_character_colon_or_dash_never_fires(
    verb: str, follower: str, rest: str
) -> None:
    body = f"the-loop {verb}{follower}{rest}"
    assert verb not in _first_line_verbs(body)


def _first_line_verbs(body: str) -> tuple[str, ...]:
    first = body.replace("\r", "\n").split("\n", 1)[0]
    return GRAMMAR.scan(first).verbs


@given(st.text(max_size=200))
def test_any_text_quoted_line_by_line_never_commands(text: str) -> None:
    quoted = "\n".join(f"> {line}" for line in text.replace("\r", "\n").split("\n"))
    assert verbs(quoted) == ()


@given(st.text(max_size=200))
def test_any_text_inside_a_closed_fence_never_commands(text: str) -> None:
    inner = "\n".join(line for line in text.replace("\r", "\n").split("\n") if "`" not in line)
    assert verbs(f"````\n{inner}\n````") == ()


@given(st.lists(st.sampled_from(VERBS), min_size=1, max_size=6), st.text(max_size=50))
def test_the_verbs_found_are_the_distinct_verbs_written_in_order(
    written: list[str], filler: str
) -> None:
    # Starting with "x" keeps the filler from opening a fence or a quote; no "<" no comment.
    safe_filler = "x" + filler.replace("\r", " ").replace("\n", " ").replace("<", " ")
    body = "\n".join(f"{safe_filler}\nthe-loop {verb}" for verb in written)
    assert verbs(body) == tuple(dict.fromkeys(written))
