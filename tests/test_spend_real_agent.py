"""The spend meter against the real Claude Code (the pinned version ``make agent``
installs), offline against the loopback fake of the Messages API, whose every answer
carries a known usage (input, output, cache reads, 5-minute and 1-hour cache writes) on
a priced model.

One exchange, run twice: in a tmux pane as the-loop runs the agent, and in print mode
(``claude -p --output-format json``). It holds a message of three content blocks (a
text and two ``Bash`` calls; Claude Code writes it as three transcript lines), a
message of two (a text and an ``Agent`` call), a subagent run in
the background through the ``Agent`` tool (its transcript beside the session's), and
the answers to the tool's launch and to the subagent's notice that it finished.
The meter's dollars equal the shipped price table applied to the fake's ground truth,
each message once; in print mode they agree with Claude Code's own ``total_cost_usd``
for models of each price tier: the table and Claude Code's own prices agree.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import (
    FakeAnthropic,
    Reply,
    SentMessage,
    after_tool_result,
    bash,
    is_turn,
    running_fake_anthropic,
    text,
    tool_use,
    user_says,
)
from tests.helpers.claude_agent import (
    AgentHome,
    AgentPane,
    agent_env,
    claude_argv,
    git_repo,
    hook_logging_settings,
    hook_names,
    make_agent_home,
)
from tests.helpers.tmuxsock import wait_until
from the_loop.spend.meter import MeterResult, MeterState, PriceTable, meter, transcript_files

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5-20250929"
PROMPT = "SPEND-PROBE: run the check, then have a helper count the files."
SUBAGENT_PROMPT = "SUBAGENT-PROBE: count the files in this repository."
SUBAGENT_ANSWER = "There is one file: README.md."
LAST_ANSWER = "Noted: the helper found one file."
#: The messages of the exchange: two in the subagent's, three more in the session's.
MESSAGES = 5
ALLOWED = ("--allowedTools", "Bash,Agent")
#: Claude Code's own figure and the meter's may differ by this much (issue 29).
AGREEMENT = 0.02


def usage(input_tokens: int, output: int, read: int, five: int, hour: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output,
        "cache_read_tokens": read,
        "cache_write_5m_tokens": five,
        "cache_write_1h_tokens": hour,
    }


def script_exchange(fake: FakeAnthropic) -> None:
    """The exchange's answers, each with a usage of its own (so a message counted twice,
    or one missed, shows in the sum), on the model each request asked for, as the API
    answers. The last one's prompt is over 100,000 tokens: the long-prompt tier."""
    checks = (bash("ls > /dev/null", "List the files"), bash("true", "Check the shell"))
    blocks = ({"type": "text", "text": "I will run two checks first."},)
    fake.script(
        Reply(
            blocks=blocks + tuple(reply.blocks[0] for reply in checks),
            stop_reason="tool_use",
            **usage(1_200, 310, 14_000, 2_100, 3_300),
        ),
        when=user_says("SPEND-PROBE"),
    )
    fake.script(
        tool_use(
            "Agent",
            {
                "description": "Count the files",
                "prompt": SUBAGENT_PROMPT,
                "subagent_type": "general-purpose",
            },
            preface="Now a helper counts them.",
            **usage(900, 420, 17_500, 600, 0),
        ),
        when=after_tool_result(),
    )
    fake.script(
        text(SUBAGENT_ANSWER, **usage(5_300, 95, 0, 0, 4_800)),
        when=user_says("SUBAGENT-PROBE"),
    )
    # The subagent runs in the background: the tool's result says it was launched, and a
    # notice with its answer comes as a turn of its own once it is done.
    fake.script(
        text(LAST_ANSWER, **usage(1_500, 60, 123_000, 0, 0)),
        when=lambda request: is_turn(request) and SUBAGENT_ANSWER in request.last_user_text(),
    )
    fake.script(
        text("The helper is counting.", **usage(700, 160, 21_000, 250, 150)),
        when=after_tool_result(),
    )


def ground_truth_usd(sent: list[SentMessage], prices: PriceTable) -> float:
    """The price table applied to every message the fake sent, each once, straight from
    the fake's numbers (none of the meter's code); a prompt over a model's long-prompt
    threshold pays that tier on every token of its request."""
    total = 0.0
    for message in sent:
        usage_of = message.usage
        split = usage_of.get("cache_creation") or {}
        prompt = (
            usage_of["input_tokens"]
            + usage_of["cache_read_input_tokens"]
            + usage_of["cache_creation_input_tokens"]
        )
        rates = prices.models[prices.prefix_of(message.model)].for_prompt(prompt)
        total += (
            usage_of["input_tokens"] * rates.input
            + usage_of["output_tokens"] * rates.output
            + usage_of["cache_read_input_tokens"] * rates.cache_read
            + split.get("ephemeral_5m_input_tokens", 0) * rates.cache_write_5m
            + split.get("ephemeral_1h_input_tokens", 0) * rates.cache_write_1h
        ) / 1_000_000
    return total


def turns_sent(fake: FakeAnthropic) -> list[SentMessage]:
    """The messages the fake sent to the conversation's requests (the session's and its
    subagent's); a side request (no tools offered) never reaches a transcript."""
    turns = {request.index for request in fake.requests if is_turn(request)}
    return [message for message in fake.sent if message.request_index in turns]


@dataclasses.dataclass
class Run:
    """One run of the exchange: its fake, HOME, repository and session id."""

    fake: FakeAnthropic
    home: AgentHome
    repo: Path
    session_id: str

    def files(self) -> list[Path]:
        return transcript_files(self.home.root, str(self.repo), self.session_id)

    def metered(self, prices: PriceTable) -> MeterResult:
        return meter(self.files(), MeterState(), prices)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    repo = git_repo(tmp_path / "repo")
    home = make_agent_home(tmp_path / "agent-home", trusted=[repo])
    with running_fake_anthropic() as fake:
        yield Run(fake, home, repo, str(uuid.uuid4()))
        elsewhere = [f"{r.method} {r.path}" for r in fake.requests if not r.path.startswith("/")]
        assert elsewhere == [], f"the agent asked for the internet: {elsewhere}"


def assert_each_message_once(done: Run, prices: PriceTable) -> MeterResult:
    """The meter equals the ground truth; the exchange held what it is meant to prove."""
    assert wait_until(lambda: len(turns_sent(done.fake)) >= MESSAGES, 30)
    sent = turns_sent(done.fake)
    assert len(sent) == MESSAGES, [m.usage for m in done.fake.sent]
    expected = ground_truth_usd(sent, prices)
    assert wait_until(lambda: done.metered(prices).spend.usd >= expected * (1 - 1e-9), 15)
    result = done.metered(prices)
    main, *subagents = done.files()
    assert len(subagents) == 1 and subagents[0].parent.name == "subagents"
    assert result.spend.usd == pytest.approx(expected, rel=1e-9)
    assert result.spend.tokens.input == sum(m.usage["input_tokens"] for m in sent)
    assert result.spend.tokens.output == sum(m.usage["output_tokens"] for m in sent)
    assert result.unknown_models == ()
    assert sorted(block_lines(main).values())[-2:] == [2, 3], "not a message of 2 and of 3 blocks"
    return result


def block_lines(transcript: Path) -> dict[str, int]:
    """How many lines each assistant message has in ``transcript``, by message id."""
    lines: dict[str, int] = {}
    for raw in transcript.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        if entry.get("type") == "assistant":
            message_id = entry["message"]["id"]
            lines[message_id] = lines.get(message_id, 0) + 1
    return lines


def test_the_meter_counts_each_message_of_a_live_session_once_at_the_tables_prices(
    run: Run, tmp_path: Path, tmux_socket: str
) -> None:
    hook_log = tmp_path / "hooks.jsonl"
    settings = tmp_path / "hook-settings.json"
    settings.write_text(json.dumps(hook_logging_settings(hook_log)), encoding="utf-8")
    pane = AgentPane(tmux_socket)
    script_exchange(run.fake)
    argv = claude_argv("--model", MODEL, "--session-id", run.session_id, *ALLOWED, "--", PROMPT)
    argv[1:1] = ["--settings", str(settings)]

    pane.start(argv, run.repo, agent_env(run.home, run.fake.url))

    pane.wait_for(LAST_ANSWER, timeout=60)
    # A wait, not a speed: under the whole suite's load the second Stop (the background
    # subagent's turn ending) once came after 30 s.
    assert wait_until(lambda: hook_names(hook_log).count("Stop") >= 2, timeout=90), " ".join(
        hook_names(hook_log)  # whole, as a string: a list's repr is cut short in the report
    )
    assert run.fake.pending() == 0
    assert_each_message_once(run, PriceTable.load())


@pytest.mark.parametrize(
    "model",
    [
        MODEL,
        "claude-haiku-4-5-20251001",
        "claude-haiku-5-5",
        "claude-opus-4-5-20251101",
        "claude-opus-4-1-20250805",
        "claude-fable-5-1",
    ],
)
def test_the_meter_agrees_with_claude_codes_own_cost_in_print_mode(run: Run, model: str) -> None:
    script_exchange(run.fake)
    argv = claude_argv(
        "-p", "--output-format", "json", "--model", model, "--session-id", run.session_id
    )
    command = ["env", "-i", *(f"{k}={v}" for k, v in agent_env(run.home, run.fake.url).items())]

    done = subprocess.run(
        [*command, *argv, *ALLOWED, "--", PROMPT],
        cwd=run.repo,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    reported = json.loads(done.stdout)
    assert reported["is_error"] is False
    assert run.fake.pending() == 0
    result = assert_each_message_once(run, PriceTable.load())
    own = float(reported["total_cost_usd"])
    assert abs(result.spend.usd - own) <= AGREEMENT * own, (result.spend.usd, own)
    assert result.reported_usd == pytest.approx(own)
