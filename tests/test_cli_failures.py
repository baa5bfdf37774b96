"""A command whose writes fail never claims the outcome the failure contradicts.

Each test forces a real failure (the state root refuses record writes, see
``tests.helpers.unwritable``) and checks the text report and the JSON document.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.helpers.unwritable import writes_refused
from tests.test_sessions_integration import ITEM, Loop, register_argv
from the_loop.cleanup import cleanup_work_item
from the_loop.cli import main
from the_loop.commands.sessions.cleanup import cleanup_lines
from the_loop.dispatch.disposal import CheckoutDisposal
from the_loop.errors import RemovalIncomplete
from the_loop.eventlog.log import EventLog
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session


@pytest.fixture
def world(tmp_path: Path, tmux_socket: str) -> Loop:  # noqa: F811 - the imported fixture
    """A world of ``tests.test_sessions_integration``: config, state root, tmux socket."""
    made = Loop(tmp_path, tmux_socket)
    made.configure_routing()
    return made


def registered(world: Loop, *, paused: bool = False) -> None:
    """A session registered by hand, with a portable record (``control``) of its own."""
    assert world.run(*register_argv("command", "s1", "--cwd", str(world.tmp_path))) == 0
    for action in ["pause"] if paused else ["pause", "resume"]:
        assert world.run("sessions", action, "--work-item", ITEM, "--no-comment") == 0


def refused(world: Loop, *argv: str) -> tuple[int, str, str]:
    with writes_refused(world.state):
        return world.output(*argv)


def test_a_cleanup_whose_writes_fail_says_it_did_not_clean_up_and_keeps_the_record(world: Loop):
    registered(world)
    code, out, err = refused(world, "sessions", "cleanup", "--work-item", ITEM)
    assert code == 1
    assert out == f"{ITEM}: not cleaned up: 2 steps failed\n"
    assert "nothing local to release" not in out + err
    assert [line.split(": ")[2] for line in err.splitlines()] == ["session record", "control"]
    assert world.listing()[0]["status"] == "active"


def test_a_failed_cleanup_as_json_is_not_ok_and_claims_nothing_removed(world: Loop):
    registered(world)
    code, out, _ = refused(world, "sessions", "cleanup", "--work-item", ITEM, "--format", "json")
    document = json.loads(out)
    [item] = document["items"]
    assert (code, document["ok"], item["recordRemoved"], item["controlRecorded"]) == (
        1,
        False,
        False,
        False,
    )
    assert len(item["errors"]) == 2 and len(document["errors"]) == 2


@pytest.mark.parametrize(
    ("action", "claim"),
    [
        ("pause", "paused"),
        ("resume", "resumed"),
        ("stop", "closed"),
        ("close", "closed"),
        ("start", "already running"),
    ],
)
def test_a_control_action_whose_write_fails_prints_no_outcome(world: Loop, action: str, claim: str):
    registered(world, paused=action == "resume")
    argv = ["sessions", action, "--work-item", ITEM]
    code, out, err = refused(world, *argv, *(["--no-comment"] if action != "close" else []))
    assert (code, out) == (1, "")
    assert claim not in err and err.startswith("error: ")
    code, out, _ = refused(world, *argv, "--format", "json")
    document = json.loads(out)
    assert (code, document["ok"], document["items"]) == (1, False, [])


def test_a_register_whose_write_fails_prints_no_outcome(world: Loop):
    registered(world)
    argv = register_argv("command", "s2", "--cwd", str(world.tmp_path), "--force")
    code, out, err = refused(world, *argv)
    assert (code, out) == (1, "")
    assert "registered" not in err
    assert world.listing()[0]["harnessSessionId"] == "s1"


def test_a_reset_whose_removals_fail_claims_no_removal_and_counts_the_item_failed(world: Loop):
    registered(world)
    code, out, err = refused(world, "sessions", "reset", "--work-item", ITEM)
    assert code == 1
    assert out == "reset 0 work items, 1 failed\n"
    assert "could not remove the session record" in err
    assert world.listing()[0]["status"] == "active"


def test_events_from_a_log_that_cannot_be_read_print_no_events(world: Loop, tmp_path: Path):
    (tmp_path / "a-directory").mkdir()
    argv = ["events", "--file", str(tmp_path / "a-directory")]
    code, out, err = world.output(*argv)
    assert (code, out) == (1, "") and err.startswith("error: ")
    code, out, _ = world.output(*argv, "--format", "json")
    assert (code, json.loads(out)["ok"], json.loads(out)["items"]) == (1, False, [])


# -- the cleanup domain and its report ----------------------------------------------------

REF = WorkItemRef.parse(ITEM)


def test_checkouts_removed_before_a_removal_failed_are_reported_as_removed(tmp_path: Path):
    registry = SessionRegistry(tmp_path / "local")
    registry.register(Session(REF, "command", "s1"))

    def remove_one_of_two(ref: WorkItemRef) -> list[CheckoutDisposal]:
        done = (CheckoutDisposal("/w/a", removed=True),)
        raise RemovalIncomplete("checkout /w/b: busy", removed=("/w/a",), done=done)

    outcome = cleanup_work_item(REF, registry=registry, remove_checkout=remove_one_of_two)
    assert outcome.checkouts_removed == ("/w/a",)
    assert outcome.errors == ("checkout: checkout /w/b: busy",)
    assert outcome.record_removed
    assert cleanup_lines(outcome)[-1] == f"{ITEM}: partly cleaned up: 1 step failed"


def test_a_cleanup_whose_event_cannot_be_appended_says_so(tmp_path: Path):
    (tmp_path / "events.jsonl").mkdir()
    events = EventLog(tmp_path / "events.jsonl")
    outcome = cleanup_work_item(REF, registry=SessionRegistry(tmp_path / "local"), events=events)
    assert outcome.errors == (
        f"event log: could not append the session.cleaned event to {tmp_path / 'events.jsonl'}",
    )
    assert cleanup_lines(outcome) == [f"{ITEM}: not cleaned up: 1 step failed"]


def test_a_dry_run_that_could_not_look_everywhere_does_not_say_there_is_nothing(tmp_path: Path):
    def unreadable(ref: WorkItemRef) -> list[CheckoutDisposal]:
        raise OSError(13, "Permission denied", "/w")

    outcome = cleanup_work_item(
        REF, registry=SessionRegistry(tmp_path / "local"), dry_run=True, find_checkouts=unreadable
    )
    assert outcome.errors == ("checkout: Permission denied (/w)",)
    assert cleanup_lines(outcome) == [
        f"{ITEM}: dry run incomplete: 1 step failed (nothing was changed)"
    ]


# -- state check ----------------------------------------------------------------------------


def test_a_state_check_that_could_not_read_a_checkout_does_not_say_nothing_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {tmp_path / 'state'}\n", encoding="utf-8")
    checkout = tmp_path / "checkout"
    (checkout / "docs").mkdir(parents=True)
    (checkout / "docs" / "specs").symlink_to("specs")  # a loop: it cannot be listed
    argv = ["--config", str(config), "state", "check", "--no-discover", "--checkout", str(checkout)]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "nothing retired is left" not in out
    assert out == "no retired location found, but 1 of the places to look could not be read\n"
    assert err.startswith(f"error: could not look in {checkout / 'docs' / 'specs'}: ")
    assert main([*argv, "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert (document["ok"], document["summary"]["clean"]) == (False, False)
    assert len(document["summary"]["unscanned"]) == 1
