"""Issue 18, item 3: every request has a total deadline, not only a timeout per socket read.

The loopback fake GitHub trickles an answer one byte at a time, each byte well within the
read timeout; the request still ends at its deadline. A thread or a subprocess bounds
each wait, so a regression fails the test instead of hanging it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError

COMMENTS = "/repos/octo/app/issues/comments"
#: How long a test waits for a request that should have ended at its deadline.
BOUND_SECONDS = 20.0


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as served:
        served.add_issue(REPO, 15, labels=("the-loop",))
        for index in range(5):
            served.add_comment(REPO, 15, f"comment {index}")
        yield served


def ask_in_a_thread(client: GitHubClient, path: str) -> dict[str, object]:
    """GET ``path`` in a thread; what came back, once the thread ended within the bound."""
    outcome: dict[str, object] = {}

    def ask() -> None:
        try:
            outcome["answer"] = client.get(path)
        except GitHubHTTPError as error:
            outcome["error"] = error

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(timeout=BOUND_SECONDS)
    assert not thread.is_alive(), "the request outlived its deadline"
    return outcome


@pytest.mark.parametrize("head", [False, True], ids=["body", "status-line-and-headers"])
def test_an_answer_trickling_a_byte_at_a_time_is_cut_off_at_the_requests_deadline(
    fake: FakeGitHub, head: bool
) -> None:
    fake.fail_next(COMMENTS, trickle_seconds=0.05, trickle_head=head)
    with GitHubClient(fake.url, TOKEN, timeout=5, deadline=1) as client:
        outcome = ask_in_a_thread(client, COMMENTS)
        error = outcome.get("error")
        assert isinstance(error, GitHubHTTPError), outcome
        assert error.status is None and error.retryable
        assert "did not answer within the 1s deadline" in str(error)
        fresh = client.get(COMMENTS)  # the connection cut off is not reused
    assert fresh.status == 200 and len(fake.logged("GET", COMMENTS)) == 2


def test_a_request_within_its_deadline_is_answered_on_the_same_connection(
    fake: FakeGitHub,
) -> None:
    with GitHubClient(fake.url, TOKEN, timeout=5, deadline=5) as client:
        for _ in range(3):
            assert client.get(COMMENTS).status in (200, 304)
        assert client.stats.connections_opened == 1


def test_poll_once_is_not_kept_past_the_deadline_by_a_trickling_body(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["requestDeadlineSeconds"] = 1
    world.configure(document)
    github.add_comment(REPO, 15, "a note", login="alice")
    github.fail_next(COMMENTS, count=2, trickle_seconds=0.05)
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path)]
    done = subprocess.run(
        [*argv, "poll", "--once", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
    )
    report = json.loads(done.stdout)["summary"]
    assert done.returncode == 1, done.stderr
    [failure] = report["failed"]
    assert failure.startswith(f"{REPO}: ") and "did not answer within the 1s deadline" in failure
    assert REPO in report["backing_off"], "a repository that does not answer backs off"
