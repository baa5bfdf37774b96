"""A work item's budget over the intake's seam (issue 29): the agent metered from its
transcript and its hook log, a limit reached mid-turn interrupts the turn (Escape, never
a kill), holds the comments in order and is said once; a stranger's raise commands
nothing; an authorized ``budget +N`` delivers the held comments once, in order. Real
tmux, real git, a stand-in under the ``claude`` harness's name whose hooks and
transcript the test writes, as Claude Code would."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_intake_seam import ITEM, T0, HookedWorld, Known, comment, started
from the_loop.adapters.actions import running_sessions
from the_loop.commands.stores import open_dispatcher
from the_loop.intake.budget_rule import Limits
from the_loop.intake.drain import drain
from the_loop.intake.intake import Intake
from the_loop.intake.watched import ListedNumbers
from the_loop.portable.poll import PollState
from the_loop.spend.transcripts import transcript_files

MODEL = "claude-sonnet-4-5"  # $3 in, $15 out per million tokens
EXCEEDED = "<!-- the-loop:budget-exceeded"
WARNING = "<!-- the-loop:budget-warning"
RAISED = "<!-- the-loop:budget-raised"


class BudgetWorld(HookedWorld):
    """The hooked stand-in with a budget of ``limits`` for every item."""

    limits = Limits(usd=0.05)
    messages = 0

    def configure(self, document: Mapping[str, Any]) -> None:
        """The config with ``routing.budget.usd`` too: what ``sessions list`` reads."""
        routing = {**document.get("routing", {}), "budget": {"usd": self.limits.usd}}
        super().configure({**document, "routing": routing})

    def intake(self) -> Intake:
        made = super().intake()
        made.settings = _with_budget(made, self.limits)
        return made

    def transcript(self) -> Path:
        found = self.registry.find_by_work_item(ITEM)
        assert found is not None
        home = Path(os.environ["HOME"])
        path = transcript_files(home, found.cwd, found.harness_session_id)
        if path:
            return path[0]
        project = home / ".claude" / "projects"
        name = "".join(c if c.isalnum() else "-" for c in found.cwd)
        return project / name / f"{found.harness_session_id}.jsonl"

    def assistant(self, output_tokens: int, *, blocks: int = 1) -> None:
        """One assistant message as Claude Code writes it: a line per content block,
        each with the message's usage."""
        self.messages += 1
        path = self.transcript()
        path.parent.mkdir(parents=True, exist_ok=True)
        usage = {"input_tokens": 1000, "output_tokens": output_tokens}
        message = {"id": f"msg_{self.messages}", "model": MODEL, "usage": usage}
        with path.open("a", encoding="utf-8") as out:
            for block in range(blocks):
                line = {
                    "type": "assistant",
                    "requestId": f"req_{self.messages}",
                    "message": {**message, "content": [{"type": "text", "text": f"b{block}"}]},
                }
                out.write(json.dumps(line) + "\n")

    def spend(self) -> dict[str, Any]:
        poll = self.stores.store.section(ITEM, "poll") or {}
        return dict(poll.get("spend", {}).get("total", {}))

    def tmux_states(self) -> Mapping[str, str] | None:
        return open_dispatcher(self.context, self.stores).tmux.session_states()

    def bodies(self, marker: str) -> list[str]:
        return [body for _, body in self.github.posts if marker in body]


def _with_budget(intake: Intake, limits: Limits) -> Any:
    from dataclasses import replace

    return replace(intake.settings, budget=limits)


@pytest.fixture
def budgeted(tmp_path: Path, tmux_socket: str) -> Iterator[BudgetWorld]:  # noqa: F811
    yield BudgetWorld(tmp_path, tmux_socket)


def _escapes(world: BudgetWorld) -> int:
    return world.read().count("\x1b")


def over_budget(world: BudgetWorld) -> None:
    """Started; a turn that reaches $0.0615 of the $0.05 budget while it runs, with two
    comments arriving after: warned once, then interrupted, held and said once."""
    started(world)
    world.hook("SessionStart", source="startup")
    world.now += 3
    world.feed(comment(120, "Begin with the tests.", minutes=1))
    [first] = world.rows()
    world.now += 1
    world.hook("UserPromptSubmit", prompt=first["text"])
    world.assistant(1500, blocks=3)  # $0.003 + $0.0225: counted once, not three times
    world.feed()
    spent = world.spend()
    assert spent["turns"] == 1 and round(spent["usd"], 6) == 0.0255, spent
    assert world.bodies(WARNING) == [] and world.bodies(EXCEEDED) == []
    world.assistant(1000)  # $0.018 more: 0.0435, past 80 % of $0.05
    world.feed()
    assert len(world.bodies(WARNING)) == 1
    world.assistant(1000)  # $0.0615: over
    world.now += 5  # the turn has run long enough to show its output: it is interrupted
    world.feed(comment(121, "Second note.", minutes=2), comment(122, "Third note.", minutes=3))
    [notice] = world.bodies(EXCEEDED)
    assert "$0.0615 of $0.05" in notice and "budget +5" in notice
    assert WARNING not in notice, "the two notices are told apart by their markers"
    budget = (world.stores.store.section(ITEM, "poll") or {})["budget"]
    assert budget["exceeded"]["interrupted"] is True, budget
    assert world.registry.find_by_work_item(ITEM) is not None, "never a kill"
    [exceeded] = world.events_named("budget.exceeded")
    assert (exceeded["limit"], exceeded["budget"]) == ("usd", 0.05)
    states = {r["id"]: r["state"] for r in world.rows()}
    assert (states["121"], states["122"]) == ("waiting", "waiting")
    world.hook("Stop")
    for _ in range(3):  # rounds go on: nothing is said again, nothing goes in
        world.now += 15
        world.feed()
    assert len(world.bodies(EXCEEDED)) == 1 and len(world.events_named("budget.exceeded")) == 1
    assert "Second note." not in world.read()
    code, out, _ = world.run_cli(["sessions", "list", "--format", "json"])
    assert code == 0
    [item] = json.loads(out)["items"]
    assert item["budget"]["state"] == "over-budget" and item["budget"]["usd"] == 0.05
    assert item["spend"]["tokens"]["output"] == 3500


def test_a_budget_reached_mid_turn_interrupts_holds_and_a_raise_delivers_once_in_order(
    budgeted: BudgetWorld,
) -> None:
    world = budgeted
    over_budget(world)
    world.feed(comment(130, "the-loop budget +5", login="mallory", minutes=4))
    assert [e["login"] for e in world.events_named("poll.unauthorized")] == ["mallory"]
    assert world.bodies(RAISED) == [] and "Second note." not in world.read()

    world.feed(comment(131, "the-loop budget +5", minutes=5))
    [raised] = world.events_named("budget.raised")
    assert (raised["actor"], raised["budget"]) == ("alice", 5.05)
    [said] = world.bodies(RAISED)
    assert "delivered now, in order" in said
    assert wait_until(lambda: "Second note." in world.read())
    assert "Third note." not in world.read(), "in order: one paste at a time"
    [second] = [r for r in world.rows() if r["id"] == "121"]
    world.now += 1
    world.hook("UserPromptSubmit", prompt=second["text"])
    world.hook("Stop")
    world.feed(comment(131, "the-loop budget +5", minutes=5))  # the raise handed again
    assert wait_until(lambda: "Third note." in world.read())
    assert len(world.events_named("budget.raised")) == 1, "a raise counts once"
    assert world.read().count("Second note.") == 1
    # The stand-in reads its terminal by lines: the Escape shows once a paste's Enter came.
    assert _escapes(world) == 1, "one Escape for the one episode"


def test_a_raise_in_hours_or_turns_and_one_not_read(budgeted: BudgetWorld) -> None:
    world = budgeted
    started(world)
    world.feed(comment(140, "the-loop budget +10 turns", minutes=1))
    world.feed(comment(141, "the-loop budget +2h", minutes=2))
    world.feed(comment(142, "the-loop budget lots", minutes=3))
    raised = world.events_named("budget.raised")
    assert [(e["limit"], e["raised_by"]) for e in raised] == [("turns", 10), ("hours", 2)]
    assert any("is not a raise the-loop reads" in body for _, body in world.github.posts)
    budget = (world.stores.store.section(ITEM, "poll") or {})["budget"]
    assert (budget["limits"]["hours"], budget["limits"]["turns"]) == (2, 10)  # none spent yet


def test_the_quick_watch_between_tendings_meters_only_limited_items_and_acts_at_once(
    budgeted: BudgetWorld,
) -> None:
    """What the daemon runs every 2 s: no pane asked before the crossing, no GitHub read;
    at the crossing the working agent's turn is interrupted and the notice said once."""
    world = budgeted
    started(world)
    world.hook("SessionStart", source="startup")
    world.now += 3
    world.hook("UserPromptSubmit", prompt="Ticket")
    sessions = running_sessions(world.stores, world.tmux_states())
    world.assistant(1000)  # $0.018: within
    world.intake().keep_budgets(sessions)
    assert world.bodies(EXCEEDED) == [] and world.spend()["turns"] == 1
    world.assistant(3000)  # $0.066 in all: over
    world.now += 5
    world.intake().keep_budgets(sessions)
    world.intake().keep_budgets(sessions)
    assert len(world.bodies(EXCEEDED)) == 1
    budget = (world.stores.store.section(ITEM, "poll") or {})["budget"]
    assert budget["exceeded"]["interrupted"] is True
    assert len(world.events_named("budget.exceeded")) == 1


def test_an_item_without_limits_is_not_metered_by_the_quick_watch(budgeted: BudgetWorld) -> None:
    world = budgeted
    world.limits = Limits()  # the intake's settings: the item has no budget to watch
    started(world)
    world.assistant(3000)
    world.now += 30  # its figures are due: only the quick watch leaves them
    sessions = running_sessions(world.stores, world.tmux_states())
    world.intake().keep_budgets(sessions)
    assert world.spend()["usd"] == 0.0, "not metered: its figures wait for the next tending"


def test_a_raise_too_small_says_still_over_and_the_episode_goes_on(budgeted: BudgetWorld) -> None:
    world = budgeted
    over_budget(world)
    world.feed(comment(131, "the-loop budget +0.005", minutes=5))
    [said] = world.bodies(RAISED)
    assert "by $0.0050" in said and "still over its budget" in said
    assert "delivered now" not in said
    world.now += 15
    world.feed()
    assert len(world.bodies(EXCEEDED)) == 1, "the same episode: not said again"
    assert len(world.events_named("budget.exceeded")) == 1
    assert "Second note." not in world.read()


def test_a_raise_the_loop_cannot_read_is_answered_once(budgeted: BudgetWorld) -> None:
    world = budgeted
    started(world)
    bad = comment(150, "the-loop budget lots", minutes=1)
    for _ in range(3):  # the poller's overlap, the receiver, a restart: handed again
        world.feed(bad)
    answers = [body for _, body in world.github.posts if "is not a raise" in body]
    assert len(answers) == 1


def test_a_paste_never_goes_in_once_another_reader_found_the_item_over(
    budgeted: BudgetWorld,
) -> None:
    """The other reader's quick watch may begin the exceeded episode after this reader
    decided to deliver: the drain asks again, under the item's hold, before each paste."""
    world = budgeted
    started(world)
    world.hook("SessionStart", source="startup")
    world.now += 3
    round_ = world.intake().round(ITEM)
    round_.watch(listed=ListedNumbers(ITEM, frozenset({15})), knowledge=Known(), read_from=T0)
    round_.comment(comment(160, "Late words.", minutes=1))
    record = {"limits": Limits(usd=0.05).to_dict(), "nonce": "n", "comment": 7}

    def over(ledger: dict[str, Any]) -> None:
        ledger["budget"] = {"exceeded": record}

    PollState(world.stores.store, registry=world.stores.registry).change(ITEM, over)
    drain(running_sessions(world.stores, world.tmux_states()), round_.intake)
    assert [r["state"] for r in world.rows()] == ["waiting"]
    assert "Late words." not in world.read()
