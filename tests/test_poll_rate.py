"""`poll --once` under GitHub's limits: a 429 fails the repository with its back-off, and a
budget below the reserve runs only the reads, keeping every comment for later."""

from __future__ import annotations

import json
import time

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github, world  # noqa: F401 - fixtures


def test_a_429_fails_the_cycle_with_exit_1_an_event_and_a_back_off_of_at_least_retry_after(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.fail_next("/repos/octo/app/issues/comments", status=429, retry_after=300)
    code, _, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1
    assert "octo/app:" in err and "429" in err
    [event] = world.events_named("poll.rate_limited")
    assert event["status"] == 429 and event["wait_seconds"] >= 300
    status = json.loads((world.layout.local_dir / "poll-status.json").read_text("utf-8"))
    assert status["next_cycle_in"] > 290, "the next cycle waits out the retry-after"


def test_below_the_reserve_only_the_reads_run_and_the_comment_waits_for_the_budget(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.set_budget(TOKEN, remaining=150, reset=int(time.time()) + 3600)
    report = world.poll()
    assert report["commands"] == 0 and not world.live()
    assert [e["step"] for e in world.events_named("poll.rate_limited")] == ["comments"]
    github.set_budget(TOKEN, remaining=5000)
    assert world.poll()["commands"] == 1 and world.live()


def test_a_poll_once_after_a_429_waits_out_its_retry_after_without_a_request(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    """The back-off outlives the process: a `--once` from cron honours the last refusal."""
    github.fail_next("/repos/octo/app/issues/comments", status=429, retry_after=300)
    assert world.run_cli(["poll", "--once"])[0] == 1
    asked = len(github.requests)
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1
    assert len(github.requests) == asked, "no request while the retry-after holds"
    assert "GitHub refused the last cycle: no request before " in err
    assert json.loads(out)["summary"]["waiting"] is True
    status_path = world.layout.local_dir / "poll-status.json"
    status = json.loads(status_path.read_text("utf-8"))
    status["backoff"]["resumeAt"] = time.time() - 1  # the wait is over
    status_path.write_text(json.dumps(status), encoding="utf-8")
    assert world.run_cli(["poll", "--once"])[0] == 0
    assert len(github.requests) > asked


def test_a_saved_back_off_from_a_damaged_status_file_holds_the_poller_an_hour_at_most(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    status_path = world.layout.local_dir / "poll-status.json"
    status_path.parent.mkdir(parents=True, exist_ok=True)
    status_path.write_text(json.dumps({"backoff": {"failures": 1, "resumeAt": 1e18}}), "utf-8")
    code, out, _ = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1 and github.requests == []
    assert 0 < json.loads(out)["summary"]["waitSeconds"] <= 3600
