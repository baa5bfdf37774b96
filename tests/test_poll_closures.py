"""Closing through the poller, end to end (the fake GitHub, real tmux, real git): who
closed the ticket decides whether its checkout is cleaned up, and a reopen clears the
closed state so that a start comment spawns again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import wait_until
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.adapters.actions import Actions
from the_loop.ref import WorkItemRef

TITLE = "Fix the wobbling widget"


def started(poll_world: PollWorld, fake: FakeGitHub) -> Path:
    """An authorized start comment spawned the agent; its checkout."""
    fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_world.poll()["commands"] == 1
    record = poll_world.registry.find_by_work_item(ITEM)
    assert record is not None and record.cwd
    assert wait_until(lambda: TITLE in poll_world.read())
    return Path(record.cwd)


def closed_state(poll_world: PollWorld) -> object:
    ledger = poll_world.store.section(ITEM, "poll")
    return ledger.get("state") if isinstance(ledger, dict) else None


def test_an_issue_closed_by_an_authorized_login_ends_its_session_and_removes_its_checkout(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    checkout = started(world, github)
    github.advance(5)
    github.set_state(REPO, 15, "closed", by="Alice")
    assert world.poll()["closed"] == 1
    assert not world.live()
    assert not checkout.exists(), "a clean checkout is cleaned up when the closer may"
    [event] = world.events_named("poll.closure")
    assert (event["action"], event["state"], event["cleanup"]) == ("close-session", "closed", True)
    assert event["closed_by"] == "Alice"
    assert closed_state(world) == "closed"


def test_an_issue_closed_by_someone_not_authorized_ends_its_session_but_keeps_its_checkout(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    checkout = started(world, github)
    github.advance(5)
    github.set_state(REPO, 15, "closed", by="mallory")
    assert world.poll()["closed"] == 1
    assert not world.live()
    assert checkout.is_dir() and (checkout / "README.md").exists()
    [event] = world.events_named("poll.closure")
    assert (event["cleanup"], event["closed_by"]) == (False, "mallory")
    [closed] = world.events_named("session.closed")
    assert "not closed by an authorized user" in closed["reason"]


def test_an_authorized_close_keeps_a_checkout_holding_uncommitted_work(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    checkout = started(world, github)
    (checkout / "notes.txt").write_text("work in progress\n", encoding="utf-8")
    github.advance(5)
    github.set_state(REPO, 15, "closed", by="alice")
    world.poll()
    assert not world.live()
    assert (checkout / "notes.txt").read_text(encoding="utf-8") == "work in progress\n"


def test_a_reopened_issue_clears_its_closed_state_and_a_start_comment_spawns_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    started(world, github)
    github.advance(5)
    github.set_state(REPO, 15, "closed", by="alice")
    world.poll()
    assert closed_state(world) == "closed" and not world.live()

    github.advance(5)
    github.set_state(REPO, 15, "open")
    world.poll()
    assert closed_state(world) is None
    events = world.events_named("poll.closure")
    assert [e["action"] for e in events] == ["close-session", "clear-closed"]
    assert events[1]["previous_state"] == "closed"
    world.poll()
    assert len(world.events_named("poll.closure")) == 2, "cleared once"

    world.agent_file.unlink()
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] == 1
    assert world.live()
    assert wait_until(lambda: TITLE in world.read())


def test_a_reopen_after_a_close_by_someone_not_authorized_lets_a_start_spawn_again(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
) -> None:
    started(world, github)
    github.advance(5)
    github.set_state(REPO, 15, "closed", by="mallory")
    world.poll()
    github.advance(5)
    github.set_state(REPO, 15, "open")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.agent_file.unlink()
    report = world.poll()
    assert report["commands"] == 1 and not report["failed"]
    assert world.live() and closed_state(world) is None
    actions = [e["action"] for e in world.events_named("poll.closure")]
    assert actions == ["close-session", "clear-closed"]
    assert wait_until(lambda: TITLE in world.read())


def test_a_signal_during_the_closures_finishes_the_one_under_way_and_the_next_cycle_ends_the_rest(
    world: PollWorld,  # noqa: F811
    github: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    github.add_issue(REPO, 16, title="Second ticket", body="", labels=("the-loop",))
    for number in (15, 16):
        github.add_comment(REPO, number, "the-loop start", login="alice")
    assert world.poll()["commands"] == 2
    github.advance(5)
    for number in (15, 16):
        github.set_state(REPO, number, "closed", by="alice")
    close = Actions.close
    signalled: list[WorkItemRef] = []

    def close_then_signal(actions: Actions, ref: WorkItemRef, cleanup: bool) -> tuple[int, int]:
        done = close(actions, ref, cleanup)
        if not signalled:  # once: a second SIGTERM has its usual effect
            signalled.append(ref)
            os.kill(os.getpid(), signal.SIGTERM)  # the poller's own handler takes it
        return done

    monkeypatch.setattr(Actions, "close", close_then_signal)
    first = world.poll()
    assert (first["closed"], first["stopped"]) == (1, True)
    assert len(world.registry.list_sessions()) == 1, "only the closure under way ran"
    monkeypatch.setattr(Actions, "close", close)
    second = world.poll()
    assert (second["closed"], second["stopped"]) == (1, False)
    assert world.registry.list_sessions() == []
    assert len(world.events_named("poll.closure")) == 2
