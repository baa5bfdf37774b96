"""Issue 18, item 1: one repository's trouble backs off that repository only; only the
token's rate limit holds every repository; `poll status` says who backs off, why, until when.

Two repositories behind the loopback fake GitHub: `octo/app` answers, `octo/bad` fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, PollWorld, github, world  # noqa: F401 - fixtures

BAD = "octo/bad"
#: Each way one repository can fail that is its own trouble, not the token's.
OWN_TROUBLE: dict[str, dict[str, Any]] = {
    "a 5xx": {"status": 502},
    "no answer": {"hang_up": True},
    "an unparsable answer": {"body": b"<html>upstream timed out</html>"},
    "a page of non-objects": {"body": b'[1, "x", null]'},
}


def watch_two(poll_world: PollWorld, fake: FakeGitHub) -> None:
    document = json.loads(poll_world.config_path.read_text(encoding="utf-8"))
    document["polling"]["repositories"] = [REPO, BAD]
    poll_world.configure(document)
    fake.add_issue(BAD, 3, title="Elsewhere", labels=("the-loop",))


def once(poll_world: PollWorld) -> tuple[int, dict[str, Any], str]:
    code, out, err = poll_world.run_cli(["poll", "--once", "--format", "json"])
    return code, json.loads(out)["summary"], err


def asked(fake: FakeGitHub, repository: str, since: int = 0) -> int:
    return sum(1 for r in fake.requests[since:] if r.path.startswith(f"/repos/{repository}/"))


@pytest.mark.parametrize("trouble", sorted(OWN_TROUBLE))
def test_one_repositorys_own_failure_backs_off_that_repository_and_the_others_are_polled(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    trouble: str,
) -> None:
    watch_two(world, github)
    github.fail_repository(BAD, count=1000, **OWN_TROUBLE[trouble])
    code, report, err = once(world)
    assert code == 1 and report["failed"]
    assert all(line.startswith(f"{BAD}: ") for line in report["failed"])
    assert [line for line in err.splitlines() if line.startswith(f"error: {BAD}: ")], err
    first = report

    before = len(github.requests)
    github.add_comment(REPO, 15, "a note while octo/bad is down", login="alice")
    code, report, err = once(world)
    assert asked(github, REPO, before) > 0, "octo/app is polled while octo/bad backs off"
    assert asked(github, BAD, before) == 0, "octo/bad waits out its own back-off"
    assert BAD in first["backing_off"] and REPO not in first["backing_off"]
    [event] = world.events_named("poll.backing_off")
    assert (event["repository"], event["failures"]) == (BAD, 1) and event["wait_seconds"] > 0
    assert report["seen"] + report["baselined"] >= 1, "octo/app's new comment was handled"
    assert code == 1 and f"{BAD}: backing off until " in err
    assert report["backing_off"][BAD]["failures"] == 1
    assert len(world.events_named("poll.backing_off")) == 1, "a wait unchanged is no new event"


def test_poll_status_names_the_repository_backing_off_why_and_until_when(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    watch_two(world, github)
    github.fail_repository(BAD, count=1000, status=503)
    once(world)
    code, out, _ = world.run_cli(["poll", "status", "--format", "json"])
    [held] = json.loads(out)["items"][0]["backingOff"]
    assert code == 0 and held["repository"] == BAD
    assert "503" in held["reason"] and held["until"].endswith("Z") and held["waitSeconds"] > 0
    code, out, _ = world.run_cli(["poll", "status"])
    [line] = [line for line in out.splitlines() if BAD in line and "backs off" in line]
    assert "backs off until " in line and held["until"] in line and "503" in line
    assert REPO not in out


def test_a_repository_answering_again_after_its_back_off_leaves_it(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    watch_two(world, github)
    github.fail_repository(BAD, count=1, status=500)
    assert once(world)[0] == 1
    status_path = world.layout.local_dir / "poll-status.json"
    status = json.loads(status_path.read_text("utf-8"))
    status["backing_off"][BAD]["resumeAt"] = 0  # the wait is over
    status_path.write_text(json.dumps(status), encoding="utf-8")
    before = len(github.requests)
    code, report, err = once(world)
    assert (code, report["backing_off"]) == (0, {}), err
    assert asked(github, BAD, before) > 0


@pytest.mark.parametrize(
    "refusal",
    [{"status": 429, "retry_after": 300}, {"status": 403, "retry_after": 120}],
    ids=["429", "403-secondary"],
)
def test_the_tokens_rate_limit_on_one_repository_holds_every_repository(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    refusal: dict[str, Any],
) -> None:
    watch_two(world, github)
    github.fail_repository(BAD, count=1, **refusal)
    assert once(world)[0] == 1
    before = len(github.requests)
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1 and len(github.requests) == before, "no request to any repository"
    assert "GitHub refused the last cycle: no request before " in err
    assert json.loads(out)["summary"]["waiting"] is True
