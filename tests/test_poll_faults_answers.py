"""Issue 18, item 4: any answer GitHub or a proxy can send is at worst a failure of that
repository, reported in one line; `poll --once` never exits 3 and the daemon lives on.

Each answer is served by the loopback fake GitHub (real HTTP on 127.0.0.1) at the read it
would spoil: the listing a first cycle reads, the new comments, a thread, an item."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.adapters.github_reads import ClientReads, IntakeGitHub
from the_loop.errors import EXIT_FAILED, EXIT_OK
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError
from the_loop.ref import WorkItemRef

ISSUES = "/repos/octo/app/issues"
COMMENTS = "/repos/octo/app/issues/comments"
THREAD = "/repos/octo/app/issues/15/comments"
TOO_BIG = "9" * 400

#: Answers no GitHub sends, each as `fail_next` takes it.
HOSTILE: dict[str, dict[str, Any]] = {
    "non-objects": {"body": b'[1, "x", null]'},
    "an object for a page": {"body": b'{"message": "not a list"}'},
    "null": {"body": b"null"},
    "a number": {"body": b"42"},
    "a string": {"body": b'"text"'},
    "html": {"body": b"<html>502 Bad Gateway</html>"},
    "not utf-8": {"body": b'[{"body": "\xff\xfe"}]'},
    "nested too deep": {"body": b"[" * 100_000},
    "a number too long": {"body": b"[" + b"1" * 5000 + b"]"},
    "empty": {"body": b""},
    "wrong field types": {
        "body": json.dumps(
            [{"number": "15", "labels": "x", "user": [], "updated_at": 5, "id": True}]
        ).encode()
    },
    "a time that is not one": {
        "body": json.dumps(
            [{"number": 15, "state": "open", "labels": [], "updated_at": "yesterday"}]
        ).encode()
    },
    "the first of all times": {
        "body": json.dumps(
            [
                {
                    "number": 15,
                    "state": "open",
                    "labels": [{"name": "the-loop"}],
                    "updated_at": "0001-01-01T00:00:00Z",
                    "id": 7,
                    "issue_url": "https://api.github.com/repos/octo/app/issues/15",
                    "user": {"login": "alice"},
                    "created_at": "0001-01-01T00:00:00Z",
                }
            ]
        ).encode()
    },
    "a retry-after too long": {"status": 503, "headers": {"retry-after": TOO_BIG}},
    "a reset too far": {"status": 403, "headers": {"x-ratelimit-reset": TOO_BIG}},
    "a poll interval too long": {"body": b"[]", "headers": {"x-poll-interval": TOO_BIG}},
    "a next link that is no URL": {"body": b"[]", "headers": {"link": '<http://[::1>; rel="next"'}},
    "a garbled status line": {"raw": b"HTTP/1.1 2OO OK\r\n\r\n[]"},
    "no status line": {"raw": b"\x1b[31mgarbage\r\n\r\n"},
    "a broken chunk": {"raw": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
    "a body cut short": {"raw": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{"},
    "a header line too long": {"raw": b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n"},
}


def failure_lines(err: str) -> list[str]:
    """The lines of stderr that are not warnings, without their ``error: ``."""
    lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
    return [line.removeprefix("error: ") for line in lines]


@pytest.mark.parametrize("path", [ISSUES, COMMENTS], ids=["listing", "comments"])
@pytest.mark.parametrize("answer", sorted(HOSTILE))
def test_a_hostile_answer_is_at_worst_a_one_line_failure_of_its_repository(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    path: str,
    answer: str,
) -> None:
    github.add_comment(REPO, 15, "a note", login="alice")
    github.fail_next(path, count=3, **HOSTILE[answer])
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code in (EXIT_OK, EXIT_FAILED), err
    report = json.loads(out)["summary"]
    assert all(line.isprintable() for line in err.splitlines()), "no control character shows"
    assert all(line.startswith(f"{REPO}: ") for line in failure_lines(err)), err
    assert len(failure_lines(err)) == len(report["failed"])

    (world.layout.local_dir / "poll-status.json").unlink()  # no back-off: ask again now
    github.failures.clear()
    code, _, err = world.run_cli(["poll", "--once"])
    assert code == EXIT_OK, f"what the hostile answer left behind is harmless: {err}"


def test_the_listing_page_of_the_issue_fails_the_repository_in_one_line_and_keeps_no_cursor(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.fail_next(ISSUES, body=b'[1, "x", null]')
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    report = json.loads(out)["summary"]
    assert code == EXIT_FAILED and report["commands"] == 0
    [line] = report["failed"]
    assert line.startswith(f"{REPO}: ") and "not a list of objects" in line
    assert failure_lines(err) == [line]
    assert not (world.layout.local_dir / "poll-cursors.json").exists()
    assert REPO in report["backing_off"]


def test_a_thread_of_non_objects_fails_first_sight_instead_of_baselining_nothing(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.fail_next(THREAD, body=b'[null, {"id": 1}]')
    code, out, _ = world.run_cli(["poll", "--once", "--format", "json"])
    report = json.loads(out)["summary"]
    assert code == EXIT_FAILED and report["baselined"] == 0 and not world.live()
    assert any("not a list of objects" in line for line in report["failed"])


@pytest.fixture
def reads() -> Iterator[tuple[FakeGitHub, IntakeGitHub]]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, labels=("the-loop",))
        with GitHubClient(fake.url, TOKEN, timeout=5) as client:
            yield fake, IntakeGitHub(ClientReads(client), warn=lambda _message: None)


@pytest.mark.parametrize("body", [b"[]", b"{}", b'{"state": "gone", "number": 15}', b"null"])
def test_an_item_answer_that_is_not_an_issue_is_a_failure_never_a_closed_item(
    reads: tuple[FakeGitHub, IntakeGitHub], body: bytes
) -> None:
    fake, github_port = reads
    fake.fail_next("/repos/octo/app/issues/15", body=body)
    with pytest.raises(GitHubHTTPError, match="not an issue") as raised:
        github_port.item(WorkItemRef.parse("github:octo/app#15"))
    assert raised.value.status is None and raised.value.retryable
    assert github_port.item(WorkItemRef.parse("github:octo/app#15")).is_open


def test_the_daemon_lives_through_a_page_of_non_objects_and_stops_on_request(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["intervalSeconds"] = 0.2
    world.configure(document)
    github.fail_next(ISSUES, body=b'[1, "x", null]')
    env = {**os.environ, "GITHUB_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "poll"]
    daemon = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status_file = world.layout.local_dir / "poll-status.json"
    try:
        assert wait_until(status_file.exists, timeout=30), "the first cycle ended"
        first = json.loads(status_file.read_text("utf-8"))
        assert any("not a list of objects" in line for line in first["failed"])
        assert daemon.poll() is None, "the daemon lives on"
        code, _, _ = world.run_cli(["poll", "stop"])
        assert code == 0 and daemon.wait(timeout=30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
