"""A plan's usage limit read as the real Claude Code says it (its screens, its hook's words
and its transcript, captured in tests/screens/claude-<version>/) and in the wordings its
earlier releases used: the reset time parsed with its zone and offset, the next such
time after the agent said it; a 429 without a reset time is no usage limit."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.helpers.world import World
from the_loop.agent.hooks import hook_settings
from the_loop.agent.limits import ROUNDING_SECONDS, read_limit
from the_loop.agent.screens import find_dialog, pattern_named
from the_loop.agent.state import AgentState, PaneView, derive
from the_loop.agent.transcript import TranscriptView, read_transcript, transcript_path
from the_loop.dispatch.settings import DispatchSettings

VERSION = (Path(__file__).parent / "agent-version.txt").read_text(encoding="utf-8").strip()
SCREENS = Path(__file__).parent / "screens" / f"claude-{VERSION}"
#: When the captures were made: 2026-12-06 18:30:56 UTC.
CAPTURED = datetime(2026, 12, 6, 18, 30, 56, tzinfo=UTC).timestamp()
BERLIN = ZoneInfo("Europe/Berlin")


def screen(name: str) -> str:
    return (SCREENS / f"{name}.txt").read_text(encoding="utf-8")


def at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.parametrize(
    ("words", "said", "expected", "zone"),
    [
        # the pinned release's words (its screens, its hooks, its transcript)
        (
            "  ⎿  You've hit your 5-hour limit · resets 8:30pm (Europe/Paris)",
            "2026-12-06T18:30:56+00:00",
            "2026-12-06T20:30:00+01:00",
            "Europe/Paris",
        ),
        (
            "You've hit your weekly limit · resets Dec 9, 1:30pm (America/New_York)",
            "2026-12-06T18:30:56+00:00",
            "2026-12-09T13:30:00-05:00",
            "America/New_York",
        ),
        (
            "You've hit your Opus limit · resets 8:49am (Pacific/Auckland)",
            "2026-12-06T18:30:56+00:00",
            "2026-12-07T08:49:00+13:00",
            "Pacific/Auckland",
        ),
        (
            "You've hit your session limit · resets 12:50am (America/Los_Angeles)",
            "2026-07-04T06:40:00+00:00",
            "2026-07-04T00:50:00-07:00",
            "America/Los_Angeles",
        ),
        (
            "You've hit your 5-hour limit · resets 7:30pm (UTC)",
            "2026-12-06T18:30:56+00:00",
            "2026-12-06T19:30:00+00:00",
            "UTC",
        ),
        # the footer of an agent that waits to go on by itself: no zone, the machine's
        (
            "⚠ Usage limit reached · limit resets 7:30pm",
            "2026-12-06T18:30:56+00:00",
            "2026-12-06T19:30:00+01:00",
            "",
        ),
        # earlier releases
        (
            "You've hit your limit · resets 3pm (Europe/Paris)",
            "2026-02-06T10:00:00+00:00",
            "2026-02-06T15:00:00+01:00",
            "Europe/Paris",
        ),
        (
            "5-hour limit reached ∙ resets 3pm",
            "2026-12-06T16:00:00+00:00",
            "2026-12-07T15:00:00+01:00",
            "",
        ),
        (
            "5-hour limit reached · resets 2pm (Pacific/Auckland) · /upgrade to Max 20x or "
            "turn on /extra-usage",
            "2025-11-24T00:30:00+00:00",
            "2025-11-24T14:00:00+13:00",
            "Pacific/Auckland",
        ),
        (
            "Claude usage limit reached. Your limit will reset at 3pm (Europe/Paris).\n"
            "/upgrade to increase your usage limit.",
            "2025-10-09T08:00:00+00:00",
            "2025-10-09T15:00:00+02:00",
            "Europe/Paris",
        ),
        (
            "Claude usage limit reached. Your limit will reset at 12am.",
            "2025-07-15T13:00:00+00:00",
            "2025-07-16T00:00:00+02:00",
            "",
        ),
        (
            "weekly limit reached ∙ resets Oct 9, 10am (America/Santiago)",
            "2025-10-06T12:00:00+00:00",
            "2025-10-09T10:00:00-03:00",
            "America/Santiago",
        ),
        # a time said past its minute is still this one's (the agent rounds down)
        (
            "You've hit your session limit · resets 3:20am (Asia/Calcutta)",
            "2026-06-16T21:50:40+00:00",
            "2026-06-17T03:20:00+05:30",
            "Asia/Calcutta",
        ),
    ],
)
def test_each_wording_of_a_usage_limit_gives_its_reset_in_its_zone(
    words: str, said: str, expected: str, zone: str
) -> None:
    limit = read_limit(words, said_at=at(said), local=BERLIN)
    assert limit is not None, words
    assert limit.iso(BERLIN) == expected
    assert limit.resets_at == at(expected)
    assert (limit.zone, limit.exact) == (zone, False)
    assert limit.over_at == limit.resets_at + ROUNDING_SECONDS


def test_a_reset_given_in_seconds_is_exact() -> None:
    limit = read_limit("API Error: Claude AI usage limit reached|1762952400", said_at=0)
    assert limit is not None and limit.exact and limit.resets_at == 1762952400.0
    assert limit.over_at == limit.resets_at


@pytest.mark.parametrize(
    "words",
    [
        "API Error: Request rejected (429) · Number of requests has exceeded your rate limit.",
        "API Error: Request rejected (429) · This request would exceed your account's rate "
        "limit. Please try again later.",
        "Server is temporarily limiting requests (not your usage limit)",
        "You've hit your monthly spend limit. See Usage in Settings",
        "/upgrade to increase your usage limit.",
        "rate_limit",
        "✻ API error · retrying in 3s · attempt 1/10",
    ],
)
def test_a_limit_without_a_reset_time_is_no_usage_limit(words: str) -> None:
    assert read_limit(words, said_at=CAPTURED) is None


def test_the_next_such_time_after_the_agent_said_it() -> None:
    just_before = at("2026-12-06T14:59:00+01:00")
    today = read_limit("5-hour limit reached ∙ resets 3pm (Europe/Paris)", said_at=just_before)
    assert today is not None and today.iso() == "2026-12-06T15:00:00+01:00"
    after = at("2026-12-06T15:02:00+01:00")
    tomorrow = read_limit("5-hour limit reached ∙ resets 3pm (Europe/Paris)", said_at=after)
    assert tomorrow is not None and tomorrow.iso() == "2026-12-07T15:00:00+01:00"
    new_year = read_limit(
        "You've hit your weekly limit · resets Jan 2, 9am (UTC)",
        said_at=at("2026-12-30T12:00:00+00:00"),
    )
    assert new_year is not None and new_year.iso() == "2027-01-02T09:00:00+00:00"
    summer = read_limit(
        "You've hit your weekly limit · resets Mar 30, 9am (Europe/Paris)",
        said_at=at("2026-03-27T12:00:00+00:00"),
    )
    assert summer is not None and summer.iso() == "2026-03-30T09:00:00+02:00", "after DST"


def test_the_limit_dialog_of_the_real_agent_is_found_and_its_reset_read() -> None:
    for name in ("limit-dialog", "limit-weekly"):
        found = find_dialog(screen(name), "claude")
        assert found is not None and found.pattern.name == "claude-limit", name
        assert found.pattern.blocked_on == "limit"
        assert "Stop and wait for limit to reset" in found.text
    assert pattern_named("claude-limit").answers["wait"].keys == ("1",)
    for name in ("limit-waiting", "limit-auto", "rate-limit-429"):
        assert find_dialog(screen(name), "claude") is None, name


STOPPED = [
    {"t": CAPTURED - 1, "event": "SessionStart"},
    {"t": CAPTURED - 0.5, "event": "UserPromptSubmit", "prompt": "hello there"},
    {
        "t": CAPTURED,
        "event": "StopFailure",
        "error": "rate_limit",
        "said": "You've hit your 5-hour limit · resets 8:30pm (Europe/Paris)",
    },
]


def test_a_turn_stopped_at_a_usage_limit_is_blocked_until_it_resets() -> None:
    reset = at("2026-12-06T20:30:00+01:00")
    for name in ("limit-dialog", "limit-waiting"):
        pane = PaneView(False, activity=CAPTURED, screen=screen(name))
        state = derive("claude", STOPPED, pane, now=CAPTURED + 5, local=BERLIN)
        assert state is not None
        assert (state.state, state.blocked_on, state.resets_at) == ("blocked", "limit", reset)
        assert state.episode == f"limit@{int(reset // 60)}", "one episode, dialog or not"
        assert state.to_dict()["resetsAt"] == "2026-12-06T20:30:00+01:00"
        assert state.prompt.startswith("You've hit your 5-hour limit · resets 8:30pm")
        assert not state.takes_a_paste
    waiting = PaneView(False, activity=CAPTURED, screen=screen("limit-waiting"))
    still = derive("claude", STOPPED, waiting, now=reset + 30, local=BERLIN)
    assert still is not None and still.state == "blocked", "said to the minute: a minute more"
    over = derive("claude", STOPPED, waiting, now=reset + 61, local=BERLIN)
    assert over is not None and (over.state, over.resets_at) == ("idle", reset)
    assert over.takes_a_paste and over.to_dict()["resetsAt"] is None
    noticed = [*STOPPED, {"t": CAPTURED + 60, "event": "Notification", "type": "idle_prompt"}]
    waited = derive("claude", noticed, waiting, now=CAPTURED + 61, local=BERLIN)
    assert waited is not None and waited.blocked_on == "limit", "a notice ends no limit"
    later = [*STOPPED, {"t": reset + 90, "event": "UserPromptSubmit", "prompt": "go on"}]
    going = derive("claude", later, waiting, now=reset + 91, local=BERLIN)
    assert going is not None and (going.state, going.resets_at) == ("working", 0.0)
    dialog = PaneView(False, activity=CAPTURED, screen=screen("limit-dialog"))
    asked = derive("claude", STOPPED, dialog, now=reset + 3600, local=BERLIN)
    assert asked is not None and asked.blocked_on == "limit", "its dialog waits for a person"


def test_an_agent_that_will_go_on_by_itself_stays_blocked_until_it_does() -> None:
    events = [
        *STOPPED[:2],
        {**STOPPED[2], "said": "You've hit your 5-hour limit · resets 7:30pm (UTC)"},
    ]
    pane = PaneView(False, activity=CAPTURED, screen=screen("limit-auto"))
    reset = at("2026-12-06T19:30:00+00:00")
    state = derive("claude", events, pane, now=reset + 600, local=BERLIN)
    assert state is not None and (state.state, state.blocked_on) == ("blocked", "limit")
    assert state.self_resuming and state.resets_at == reset


def test_the_transcript_gives_the_reset_to_the_second(tmp_path: Path) -> None:
    line = (SCREENS / "limit-transcript.jsonl").read_text(encoding="utf-8")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type": "user", "message": {"content": "hello"}}\n' + line)
    events = [{**e, "transcript": str(transcript)} for e in STOPPED]
    assert transcript_path(events) == transcript
    view = read_transcript(transcript, local=BERLIN)
    assert view is not None and view.size == transcript.stat().st_size
    assert view.limit is not None and view.limit.exact
    assert (view.limit.resets_at, view.limit.zone) == (1796585455.0, "Europe/Paris")
    pane = PaneView(False, activity=CAPTURED, screen=screen("limit-waiting"))
    state = derive("claude", events, pane, now=1796585455.5, transcript=view, local=BERLIN)
    assert state is not None and state.state == "idle", "exact: no minute's slack"
    assert state.resets_at == 1796585455.0
    transcript.write_text(line + '{"type": "user", "message": {"content": "go on"}}\n')
    later = read_transcript(transcript)
    assert later == TranscriptView(transcript.stat().st_size, None), "a later message: history"
    assert read_transcript(tmp_path / "none.jsonl") is None


def test_a_429_without_a_reset_time_ends_the_turn_and_is_no_limit() -> None:
    events = [
        *STOPPED[:2],
        {
            "t": CAPTURED,
            "event": "StopFailure",
            "error": "rate_limit",
            "said": "API Error: Request rejected (429) · Number of requests has exceeded your "
            "rate limit.",
        },
    ]
    pane = PaneView(False, activity=CAPTURED, screen=screen("rate-limit-429"))
    state = derive("claude", events, pane, now=CAPTURED + 1, local=BERLIN)
    assert state is not None and (state.state, state.resets_at) == ("idle", 0.0)
    assert state.takes_a_paste, "the next comment goes in at once: no 15-minute wait"


def test_a_limit_line_left_on_the_screen_by_an_earlier_turn_blocks_nothing() -> None:
    after = [*STOPPED, {"t": CAPTURED + 9000, "event": "UserPromptSubmit", "prompt": "go"}]
    after.append({"t": CAPTURED + 9001, "event": "Stop"})
    pane = PaneView(False, activity=CAPTURED + 9001, screen=screen("limit-waiting"))
    state = derive("claude", after, pane, now=CAPTURED + 9002, local=BERLIN)
    assert state is not None and state.state == "idle" and state.resets_at == 0.0
    assert derive("command", [], pane, now=CAPTURED + 9010) == AgentState(
        "idle", since=CAPTURED + 9001
    ), "another harness never reads Claude Code's words"


def test_the_agents_own_continue_is_turned_off_only_where_the_loop_continues_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "agents" / "item.jsonl"
    resumed = json.loads(hook_settings("/usr/bin/python3", log, continue_at_limit=False))
    assert resumed["autoContinueAtUsageLimit"] is False and "Stop" in resumed["hooks"]
    left = json.loads(hook_settings("/usr/bin/python3", log))
    assert "autoContinueAtUsageLimit" not in left, "the operator's own settings decide"
    world = World(tmp_path / "world", source="test")
    world.configure({"routing": {"resumeAfterLimit": True}})
    assert DispatchSettings.from_config(world.context.config).resume_after_limit
    world.configure({})
    assert not DispatchSettings.from_config(world.context.config).resume_after_limit
