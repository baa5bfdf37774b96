"""An item GitHub no longer has (deleted: 410; transferred out of reach: 404), end to end
(the fake GitHub, real tmux, real git): its session ends through the one close path with
its checkouts kept, the ledger says why, and later cycles stop asking."""

from __future__ import annotations

import pytest

from tests.fake_github import FakeGitHub
from tests.test_poll_closures import closed_state, started
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.adapters.watch_file import WATCHED_FILE

PR = "github:octo/app#16"


def item_gets(fake: FakeGitHub, number: int) -> int:
    return len(fake.logged("GET", f"/repos/{REPO}/issues/{number}"))


@pytest.mark.parametrize("status", [410, 404])
def test_a_gone_issue_ends_its_session_keeping_its_checkout_and_is_not_asked_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
    status: int,
) -> None:
    checkout = started(world, github)
    (checkout / "notes.txt").write_text("work in progress\n", encoding="utf-8")
    github.remove_issue(REPO, 15, status=status)
    # The kept listing still says open; the next full read of it (a day on, or the file
    # lost) no longer holds the item, so the cycle asks GitHub for it.
    (world.layout.local_dir / WATCHED_FILE).unlink()
    report = world.poll()  # exits 0: a gone item is no failure
    assert (report["closed"], report["failed"]) == (1, [])
    assert not world.live()
    assert checkout.is_dir() and (checkout / "README.md").exists(), "checkouts are kept"
    assert (checkout / "notes.txt").read_text(encoding="utf-8") == "work in progress\n"
    [gone] = world.events_named("poll.item_gone")
    assert (gone["work_item"], gone["action"]) == (ITEM, "close-session")
    assert str(status) in gone["why"]
    assert world.events_named("poll.closure") == []
    [closed] = world.events_named("session.closed")
    assert "ticket gone from GitHub" in closed["reason"] and str(status) in closed["reason"]
    assert closed_state(world) == "gone"
    ledger = world.store.section(ITEM, "poll")
    assert isinstance(ledger, dict) and str(status) in ledger["goneWhy"]

    asked = item_gets(github, 15)
    again = world.poll()
    assert (again["closed"], again["failed"]) == (0, [])
    assert item_gets(github, 15) == asked, "a gone item is not asked again"
    assert len(world.events_named("poll.item_gone")) == 1


def test_a_gone_linked_pull_request_ends_only_its_endpoint_and_is_not_asked_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    github.add_issue(REPO, 16, title="Fix it", pull_request=True)
    started(world, github)
    code, _, err = world.run_cli(["sessions", "link-pr", "--work-item", ITEM, "--pull-request", PR])
    assert code == 0, err
    github.remove_issue(REPO, 16, status=404)
    report = world.poll()
    assert (report["closed"], report["failed"]) == (1, [])
    record = world.registry.find_by_work_item(ITEM)
    assert record is not None and record.is_live, "the work item's own session goes on"
    endpoint = record.endpoint_for(PR)
    assert endpoint is not None and not endpoint.is_live
    ledger = world.store.pull_request_ledger(ITEM, PR)
    assert ledger is not None and ledger["state"] == "gone" and "404" in ledger["goneWhy"]
    [gone] = world.events_named("poll.item_gone")
    assert (gone["work_item"], gone["pull_request"], gone["action"]) == (
        ITEM,
        PR,
        "end-endpoint",
    )
    asked = item_gets(github, 16)
    again = world.poll()
    assert (again["closed"], again["failed"]) == (0, [])
    assert item_gets(github, 16) == asked, "a gone pull request is not asked again"
