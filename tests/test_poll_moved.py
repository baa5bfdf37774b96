"""What GitHub moved, end to end (the fake GitHub, real tmux, real git): a transferred
issue's session ends through the one close path saying where it went, and a renamed
repository goes on being polled through GitHub's redirect, said once."""

from __future__ import annotations

import json
from typing import Any

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import wait_until
from tests.test_poll_closures import closed_state, started
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.adapters.watch_file import WATCHED_FILE


def poll_saying(world: PollWorld) -> tuple[dict[str, Any], str]:  # noqa: F811
    """One ``poll --once`` that must exit 0: its summary and its stderr."""
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0, err
    return json.loads(out)["summary"], err


def test_a_transferred_issue_ends_its_session_through_the_close_path_saying_where_it_went(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    checkout = started(world, github)
    github.add_issue("octo/other", 1)
    github.transfer_issue(REPO, 15, "octo/other")
    # The kept listing still says open; its next full read (a day on, or the file lost)
    # no longer holds the item, so the cycle asks GitHub for it: a 301 to where it went.
    (world.layout.local_dir / WATCHED_FILE).unlink()
    report = world.poll()  # exits 0: a transferred item is no failure
    assert (report["closed"], report["failed"]) == (1, [])
    assert not world.live()
    assert checkout.is_dir(), "checkouts are kept"
    [gone] = world.events_named("poll.item_gone")
    assert (gone["work_item"], gone["action"]) == (ITEM, "close-session")
    assert f"{ITEM} was transferred to octo/other#2" in gone["why"]
    [closed] = world.events_named("session.closed")
    assert "transferred to octo/other#2" in closed["reason"]
    assert closed_state(world) == "gone"
    again = world.poll()
    assert (again["closed"], again["failed"]) == (0, [])


def test_a_renamed_repository_is_polled_through_its_redirect_and_said_once(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    started(world, github)
    github.rename_repository(REPO, "octo/app2")
    github.advance(5)
    github.add_comment("octo/app2", 15, "please also fix the wheel", login="alice")
    report, err = poll_saying(world)
    assert (report["delivered"], report["failed"]) == (1, [])
    assert wait_until(lambda: "fix the wheel" in world.read())
    [said] = [line for line in err.splitlines() if "octo/app2" in line]
    assert f"{REPO} is octo/app2 on GitHub now" in said
    assert f"polling.repositories still names {REPO}" in said
    [renamed] = world.events_named("poll.repository_renamed")
    assert (renamed["repository"], renamed["renamed_to"]) == (REPO, "octo/app2")

    github.advance(5)
    github.add_comment("octo/app2", 15, "and the bell", login="alice")
    report, err = poll_saying(world)
    assert (report["delivered"], report["failed"]) == (1, [])
    assert "octo/app2" not in err, "said once"
    assert len(world.events_named("poll.repository_renamed")) == 1
    assert world.live()


def test_a_renamed_repository_is_asked_by_its_new_name_so_an_idle_cycle_is_304s_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    """Once the new name is learned (and kept), every request names it: no redirect is
    paid for again, and an idle cycle is all 304s as it was before the rename."""
    started(world, github)
    github.rename_repository(REPO, "octo/app2")
    github.advance(5)
    poll_saying(world)  # learns the new name through the redirects, and keeps it
    assert github.logged("GET", f"/repos/{REPO}"), "asked what it is called now"
    poll_saying(world)  # the first reads under the new name: their ETags are new
    before = len(github.logged())
    report, err = poll_saying(world)
    idle = github.logged()[before:]
    assert idle, "the cycle read the repository"
    assert [r for r in idle if r.status in (301, 307, 308)] == [], "no redirect paid for"
    assert [r for r in idle if r.path.startswith(f"/repos/{REPO}/")] == []
    assert {r.status for r in idle} == {304}, [(r.method, r.path, r.status) for r in idle]
    assert (report["failed"], report["requests"], report["not_modified"]) == (
        [],
        len(idle),
        len(idle),
    )
    assert "octo/app2" not in err and world.live()
    assert len(world.events_named("poll.repository_renamed")) == 1


def test_a_transferred_issue_of_a_renamed_repository_is_still_gone(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    """The new name learned, an issue GitHub then moves to another repository is still
    seen to be gone: its GET by the new name leads elsewhere."""
    checkout = started(world, github)
    github.rename_repository(REPO, "octo/app2")
    github.advance(5)
    poll_saying(world)
    github.add_issue("octo/other", 1)
    github.transfer_issue("octo/app2", 15, "octo/other")
    (world.layout.local_dir / WATCHED_FILE).unlink()
    report = world.poll()
    assert (report["closed"], report["failed"]) == (1, [])
    assert not world.live() and checkout.is_dir()
    [gone] = world.events_named("poll.item_gone")
    assert f"{ITEM} was transferred to octo/other#2" in gone["why"]
    assert github.logged("GET", "/repos/octo/app2/issues/15"), "asked by its new name"
