"""Issue 18, item 5: a repository with more history than the page cap is polled.

The loopback fake GitHub serves one comment a page, so 1,001 comments are 1,001 pages
(the client's cap is 1,000). First sight of a repository reads a bounded window of its
newest comments, not its history; a backlog past the cap since the cursor is read
oldest first, a cap's worth a cycle, and the cursor moves on with it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.github.client import MAX_PAGES, GitHubClient
from the_loop.github.replies import GitHubHTTPError

COMMENTS = "/repos/octo/app/issues/comments"
LONGER_THAN_THE_CAP = MAX_PAGES + 1
#: A first sight that reads this many requests or more read the history, not a window.
FIRST_SIGHT_BOUND = 25


def cursor(poll_world: PollWorld) -> Any:
    path = poll_world.layout.local_dir / "poll-cursors.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else None


def comment_reads(fake: FakeGitHub, since: int = 0) -> int:
    return sum(1 for r in fake.requests[since:] if r.path == COMMENTS)


def test_first_sight_of_a_repository_longer_than_the_page_cap_reads_a_window_and_runs_its_start(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.max_per_page = 1
    github.add_issue(REPO, 9, title="An old, busy, unwatched issue")
    github.add_history(REPO, 9, LONGER_THAN_THE_CAP)
    github.advance(600)  # past the overlap every read after the cursor starts with
    github.add_comment(REPO, 15, "the-loop start", login="alice")

    report = world.poll()
    assert report["commands"] == 1 and world.live(), "the repository was polled"
    assert comment_reads(github) < FIRST_SIGHT_BOUND, "a window, not the whole history"
    assert cursor(world) is not None

    before = len(github.requests)
    github.advance(60)
    github.add_comment(REPO, 15, "a note for the agent", login="alice")
    assert world.poll()["delivered"] == 1
    assert comment_reads(github, before) < FIRST_SIGHT_BOUND, "then only what is new"
    assert wait_until(lambda: "a note for the agent" in world.read())


def test_a_backlog_past_the_page_cap_since_the_cursor_is_read_a_cap_at_a_time_and_moves_the_cursor(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.add_issue(REPO, 9, title="A busy, unwatched issue")
    github.add_comment(REPO, 15, "a first note", login="alice")
    world.poll()
    first = cursor(world)
    github.max_per_page = 1
    github.advance(3 * LONGER_THAN_THE_CAP)  # the backlog comes after the cursor's overlap
    github.add_history(REPO, 9, LONGER_THAN_THE_CAP)
    github.advance(60)
    github.add_comment(REPO, 15, "the-loop start", login="alice")

    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["summary"]["commands"] == 0, "the start is past this cycle's cap"
    assert cursor(world) != first, "the cursor moved past what was read"
    assert "read the oldest" in err

    assert world.poll()["commands"] == 1 and world.live(), "the next cycle reads the rest"


def test_a_listing_past_its_cap_gives_its_first_or_its_last_pages_in_order_or_refuses() -> None:
    with serve(FakeGitHub()) as fake:
        fake.add_issue(REPO, 15)
        ids = [comment.id for comment in fake.add_history(REPO, 15, 7)]
        with GitHubClient(fake.url, "", timeout=5) as client:
            params = {"per_page": 1, "sort": "updated", "direction": "asc"}
            first = client.get_all_pages(COMMENTS, params, max_pages=3, beyond="first")
            last = client.get_all_pages(COMMENTS, params, max_pages=3, beyond="last")
            assert (first.truncated, last.truncated) == (True, True)
            assert [c["id"] for c in first.items] == ids[:3]
            assert [c["id"] for c in last.items] == ids[-3:]
            with pytest.raises(GitHubHTTPError, match="keeps linking"):
                client.get_all_pages(COMMENTS, params, max_pages=3)
            whole = client.get_all_pages(
                COMMENTS, params, conditional=False, max_pages=7, beyond="last"
            )
            assert not whole.truncated and [c["id"] for c in whole.items] == ids
