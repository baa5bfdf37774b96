"""Comments read in one cycle meet their item as the commands before them left it, an
edit is never handled as a new comment, and a lost cursor replays no history
(`the-loop poll --once` against the loopback fake, real tmux, real git)."""

from __future__ import annotations

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import wait_until
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.portable.poll import PollState


def known(poll_world: PollWorld, fake: FakeGitHub) -> None:
    """Item 15 has a ledger (a first comment, baselined) and the cursor has moved."""
    fake.add_comment(REPO, 15, "hello", login="alice")
    poll_world.poll()
    fake.advance(5)


def seen(poll_world: PollWorld) -> list[str]:
    ledger = poll_world.store.section(ITEM, "poll") or {}
    return list(ledger.get("seenComments", []))


def test_a_comment_after_a_start_in_the_same_cycle_reaches_the_new_agent(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    known(world, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.add_comment(REPO, 15, "also do X", login="alice")
    report = world.poll()
    assert (report["commands"], report["delivered"]) == (1, 1)
    assert wait_until(lambda: "also do X" in world.read())
    world.poll()
    assert world.read().count("also do X") == 1


def test_a_comment_after_a_stop_in_the_same_cycle_is_never_pasted_into_a_later_session(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    known(world, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert wait_until(lambda: "PROMPT" in world.read())
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop stop", login="alice")
    stale = github.add_comment(REPO, 15, "stale note after stop", login="alice")
    assert world.poll()["seen"] == 1
    assert not world.live()
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    world.poll()
    assert wait_until(lambda: world.read().startswith("PROMPT"))
    assert "stale note" not in world.read()
    assert str(stale.id) in seen(world)


def test_an_edit_of_a_comment_passed_over_while_its_item_was_not_watched_is_not_run(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    known(world, github)
    github.set_labels(REPO, 15, ())
    typo = github.add_comment(REPO, 15, "typo", login="alice")
    world.poll()  # not watched: passed over, nothing recorded
    github.advance(300)
    github.add_issue(REPO, 16, title="Elsewhere")
    github.add_comment(REPO, 16, "elsewhere", login="bob")
    world.poll()  # the cursor moves past the overlap
    github.advance(5)
    github.set_labels(REPO, 15, ("the-loop",))
    world.poll()
    github.advance(5)
    github.edit_comment(typo.id, "the-loop start")
    report = world.poll()
    assert report["commands"] == 0
    assert not world.live(), "an edit started a session"


def test_a_lost_cursor_replays_no_history_into_a_known_item(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    known(world, github)
    github.set_labels(REPO, 15, ())
    github.add_comment(REPO, 15, "old chatter while unwatched", login="alice")
    world.poll()  # passed over: nothing recorded
    github.advance(300)
    github.add_issue(REPO, 16, title="Elsewhere")
    github.add_comment(REPO, 16, "elsewhere", login="bob")
    world.poll()  # the cursor moves past the overlap
    github.advance(5)
    github.set_labels(REPO, 15, ("the-loop",))
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert wait_until(lambda: "PROMPT" in world.read())
    github.advance(5)
    github.add_comment(REPO, 15, "delivered once", login="alice")
    world.poll()
    assert wait_until(lambda: "delivered once" in world.read())
    (world.layout.local_dir / "poll-cursors.json").unlink()
    github.advance(5)
    report = world.poll()  # every comment of the repository read again
    assert (report["commands"], report["delivered"]) == (0, 0)
    world.poll()
    assert world.read().count("delivered once") == 1
    assert "old chatter" not in world.read()
    assert world.live()


def test_first_sight_of_a_start_then_a_pause_leaves_a_paused_session(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.add_comment(REPO, 15, "the-loop pause", login="alice")
    github.add_comment(REPO, 15, "held for later", login="alice")
    report = world.poll()
    assert report["commands"] == 2
    record = world.registry.find_by_work_item(ITEM)
    assert record is not None and record.is_paused
    outcomes = [(e["command"], e["outcome"]) for e in world.events_named("poll.command")]
    assert outcomes == [("start", "started"), ("pause", "paused")]


def test_the_first_comment_of_a_repository_without_any_is_delivered_not_baselined(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    assert world.run("sessions", "start", "--work-item", ITEM, "--no-comment") == 0
    PollState(world.store, registry=world.registry).baseline_comments(ITEM, [])  # a ledger
    assert world.poll()["delivered"] == 0  # no comment anywhere yet
    github.advance(5)
    github.add_comment(REPO, 15, "hello agent", login="alice")
    assert world.poll()["delivered"] == 1
    assert wait_until(lambda: "hello agent" in world.read())
