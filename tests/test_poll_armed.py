"""Armed items are watched: `the-loop poll --once` against the loopback fake GitHub, with an
item that carries no label and has no session here, only a `control` record whose last
command arms it — written as another machine would (through its own store, or arriving
as files, like a `git pull`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_poll_e2e import REPO, TOKEN, PollWorld
from the_loop.portable.control import ControlStore
from the_loop.portable.store import WorkItemStore

ARMED = "github:octo/app#20"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        yield fake


@pytest.fixture
def world(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> PollWorld:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return PollWorld(tmp_path, tmux_socket, github)


def other_machine_records(world: PollWorld, command: str) -> ControlStore:
    """A second store on the same ``portable/``, as another machine's records arrive."""
    layout = world.layout
    store = WorkItemStore(layout.portable_dir, locks_dir=layout.root / "locks" / "portable")
    control = ControlStore(layout.portable_dir, store=store)
    control.record(ARMED, command, source="comment", actor="alice")
    return control


def test_an_armed_item_is_watched_its_comments_seen_and_its_stop_run(
    world: PollWorld, github: FakeGitHub
) -> None:
    github.add_issue(REPO, 20, title="Armed elsewhere")
    other_machine_records(world, "start")
    github.add_comment(REPO, 20, "an older note", login="alice")
    assert world.poll()["baselined"] == 1  # first sight: its comments so far are history

    github.add_comment(REPO, 20, "a plain note", login="alice")
    assert world.poll()["seen"] == 1
    ledger = world.store.section(ARMED, "poll")
    assert ledger is not None, "a watched item's comment is recorded in its ledger"

    github.add_comment(REPO, 20, "the-loop stop", login="alice")
    assert world.poll()["commands"] == 1
    entry = world.control.get(ARMED)
    assert entry is not None and entry.command == "stop"

    github.add_comment(REPO, 20, "after the stop", login="alice")
    report = world.poll()
    assert (report["seen"], report["commands"]) == (0, 0), "a disarmed item is not watched"


def test_a_disarmed_item_is_not_watched(world: PollWorld, github: FakeGitHub) -> None:
    github.add_issue(REPO, 20, title="Stopped elsewhere")
    other_machine_records(world, "stop")
    github.add_comment(REPO, 20, "an older note", login="alice")
    assert world.poll()["baselined"] == 0
    github.add_comment(REPO, 20, "the-loop start", login="alice")
    github.add_comment(REPO, 20, "a plain note", login="alice")
    report = world.poll()
    assert (report["seen"], report["commands"], report["baselined"]) == (0, 0, 0)
    assert world.store.section(ARMED, "poll") is None
    assert not world.live()


def test_a_record_that_arrived_as_a_file_is_watched_after_one_warning(
    world: PollWorld, github: FakeGitHub, tmp_path: Path
) -> None:
    """Like a ``git pull``: the record lands beside an index that does not list it."""
    github.add_issue(REPO, 20, title="Pulled in")
    elsewhere = tmp_path / "elsewhere"
    store = WorkItemStore(elsewhere / "portable", locks_dir=elsewhere / "locks")
    ControlStore(elsewhere / "portable", store=store).record(ARMED, "start", actor="alice")
    world.store.write_section("github:octo/app#15", "control", {"command": "stop"})
    shutil.copy(store.path_for(ARMED), world.layout.portable_dir / store.path_for(ARMED).name)

    github.add_comment(REPO, 20, "an older note", login="alice")
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0, err
    assert err.count("did not match the records") == 1, err
    assert json.loads(out)["summary"]["baselined"] == 1
    github.add_comment(REPO, 20, "a plain note", login="alice")
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert (code, err) == (0, "")
    assert json.loads(out)["summary"]["seen"] == 1
