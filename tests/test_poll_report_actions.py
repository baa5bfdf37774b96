"""Issue 18, items 16 and 17: the poller says what happened.

`poll --once` prints one line per action (the command that ran and who asked, a refusal
and why, a delivery, a closure that ended a session) and `--format json` holds the
same actions as items; the daemon prints one stderr line per cycle that did something
and one per failure; `poll status` shows the last cycle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, TOKEN, PollWorld, github, world  # noqa: F401


def once(poll_world: PollWorld, *extra: str) -> tuple[int, str, str]:
    return poll_world.run_cli(["poll", "--once", *extra])


def once_json(poll_world: PollWorld) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    code, out, err = poll_world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0, err
    document = json.loads(out)
    return document["items"], document["summary"]


def test_poll_once_prints_a_line_per_command_delivery_and_closure_and_who_asked(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    code, out, err = once(world)
    assert code == 0, err
    assert f"{ITEM}: ran `start` for @alice (comment {start.id}): started" in out.splitlines()
    assert out.splitlines()[-1].startswith("poll: "), "the tally comes last"
    assert wait_until(lambda: "Fix the wobbling widget" in world.read())

    note = github.add_comment(REPO, 15, "please look at the hinge", login="alice")
    code, out, _ = once(world)
    assert f"{ITEM}: delivered comment {note.id} from @alice into the agent's pane" in out

    github.set_state(REPO, 15, "closed", by="alice")
    _code, out, _ = once(world)
    lines = [line for line in out.splitlines() if line.startswith(f"{ITEM}: ")]
    said = f"{ITEM}: closed on GitHub by @alice: session ended, 1 checkout(s) removed"
    assert lines == [said], out
    assert not world.live()


def test_a_closure_by_a_stranger_says_the_checkouts_were_kept(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    github.set_state(REPO, 15, "closed", by="mallory")
    _code, out, _ = once(world)
    said = f"{ITEM}: closed on GitHub by @mallory: session ended, checkouts kept"
    assert said in out.splitlines(), out


def test_a_strangers_first_start_is_refused_in_a_line_and_an_event(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    world.poll()  # the repository is known: its window starts now
    github.add_issue(REPO, 16, title="Another", labels=("the-loop",))
    refused = github.add_comment(REPO, 16, "the-loop start", login="mallory")
    code, out, err = once(world)
    assert code == 0, err
    expected = (
        f"github:octo/app#16: refused `start` from @mallory (comment {refused.id}): "
        "not in routing.authorizedUsers"
    )
    assert expected in out.splitlines(), out
    [event] = world.events_named("poll.unauthorized")
    assert (event["login"], event["comment_id"]) == ("mallory", refused.id)
    assert world.registry.find_by_work_item("github:octo/app#16") is None

    code, out, _ = once(world)
    assert "refused" not in out, "a refusal is said once"


def test_history_met_at_first_sight_is_not_reported_as_a_refusal(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="mallory")  # before any cursor
    code, out, _ = once(world)
    assert code == 0 and "refused" not in out
    assert world.events_named("poll.unauthorized") == []


def test_ambiguous_and_undeliverable_comments_are_refused_with_why(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    both = github.add_comment(REPO, 15, "the-loop pause\nthe-loop stop", login="alice")
    stranger = github.add_comment(REPO, 15, "I have an opinion", login="mallory")
    _code, out, _ = once(world)
    assert (
        f"{ITEM}: refused comment {both.id} from @alice: it names more than one command "
        "(pause,stop)"
    ) in out
    assert (
        f"{ITEM}: did not deliver comment {stranger.id} from @mallory: not in "
        "routing.authorizedUsers and polling.deliverFrom is authorized"
    ) in out


def test_json_items_are_the_actions_and_the_summary_is_the_report(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    items, summary = once_json(world)
    assert items == [
        {
            "kind": "command",
            "workItem": ITEM,
            "actor": "alice",
            "verb": "start",
            "commentId": start.id,
            "outcome": "started",
            "reason": "",
            "pullRequest": "",
            "checkoutsRemoved": 0,
            "checkoutsKept": 0,
        }
    ]
    assert summary["commands"] == 1 and "actions" not in summary
    assert summary["finishedAt"].endswith("Z")
    items, summary = once_json(world)
    assert items == [] and summary["commands"] == 0, "an idle cycle did nothing"


def test_poll_status_shows_the_last_cycle_and_what_it_did(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    _code, out, _ = world.run_cli(["poll", "status"])
    assert "poll: no cycle has run here yet" in out.splitlines()
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    _code, out, _ = world.run_cli(["poll", "status"])
    lines = out.splitlines()
    assert lines[0] == "poll: not running"
    assert lines[1].startswith("poll: last cycle at 20") and "1 commands" in lines[1], lines
    assert f"poll: {ITEM}: ran `start` for @alice (comment {start.id}): started" in lines
    _code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
    last = json.loads(out)["items"][0]["lastCycle"]
    assert last["commands"] == 1 and last["actions"][0]["verb"] == "start"


def test_the_daemon_prints_a_line_per_cycle_that_did_something_and_per_failure(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["intervalSeconds"] = 0.2
    document["polling"]["repositories"] = [REPO, "octo/bad"]
    world.configure(document)
    github.fail_repository("octo/bad", count=1000, status=502)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "poll"]
    daemon = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(world.live, timeout=30)
        status = world.layout.local_dir / "poll-status.json"
        cycles = world.events_named

        def idle_cycles() -> int:
            return sum(1 for e in cycles("poll.cycle") if e["commands"] == 0)

        assert wait_until(lambda: status.exists() and idle_cycles() >= 3, timeout=30)
        assert world.run_cli(["poll", "stop"])[0] == 0
        _, err = daemon.communicate(timeout=30)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    lines = err.decode().splitlines()
    tallies = [line for line in lines if " poll: " in line and "requests" in line]
    assert len(tallies) == 1, "one line for the cycle that did something; idle ones are silent"
    assert tallies[0][:4] == "20" + tallies[0][2:4] and "1 commands" in tallies[0]
    failures = [line for line in lines if line.startswith("warning: poll: octo/bad: ")]
    assert len(failures) == 1, lines  # its first failure; then it backs off, saying nothing new
