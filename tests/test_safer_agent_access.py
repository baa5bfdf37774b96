"""A listed login commands only while it can still write to the repository (issue 18, item
27): GitHub is asked once per login per hour (one request, kept in
``local/poll-permissions.json``); without write, maintain or admin the command is refused
as unauthorized with an event; a permission request that fails refuses too, saying so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.test_poll_e2e import ITEM, REPO, TOKEN, PollWorld, github, world  # noqa: F401
from the_loop.github.client import GitHubClient
from the_loop.ref import WorkItemRef

PERMISSION = f"/repos/{REPO}/collaborators/alice/permission"


def permission_requests(fake: FakeGitHub, login: str = "alice") -> int:
    return len(fake.logged("GET", f"/repos/{REPO}/collaborators/{login}/permission"))


def test_a_listed_login_without_write_access_is_refused_with_an_event(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.set_role(REPO, "alice", "read")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    report = world.poll()
    assert report["commands"] == 0 and not world.live()
    [refused] = world.events_named("poll.access_refused")
    assert (refused["login"], refused["permission"], refused["work_item"]) == (
        "alice",
        "read",
        ITEM,
    )
    assert refused["level"] == "warning"
    assert world.events_named("poll.command") == []


@pytest.mark.parametrize("role", ["write", "maintain", "admin"])
def test_write_maintain_and_admin_may_command(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
    role: str,
) -> None:
    github.set_role(REPO, "alice", role)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] == 1 and world.live()
    assert world.events_named("poll.access_refused") == []


def test_a_login_github_does_not_know_is_refused(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.set_role(REPO, "alice", None)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    world.poll()
    assert not world.live()
    assert [e["permission"] for e in world.events_named("poll.access_refused")] == ["none"]


def test_a_login_is_asked_about_once_however_often_it_commands(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    for verb in ("start", "pause", "resume"):
        github.add_comment(REPO, 15, f"the-loop {verb}", login="alice")
        assert world.poll()["commands"] == 1, verb
    assert permission_requests(github) == 1
    kept = json.loads((world.layout.local_dir / "poll-permissions.json").read_text())
    assert [entry["permission"] for entry in kept["answers"].values()] == ["write"]


def test_a_failed_permission_request_refuses_the_command_says_so_and_is_asked_again(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    github.fail_next(PERMISSION, status=502)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert not world.live()
    assert "@alice" in err and "refused" in err and "502" in err, err
    [refused] = world.events_named("poll.access_refused")
    assert refused["permission"] == "unknown" and "502" in refused["error"]
    del code, out

    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] == 1 and world.live()
    assert permission_requests(github) == 2


def test_first_sight_runs_the_last_command_of_a_login_that_may_still_command(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["routing"]["authorizedUsers"] = ["alice", "bob"]
    world.configure(document)
    github.set_role(REPO, "bob", "read")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    github.advance(60)
    github.add_comment(REPO, 15, "the-loop stop", login="bob")
    report = world.poll()  # the repository's first cycle: the thread is met at first sight
    assert report["commands"] == 1 and world.live(), "alice's start is what is owed"
    assert [e["login"] for e in world.events_named("poll.access_refused")] == ["bob"]


def test_without_require_write_access_nobody_is_asked(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["routing"]["requireWriteAccess"] = False
    world.configure(document)
    github.set_role(REPO, "alice", "read")
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    assert world.poll()["commands"] == 1 and world.live()
    assert permission_requests(github) == 0


@pytest.fixture
def plain_github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        yield fake


def test_an_answer_is_kept_for_an_hour_then_asked_again(
    tmp_path: Path, plain_github: FakeGitHub
) -> None:
    from the_loop.adapters.permissions import RepositoryPermissions

    now = [1_000_000.0]
    ref = WorkItemRef.parse(ITEM)
    with GitHubClient(plain_github.url, TOKEN) as client:
        permissions = RepositoryPermissions(
            client, tmp_path / "permissions.json", tmp_path / "p.lock", clock=lambda: now[0]
        )
        assert permissions.permission(ref, "Alice") == "write"
        plain_github.set_role(REPO, "alice", "triage")
        now[0] += 3599
        assert permissions.permission(ref, "alice") == "write", "kept, whatever the case"
        now[0] += 2
        assert permissions.permission(ref, "alice") == "read"
        assert permission_requests(plain_github) == 2
        now[0] -= 60  # a clock set back: an answer from the future is not trusted
        assert permissions.permission(ref, "alice") == "read"
        assert permission_requests(plain_github) == 3
