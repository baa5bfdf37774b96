"""The watched set follows the changes, end to end: after one full read of the open
labelled items, each cycle asks GitHub only what changed since the items cursor."""

from __future__ import annotations

import json

from tests.fake_github import FakeGitHub, LoggedRequest
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures

ISSUES = f"/repos/{REPO}/issues"
COMMENTS = f"/repos/{REPO}/issues/comments"


def cycle_requests(poll_world: PollWorld, fake: FakeGitHub) -> list[LoggedRequest]:
    """The requests of one more cycle."""
    before = len(fake.logged())
    poll_world.poll()
    return fake.logged()[before:]


def watched_file(poll_world: PollWorld) -> tuple[int, bytes]:
    path = poll_world.layout.local_dir / "poll-watched.json"
    return path.stat().st_mtime_ns, path.read_bytes()


def test_an_idle_cycle_is_one_304_for_the_changed_items_and_one_for_the_comments(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    for number in range(16, 40):
        github.add_issue(REPO, number, labels=("the-loop",))
        github.advance(60)
    first = cycle_requests(world, github)
    assert first[0].query == {"state": "open", "labels": "the-loop", "per_page": "100"}
    world.poll()  # the first read of what changed since the cursor
    kept = watched_file(world)
    idle = cycle_requests(world, github)
    assert [(r.path, r.status) for r in idle] == [(ISSUES, 304), (COMMENTS, 304)]
    query = idle[0].query
    assert (query["state"], query["sort"], query["direction"]) == ("all", "updated", "asc")
    assert "labels" not in query and query["since"]
    assert watched_file(world) == kept, "an idle cycle rewrites nothing"


def test_an_item_labelled_later_is_watched_and_one_unlabelled_is_not(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    github.add_issue(REPO, 20, title="later")
    world.poll()
    github.advance(30)
    github.set_labels(REPO, 20, ("the-loop",))
    github.add_comment(REPO, 20, "a note", login="alice")
    assert world.poll()["baselined"] == 1, "first sight of a newly watched item"

    github.advance(30)
    github.set_labels(REPO, 20, ())
    github.add_comment(REPO, 20, "the-loop start", login="alice")
    report = world.poll()
    assert report["commands"] == 0 and report["settled"] >= 1
    assert world.registry.find_by_work_item("github:octo/app#20") is None


def test_a_closed_item_is_no_longer_watched_and_a_reopened_one_is_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    github.add_comment(REPO, 15, "a note", login="alice")
    world.poll()
    github.advance(30)
    github.set_state(REPO, 15, "closed", by="alice")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    report = world.poll()
    assert report["commands"] == 0 and report["settled"] >= 1
    assert not world.live()

    github.advance(30)
    github.set_state(REPO, 15, "open")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] >= 1
    assert world.live()


def test_a_live_session_whose_item_lost_its_label_is_not_asked_about_on_an_idle_cycle(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    github.advance(30)
    github.set_labels(REPO, 15, ())
    world.poll()
    assert world.live(), "still open: its session goes on"
    world.poll()
    idle = cycle_requests(world, github)
    assert [(r.path, r.status) for r in idle] == [(ISSUES, 304), (COMMENTS, 304)]
    assert world.live()


def test_other_labels_in_the_config_read_the_open_items_in_full_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    world.poll()
    world.poll()
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["labels"] = ["agent"]
    world.configure(document)
    requests = cycle_requests(world, github)
    assert requests[0].query == {"state": "open", "labels": "agent", "per_page": "100"}


def test_an_unreadable_listing_is_read_in_full_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    world.poll()
    world.poll()
    (world.layout.local_dir / "poll-watched.json").write_text("{not json", encoding="utf-8")
    requests = cycle_requests(world, github)
    full = [r for r in requests if r.path == ISSUES]
    assert [r.query["state"] for r in full] == ["open", "open"]
    assert [r.status for r in full] == [304, 200], "a 304 nobody kept the entries of: re-read"
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] == 1, "the item is watched again"
    assert world.live()


def test_the_kept_listing_is_not_mistaken_for_a_session_record(
    world: PollWorld,  # noqa: F811
) -> None:
    world.poll()
    assert (world.layout.local_dir / "poll-watched.json").is_file()
    code, _, err = world.run_cli(["sessions", "list", "--format", "json"])
    assert code == 0 and "poll-watched" not in err
    _, _, err = world.run_cli(["state", "check"])
    assert "poll-watched" not in err
