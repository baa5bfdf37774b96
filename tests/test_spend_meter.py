"""The spend meter over synthetic Claude Code transcripts: each message once, the largest
usage its lines show, only what was appended read, subagents included, unknown models
priced as the dearest and said, files replaced or shrunk read again without counting
twice, and a state that survives JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.transcripts import (
    SESSION_ID,
    append,
    assistant_lines,
    one_turn,
    usage,
    user_line,
)
from the_loop.spend.meter import (
    TAIL_BYTES,
    MeterState,
    PriceTable,
    Spend,
    Tokens,
    meter,
    transcript_files,
)
from the_loop.spend.state import RECENT_KEYS
from the_loop.spend.transcripts import project_dir_name

PRICES = PriceTable.from_mapping(
    {
        "date": "2026-12-06",
        "source": "https://example.invalid/pricing",
        "unit": "USD per million tokens",
        "models": {
            "claude-cheap": {
                "input": 1,
                "output": 10,
                "cacheWrite5m": 2,
                "cacheWrite1h": 4,
                "cacheRead": 0.5,
            },
            "claude-dear": {
                "input": 20,
                "output": 100,
                "cacheWrite5m": 25,
                "cacheWrite1h": 40,
                "cacheRead": 2,
            },
            "claude-tiered": {
                "input": 1,
                "output": 1,
                "cacheWrite5m": 1,
                "cacheWrite1h": 1,
                "cacheRead": 1,
                "longPrompt": {
                    "abovePromptTokens": 1000,
                    "input": 5,
                    "output": 5,
                    "cacheWrite5m": 5,
                    "cacheWrite1h": 5,
                    "cacheRead": 5,
                },
            },
        },
    }
)
CHEAP = "claude-cheap-20261201"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return tmp_path / "t.jsonl"


def usd(input_tokens: int = 0, output: int = 0, read: int = 0, w5: int = 0, w1: int = 0) -> float:
    """What ``claude-cheap`` charges for these tokens."""
    return (input_tokens * 1 + output * 10 + read * 0.5 + w5 * 2 + w1 * 4) / 1_000_000


def test_a_message_of_three_blocks_is_counted_once(transcript: Path) -> None:
    append(transcript, assistant_lines(usage(100, 20, 300, 40, 50), blocks=3, model=CHEAP))

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend.tokens == Tokens(input=100, output=20, cache_read=300, cache_write=90)
    assert result.spend.usd == pytest.approx(usd(100, 20, 300, 40, 50))


def test_two_messages_with_the_same_id_but_other_requests_are_two(transcript: Path) -> None:
    append(transcript, assistant_lines(usage(100, 20), model=CHEAP, message_id="msg_1"))
    append(transcript, assistant_lines(usage(100, 20), model=CHEAP, message_id="msg_1"))

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend.tokens.input == 200


def test_the_largest_usage_of_a_message_is_taken(transcript: Path) -> None:
    lines = assistant_lines(
        {},
        model=CHEAP,
        usages=[usage(100, 1, 300), usage(100, 80, 300), usage(100, 35, 300), usage(100, 60, 300)],
    )
    append(transcript, lines)

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend.tokens == Tokens(input=100, output=80, cache_read=300)
    assert result.spend.usd == pytest.approx(usd(100, 80, 300))


def test_a_larger_usage_of_a_message_in_a_later_read_adds_only_the_difference(
    transcript: Path,
) -> None:
    first, later = assistant_lines(
        {}, model=CHEAP, usages=[usage(100, 1, 300, 10), usage(100, 80, 300, 10)]
    )
    append(transcript, [first])
    state = meter([transcript], MeterState(), PRICES).state

    append(transcript, [later])
    result = meter([transcript], state, PRICES)

    assert result.spend.tokens == Tokens(input=100, output=80, cache_read=300, cache_write=10)


def test_two_appends_are_read_across_calls_each_read_taking_only_what_was_appended(
    transcript: Path,
) -> None:
    append(transcript, [user_line(), *assistant_lines(usage(10, 5), model=CHEAP, blocks=2)])
    first = meter([transcript], MeterState(), PRICES)

    appended = append(transcript, [user_line(), *assistant_lines(usage(7, 3), model=CHEAP)])
    second = meter([transcript], first.state, PRICES)

    assert first.spend.tokens == Tokens(input=10, output=5)
    assert second.spend.tokens == Tokens(input=17, output=8)
    assert second.spend.usd == pytest.approx(usd(17, 8))
    assert appended <= second.bytes_read <= appended + 2 * TAIL_BYTES
    assert meter([transcript], second.state, PRICES).spend == second.spend


def test_a_read_of_one_appended_line_reads_that_line_not_the_file(transcript: Path) -> None:
    padding = "x" * 4000
    for _ in range(300):
        append(transcript, assistant_lines(usage(1, 1), model=CHEAP, padding=padding))
    state = meter([transcript], MeterState(), PRICES).state

    appended = append(transcript, assistant_lines(usage(1, 1), model=CHEAP))
    result = meter([transcript], state, PRICES)

    assert transcript.stat().st_size > 1_000_000
    assert result.bytes_read <= appended + 2 * TAIL_BYTES
    assert result.spend.tokens.input == 301


def test_a_last_line_without_its_newline_waits_for_the_next_read(transcript: Path) -> None:
    [line] = assistant_lines(usage(40, 4), model=CHEAP)
    append(transcript, assistant_lines(usage(1, 1), model=CHEAP))
    half = len(line) // 2
    append(transcript, [line[:half]], end="")
    before = meter([transcript], MeterState(), PRICES)

    append(transcript, [line[half:]])
    after = meter([transcript], before.state, PRICES)

    assert before.spend.tokens == Tokens(input=1, output=1)
    assert after.spend.tokens == Tokens(input=41, output=5)


def test_a_complete_last_line_without_a_newline_is_not_counted_yet(transcript: Path) -> None:
    append(transcript, assistant_lines(usage(40, 4), model=CHEAP), end="")

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend.tokens == Tokens()
    assert result.state.files[str(transcript)].offset == 0


def test_the_subagents_transcripts_are_found_and_counted(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", "/work/my app.v2"
    project = home / ".claude" / "projects" / "-work-my-app-v2"
    main = project / f"{SESSION_ID}.jsonl"
    agent = project / SESSION_ID / "subagents" / "agent-a1b2c3.jsonl"
    nested = project / SESSION_ID / "subagents" / "workflows" / "agent-d4e5.jsonl"
    append(main, assistant_lines(usage(10, 1), model=CHEAP))
    append(agent, assistant_lines(usage(20, 2), model=CHEAP, blocks=2))
    append(nested, assistant_lines(usage(30, 3), model=CHEAP))
    (project / SESSION_ID / "subagents" / "agent-a1b2c3.meta.json").write_text("{}")
    other = project / "0c7e1f3a-other-session.jsonl"
    append(other, assistant_lines(usage(1000, 1000), model=CHEAP))

    files = transcript_files(home, cwd, SESSION_ID)
    result = meter(files, MeterState(), PRICES)

    assert project_dir_name(cwd) == "-work-my-app-v2"
    assert files == [main, agent, nested]
    assert result.spend.tokens == Tokens(input=60, output=6)


def test_the_main_transcript_is_named_before_it_exists_and_metering_it_counts_nothing(
    tmp_path: Path,
) -> None:
    files = transcript_files(tmp_path, "/w", SESSION_ID)

    result = meter(files, MeterState(), PRICES)

    assert files == [tmp_path / ".claude" / "projects" / "-w" / f"{SESSION_ID}.jsonl"]
    assert result.spend == Spend()
    assert result.bytes_read == 0


def test_a_session_id_that_is_not_a_plain_name_has_no_transcripts(tmp_path: Path) -> None:
    assert transcript_files(tmp_path, "/w", "../../etc/passwd") == []
    assert transcript_files(tmp_path, "/w", "") == []


def test_links_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    append(outside, assistant_lines(usage(500, 5), model=CHEAP))
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-w"
    subagents = project / SESSION_ID / "subagents"
    subagents.mkdir(parents=True)
    (project / f"{SESSION_ID}.jsonl").symlink_to(outside)
    (subagents / "agent-linked.jsonl").symlink_to(outside)
    elsewhere = tmp_path / "elsewhere"
    append(elsewhere / "agent-far.jsonl", assistant_lines(usage(700, 7), model=CHEAP))
    (subagents / "linked-dir").symlink_to(elsewhere)

    files = transcript_files(home, "/w", SESSION_ID)
    result = meter(files, MeterState(), PRICES)

    assert files == [project / f"{SESSION_ID}.jsonl"]
    assert result.spend.tokens == Tokens()


def test_an_unknown_model_is_priced_as_the_dearest_and_said(transcript: Path) -> None:
    append(transcript, assistant_lines(usage(1000, 100), model="claude-future-9"))
    append(transcript, assistant_lines(usage(1000, 100), model=CHEAP))

    result = meter([transcript], MeterState(), PRICES)

    dearest = (1000 * 20 + 100 * 100) / 1_000_000
    assert result.unknown_models == ("claude-future-9",)
    assert result.spend.usd == pytest.approx(dearest + usd(1000, 100))


def test_synthetic_error_and_empty_lines_count_nothing(transcript: Path) -> None:
    append(transcript, assistant_lines(usage(100, 10), model="<synthetic>"))
    append(transcript, assistant_lines(usage(0, 0), model=CHEAP))
    [error] = assistant_lines(usage(100, 10), model=CHEAP)
    append(transcript, [json.dumps({**json.loads(error), "isApiErrorMessage": True})])
    append(transcript, ['{"type":"assistant","message":{"usage":', "not json", "", "[1, 2]"])
    append(transcript, [user_line('He said "usage" twice: "usage".')])

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend == Spend()
    assert result.unknown_models == ()


def test_a_shrunk_file_is_read_again_without_counting_its_old_messages_twice(
    transcript: Path,
) -> None:
    kept = assistant_lines(usage(10, 1), model=CHEAP)
    append(transcript, [*kept, *assistant_lines(usage(20, 2), model=CHEAP), user_line("x" * 500)])
    state = meter([transcript], MeterState(), PRICES).state

    with transcript.open("r+b") as handle:
        handle.truncate(0)
    append(transcript, [*kept, *assistant_lines(usage(300, 3), model=CHEAP)])
    result = meter([transcript], state, PRICES)

    assert result.spend.tokens == Tokens(input=330, output=6)


def test_a_replaced_file_is_read_again_from_its_start(transcript: Path) -> None:
    old = assistant_lines(usage(10, 1), model=CHEAP)
    append(transcript, old)
    state = meter([transcript], MeterState(), PRICES).state

    replacement = transcript.with_name("new.jsonl")
    append(replacement, [*assistant_lines(usage(40, 4), model=CHEAP), *old, user_line("y" * 900)])
    os.replace(replacement, transcript)
    result = meter([transcript], state, PRICES)

    assert result.spend.tokens == Tokens(input=50, output=5)


def test_a_file_rewritten_in_place_to_a_larger_size_is_read_again(transcript: Path) -> None:
    old = assistant_lines(usage(10, 1), model=CHEAP)
    append(transcript, old)
    state = meter([transcript], MeterState(), PRICES).state

    rewritten = [*assistant_lines(usage(40, 4), model=CHEAP), *old, user_line("z" * 900)]
    transcript.write_text("".join(f"{line}\n" for line in rewritten), encoding="utf-8")
    result = meter([transcript], state, PRICES)

    assert result.spend.tokens == Tokens(input=50, output=5)


def test_the_state_survives_json_and_the_next_read_goes_on_from_it(transcript: Path) -> None:
    append(transcript, one_turn())
    first = meter([transcript], MeterState(), PRICES)
    stored = json.loads(json.dumps(first.state.to_dict()))

    restored = MeterState.from_dict(stored)
    appended = append(transcript, assistant_lines(usage(1, 1), model=CHEAP))
    second = meter([transcript], restored, PRICES)

    assert restored == first.state
    assert second.spend.tokens == first.spend.tokens + Tokens(input=1, output=1)
    assert second.bytes_read <= appended + 2 * TAIL_BYTES


@pytest.mark.parametrize(
    "damaged",
    [
        None,
        [],
        "state",
        {},
        {"version": 99, "files": {}, "recent": [], "totals": []},
        {"version": 1, "files": {"/t": [1, 2]}, "recent": [], "totals": []},
        {"version": 1, "files": {}, "recent": [["k", [1, 2, 3]]], "totals": []},
        {"version": 1, "files": {}, "recent": [], "totals": [["m", "no", [0, 0, 0, 0, 0]]]},
        {"version": 1, "files": {"/t": [-1, 0, 0, ""]}, "recent": [], "totals": []},
    ],
)
def test_a_bad_or_missing_state_reads_as_a_fresh_one(damaged: object) -> None:
    assert MeterState.from_dict(damaged) == MeterState()


def test_a_fresh_state_from_a_damaged_one_counts_everything_once_again(transcript: Path) -> None:
    append(transcript, one_turn())
    counted = meter([transcript], MeterState(), PRICES).spend

    again = meter([transcript], MeterState.from_dict({"version": "broken"}), PRICES).spend

    assert again == counted


def test_the_state_keeps_a_bounded_number_of_messages(transcript: Path) -> None:
    for _ in range(RECENT_KEYS * 3):
        append(transcript, assistant_lines(usage(1, 1), model=CHEAP))

    result = meter([transcript], MeterState(), PRICES)

    assert result.spend.tokens.input == RECENT_KEYS * 3
    assert len(result.state.recent) == RECENT_KEYS
    assert len(json.dumps(result.state.to_dict())) < 40 * RECENT_KEYS + 1000


def test_a_request_over_the_long_prompt_threshold_pays_the_long_prompt_tier(
    transcript: Path,
) -> None:
    append(transcript, assistant_lines(usage(100, 10, 800, 100), model="claude-tiered"))
    append(transcript, assistant_lines(usage(100, 10, 800, 50, 51), model="claude-tiered"))

    result = meter([transcript], MeterState(), PRICES)

    short = 100 + 10 + 800 + 100
    long = (100 + 10 + 800 + 101) * 5
    assert result.spend.usd == pytest.approx((short + long) / 1_000_000)


def test_the_running_cost_claude_code_writes_is_reported(transcript: Path) -> None:
    cost = {"type": "cost-state", "sessionId": SESSION_ID, "totalCostUSD": 0.25}
    append(transcript, [json.dumps(cost), json.dumps({**cost, "totalCostUSD": 0.125})])

    result = meter([transcript], MeterState(), PRICES)

    assert result.reported_usd == 0.25
    assert MeterState.from_dict(result.state.to_dict()).reported_usd == 0.25


def test_spend_is_exactly_its_published_object_and_adds_up() -> None:
    one = Spend(1.25, 2, 0.5, Tokens(1, 2, 3, 4, cache_write_1h=3))
    two = Spend(0.5, 1, 0.25, Tokens(10, 20, 30, 40))

    total = one + two

    assert total.to_dict() == {
        "usd": 1.75,
        "turns": 3,
        "hours": 0.75,
        "tokens": {"input": 11, "output": 22, "cacheRead": 33, "cacheWrite": 44},
    }
    assert Spend.from_dict(total.to_dict()) == total
    assert total.tokens.cache_write_1h == 3


@pytest.mark.parametrize(
    "damaged",
    [None, [], {"usd": "1"}, {"usd": -1, "turns": 1.5, "hours": float("nan"), "tokens": 3}],
)
def test_a_damaged_spend_reads_as_zero_where_it_is_damaged(damaged: object) -> None:
    assert Spend.from_dict(damaged) == Spend()


def test_an_agent_with_its_own_config_dir_keeps_its_transcripts_there(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere"
    files = transcript_files(tmp_path / "home", "/work/app", "s-1", config_dir=config)
    assert files == [config / "projects" / "-work-app" / "s-1.jsonl"]
    default = transcript_files(tmp_path / "home", "/work/app", "s-1")
    assert default == [tmp_path / "home" / ".claude" / "projects" / "-work-app" / "s-1.jsonl"]
