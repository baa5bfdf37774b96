"""`the-loop sessions register | link-pr | list | attach | close | start | pause | resume |
stop | cleanup`, driven through ``main([...])`` with real tmux (a private socket per test)
and real git (a local bare repository as the remote)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import kill_server, tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.cli import build_parser
from the_loop.commands.sessions.attach import run_attach
from the_loop.commands.sessions.records import LIST_HEADERS
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.errors import TheLoopError
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemState, WorkItemStateFile
from the_loop.sessions.session import Session

ITEM = "github:octo/app#15"
PR = "github:octo/app#16"
AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]
TARGET = "loop-github-octo-app-15"
NO_TICKET_WARNING = (
    f"warning: {ITEM}: could not read the ticket (no token: set $GITHUB_TOKEN or $GH_TOKEN); "
    "the agent's prompt has no title or body\n"
)


class Loop(World):
    """One test's world (the shared one): a config file, a state root, a workspace root
    and a tmux socket."""

    def __init__(self, tmp_path: Path, socket: str) -> None:
        super().__init__(tmp_path)
        self.tmp_path = tmp_path
        self.socket = socket
        self.remote: Path | None = None

    @property
    def state(self) -> Path:
        return self.layout.root

    @property
    def workspace(self) -> Path:
        return self.tmp_path / "workspaces"

    @property
    def worktree(self) -> Path:
        return self.workspace / ".worktrees" / "github.com" / "octo" / "app" / "github-octo-app-15"

    def remote_repository(self) -> Path:
        if self.remote is None:
            self.remote = make_remote(self.tmp_path, "app")
        return self.remote

    def configure_routing(self, **routing: Any) -> None:
        """Write the config: the defaults below, with ``routing`` merged on top (one level)."""
        base: dict[str, Any] = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": AGENT}},
            "workspace": {
                "root": str(self.workspace),
                "repositories": {"octo/app": str(self.remote_repository())},
            },
            # No wait for the agent to come up (tests/test_sessions_start_wait.py has its own).
            "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 3, "startWaitSeconds": 0},
        }
        for key, value in routing.items():
            merged = {**base.get(key, {}), **value} if isinstance(value, dict) else value
            base[key] = merged
        self.configure({"routing": base})

    def output(self, *argv: str) -> tuple[int, str, str]:
        return self.run_cli(argv)

    def listing(self, *extra: str) -> list[dict[str, Any]]:
        code, out, _ = self.output("sessions", "list", "--format", "json", *extra)
        assert code == 0
        return json.loads(out)["items"]

    def tmux(self) -> TmuxRunner:
        return TmuxRunner(socket=self.socket, timeout=30)

    def events_named(self, name: str) -> list[dict[str, Any]]:
        log = self.layout.event_log
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [event for event in map(json.loads, lines) if event["event"] == name]

    def portable(self, slug: str = "github-octo-app-15") -> dict[str, Any]:
        return json.loads((self.state / "portable" / f"{slug}.json").read_text(encoding="utf-8"))


@pytest.fixture
def loop(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> Iterator[Loop]:
    world = Loop(tmp_path, tmux_socket)
    world.configure_routing()
    yield world


class ExecRecorder:
    """Stands in for ``os.execvp``: remembers the argv instead of replacing the process."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, file: str, argv: list[str]) -> None:
        self.calls.append([file, *argv[1:]] if argv and argv[0] == file else [file, *argv])


def register_argv(harness: str, session_id: str, *extra: str, work_item: str = ITEM) -> list[str]:
    return [
        "sessions",
        "register",
        "--work-item",
        work_item,
        "--harness",
        harness,
        "--harness-session-id",
        session_id,
        *extra,
    ]


def attach(loop: Loop, *argv: str, work_item: str = ITEM) -> list[str]:
    """Run ``sessions attach`` with an injected exec; the argv it would have run."""
    args = build_parser().parse_args(
        ["--config", str(loop.config_path), "sessions", "attach", "--work-item", work_item, *argv]
    )
    recorder = ExecRecorder()
    assert run_attach(args, execvp=recorder, has_terminal=lambda: True).exit_code == 0
    assert len(recorder.calls) == 1
    return recorder.calls[0]


# -- register ----------------------------------------------------------------------


def test_register_records_a_hand_started_session_that_list_then_shows(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "by-hand"
    checkout.mkdir()
    code, out, _ = loop.output(*register_argv("command", "abc-123", "--cwd", str(checkout)))
    assert code == 0
    assert out == f"{ITEM}: registered command session abc-123 in {checkout}\n"
    [row] = loop.listing()
    assert row["workItem"] == ITEM
    assert (row["harness"], row["harnessSessionId"], row["cwd"]) == (
        "command",
        "abc-123",
        str(checkout),
    )
    assert row["status"] == "active" and row["tmuxTarget"] == "" and row["control"] is None
    assert [event["work_item"] for event in loop.events_named("session.registered")] == [ITEM]


def test_register_refuses_a_second_live_session_without_force_and_replaces_it_with_force(
    loop: Loop,
):
    register = ("sessions", "register", "--work-item", ITEM, "--harness", "command")
    assert loop.run(*register, "--harness-session-id", "first") == 0
    code, out, err = loop.output(*register, "--harness-session-id", "second")
    assert code == 2
    assert out == "" and err.startswith("error: ") and "--force" in err
    assert loop.listing()[0]["harnessSessionId"] == "first"

    assert loop.run(*register, "--harness-session-id", "second", "--force") == 0
    assert loop.listing()[0]["harnessSessionId"] == "second"


def test_register_warns_but_registers_when_the_harness_binary_is_not_on_path(loop: Loop):
    loop.configure_routing(harnesses={"claude": {"binary": "no-such-claude-binary"}})
    code, _, err = loop.output(*register_argv("claude", "0f1c"))
    assert code == 0
    assert "warning: the claude binary 'no-such-claude-binary' is not on PATH" in err
    assert loop.listing()[0]["harness"] == "claude"


def test_register_refuses_a_cwd_that_is_not_a_directory_and_touches_nothing(loop: Loop):
    missing = loop.tmp_path / "missing"
    code, _, err = loop.output(*register_argv("command", "x", "--cwd", str(missing)))
    assert code == 2 and "not a directory" in err
    assert not loop.state.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["register", "--harness", "command", "--harness-session-id", "x"],
        ["link-pr", "--pull-request", "16"],
        ["attach"],
        ["close"],
        ["start"],
        ["pause"],
        ["resume"],
        ["stop"],
        ["cleanup"],
    ],
)
@pytest.mark.parametrize("bad_ref", ["github:/octo/app#15", "gh:octo/app#15", "github:octo/app#0"])
def test_a_bad_work_item_ref_exits_2_and_touches_nothing(loop: Loop, argv: list[str], bad_ref: str):
    code, out, err = loop.output("sessions", argv[0], "--work-item", bad_ref, *argv[1:])
    assert code == 2
    assert out == "" and "invalid work item" in err
    assert not loop.state.exists()


def test_a_bad_session_id_is_a_usage_error(loop: Loop):
    code, _, err = loop.output(*register_argv("command", "has space"))
    assert code == 2 and "invalid session id" in err
    assert not loop.state.exists()


# -- link-pr -----------------------------------------------------------------------


def _register(loop: Loop, cwd: Path | None = None) -> None:
    extra = ["--cwd", str(cwd)] if cwd is not None else []
    assert loop.run(*register_argv("command", "s-1", *extra)) == 0


def test_link_pr_exits_1_when_the_work_item_has_no_session_record(loop: Loop):
    code, out, err = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", "16")
    assert code == 1 and out == ""
    assert (
        err == f"error: {ITEM} has no session record on this machine; start or register one first\n"
    )
    assert not (loop.state / "portable").exists()


@pytest.mark.parametrize("pull_request", ["15", "#15", ITEM, "github:github.com/octo/app#15"])
def test_link_pr_refuses_a_self_link_with_exit_2(loop: Loop, pull_request: str):
    _register(loop)
    code, _, err = loop.output(
        "sessions", "link-pr", "--work-item", ITEM, "--pull-request", pull_request
    )
    assert code == 2 and "cannot be linked to itself" in err
    assert loop.listing()[0]["pullRequests"] == []


@pytest.mark.parametrize("pull_request", ["0", "#", "-3", "gh:octo/app#16", "github:octo/app#x"])
def test_link_pr_refuses_a_bad_pull_request_with_exit_2(loop: Loop, pull_request: str):
    _register(loop)
    code, _, _ = loop.output(
        "sessions", "link-pr", "--work-item", ITEM, f"--pull-request={pull_request}"
    )
    assert code == 2
    assert loop.listing()[0]["pullRequests"] == []


def test_link_pr_records_the_pull_request_in_all_three_files_once(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    state_file = WorkItemStateFile(checkout, WorkItemRef.parse(ITEM))
    state_file.save(WorkItemState(work_item=ITEM))
    _register(loop, checkout)

    code, out, _ = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", "#16")
    assert code == 0 and out == f"{ITEM}: linked pull request {PR}\n"
    code, out, _ = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", PR)
    assert code == 0 and out == f"{ITEM}: already linked pull request {PR}\n"

    [row] = loop.listing()
    assert [endpoint["workItem"] for endpoint in row["pullRequests"]] == [PR]
    assert loop.portable()["pullRequests"] == {PR: {"seenComments": [], "commentAttempts": {}}}
    assert [entry.ref for entry in state_file.load().pull_requests] == [PR]
    assert len(loop.events_named("session.pr_linked")) == 1


def test_link_pr_leaves_a_checkout_without_a_state_file_alone(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "plain"
    checkout.mkdir()
    _register(loop, checkout)
    assert (
        loop.run("sessions", "link-pr", "--work-item", ITEM, "--pull-request", "github:octo/lib#7")
        == 0
    )
    assert list(checkout.iterdir()) == []
    assert loop.portable()["pullRequests"] == {
        "github:octo/lib#7": {"seenComments": [], "commentAttempts": {}}
    }


# -- list --------------------------------------------------------------------------


def test_an_empty_list_prints_nothing_in_a_table_and_an_empty_document_in_json(loop: Loop):
    said = f"note: no sessions in the state root {loop.state} (state.root in {loop.config_path})\n"
    assert loop.output("sessions", "list") == (0, "", said)
    code, out, err = loop.output("sessions", "list", "--format", "json")
    document = json.loads(out)
    assert (code, document["command"], document["items"], err) == (0, "sessions list", [], said)


def test_list_filters_by_status_and_shows_the_last_control_command(loop: Loop):
    _register(loop)
    other = "github:octo/app#21"
    assert loop.run(*register_argv("claude", "s-2", work_item=other)) == 0
    assert loop.run("sessions", "pause", "--work-item", other) == 0

    assert [row["workItem"] for row in loop.listing()] == [ITEM, other]
    [paused] = loop.listing("--status", "paused")
    assert (paused["workItem"], paused["status"], paused["control"]) == (other, "paused", "pause")
    assert loop.listing("--status", "closed") == []

    code, out, _ = loop.output("sessions", "list")
    assert code == 0
    header, first, second = out.splitlines()
    assert header.split() == " ".join(LIST_HEADERS).split()
    assert first.split()[:7] == [ITEM, "command", "s-1", "-", "active", "-", "-"]
    assert second.split()[:7] == [other, "claude", "s-2", "-", "paused", "-", "pause"]


def test_list_says_whether_each_agent_runs_has_exited_or_is_gone_and_where_its_checkout_is(
    loop: Loop,
):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    [row] = loop.listing()
    assert (row["agent"]["state"], row["checkout"]) in {
        ("working", str(loop.worktree)),
        ("idle", str(loop.worktree)),
    }
    assert row["agent"]["blockedOn"] is None and row["agent"]["since"] is not None
    loop.tmux().terminate_harness(TARGET, grace_seconds=5)
    [row] = loop.listing()
    assert (row["status"], row["agent"]["state"]) == ("active", "exited")
    status = row["agent"]["exitStatus"]
    code, out, _ = loop.output("sessions", "list")
    shown = (
        ["exited", str(loop.worktree)] if status is None else [f"({status})", str(loop.worktree)]
    )
    assert code == 0 and out.splitlines()[1].split()[-2:] == shown
    kill_server(loop.socket)
    [row] = loop.listing()
    assert (row["status"], row["agent"]["state"]) == ("active", "gone")


def test_list_says_unknown_without_a_tmux_binary_and_fails_nothing(loop: Loop, tmp_path: Path):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    loop.configure_routing(tmux={"binary": str(tmp_path / "no-such-tmux")})
    [row] = loop.listing()
    assert (row["agent"]["state"], row["checkout"]) == ("unknown", str(loop.worktree))
    code, _, err = loop.output("sessions", "list")
    assert (code, err) == (0, "")


def test_list_shows_a_dash_for_a_checkout_that_no_longer_exists(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "hand-checkout"
    checkout.mkdir()
    _register(loop, checkout)
    checkout.rmdir()
    [row] = loop.listing()
    assert (row["agent"]["state"], row["checkout"]) == ("unknown", None)
    code, out, _ = loop.output("sessions", "list")
    assert code == 0 and out.splitlines()[1].split()[-2:] == ["unknown", "—"]


def test_list_skips_an_unreadable_record_with_a_warning(loop: Loop):
    _register(loop)
    (loop.state / "local" / "github-octo-app-99.json").write_text("{not json", encoding="utf-8")
    (loop.state / "local" / "notes.txt").write_text("a stranger's file", encoding="utf-8")
    code, out, err = loop.output("sessions", "list", "--format", "json")
    assert code == 0
    assert [row["workItem"] for row in json.loads(out)["items"]] == [ITEM]
    assert "warning: skipping unreadable session record" in err and "github-octo-app-99" in err
    assert "notes.txt" not in err


# -- attach errors -----------------------------------------------------------------


def test_attach_without_a_record_exits_1(loop: Loop):
    code, out, err = loop.output("sessions", "attach", "--work-item", ITEM)
    assert (code, out) == (1, "")
    assert err == (
        f"error: {ITEM} has no session record in the state root {loop.state} "
        f"(state.root in {loop.config_path}); run it where the work item's .the-loop/ is, "
        "or name that state root with --state-root\n"
    )


def test_attach_to_a_hand_registered_session_without_tmux_exits_1(loop: Loop):
    _register(loop)
    code, _, err = loop.output("sessions", "attach", "--work-item", ITEM)
    assert code == 1 and "has no tmux session" in err


# -- start / pause / resume / stop / cleanup with real tmux and git -------------------


def _controls(loop: Loop) -> list[str]:
    return [event["command"] for event in loop.events_named("control.recorded")]


def _shows(loop: Loop, text: str, target: str = TARGET) -> bool:
    return text in loop.tmux().capture(target)


def test_the_whole_life_of_a_session_from_start_to_cleanup(loop: Loop):
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert (code, err) == (0, NO_TICKET_WARNING)  # no token: the prompt has the URL only
    [row] = loop.listing()
    session_id = row["harnessSessionId"]
    assert (
        out == f"{ITEM}: started command session {session_id} in tmux {TARGET} in {loop.worktree}\n"
    )
    assert (row["status"], row["tmuxTarget"], row["control"]) == ("active", TARGET, "start")
    assert row["cwd"] == str(loop.worktree)
    assert loop.tmux().liveness(TARGET) == "live"
    assert wait_until(lambda: _shows(loop, f"agent {session_id} ready"))
    code, out, _ = loop.output("sessions", "list")
    assert out.splitlines()[1].split()[:7] == [
        ITEM,
        "command",
        session_id,
        TARGET,
        "active",
        "-",  # SPENT: nothing metered yet
        "start",
    ]

    assert loop.output("sessions", "pause", "--work-item", ITEM)[1] == (
        f"{ITEM}: paused the command session; events are held until resume\n"
    )
    [row] = loop.listing()
    assert (row["status"], row["control"]) == ("paused", "pause")
    assert loop.tmux().liveness(TARGET) == "live"
    assert "-r" not in attach(loop)

    code, out, _ = loop.output("sessions", "resume", "--work-item", ITEM)
    assert code == 0 and out.startswith(f"{ITEM}: resumed the command session")
    [row] = loop.listing()
    assert (row["status"], row["control"], row["harnessSessionId"]) == (
        "active",
        "resume",
        session_id,
    )

    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0
    assert out == (
        f"{ITEM}: closed the command session; kept tmux {TARGET} for its transcript\n"
        f"{ITEM}: removed the checkout {loop.worktree} (clean)\n"
    )
    [row] = loop.listing()
    assert (row["status"], row["control"]) == ("closed", "stop")
    assert loop.tmux().liveness(TARGET) == "dead"
    assert not loop.worktree.exists()
    assert attach(loop) == ["tmux", "-L", loop.socket, "attach-session", "-r", "-t", f"={TARGET}"]

    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM)
    assert code == 0
    assert out == (
        f"{ITEM}: ended tmux session {TARGET}\n"
        f"{ITEM}: removed the session record\n"
        f"{ITEM}: cleaned up\n"
    )
    assert loop.tmux().liveness(TARGET) == "absent"
    assert loop.listing() == []
    assert loop.portable()["control"]["command"] == "cleanup"
    assert _controls(loop) == ["start", "pause", "resume", "stop", "cleanup"]
    assert {event["actor"] for event in loop.events_named("control.recorded")} == {os_user()}


def os_user() -> str:
    from the_loop.commands.common import current_user

    return current_user()


def test_stop_kills_tmux_and_keeps_the_checkout_when_configured_so(loop: Loop):
    loop.configure_routing(
        tmux={"keepSessionOnClose": False}, workspace={"keepCheckoutOnClose": True}
    )
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0
    assert out == (
        f"{ITEM}: closed the command session; killed tmux {TARGET}; "
        f"kept its checkout {loop.worktree}\n"
    )
    assert loop.tmux().liveness(TARGET) == "absent"
    assert (loop.worktree / "README.md").is_file()


def test_close_takes_the_close_path_with_the_tmux_flag_and_records_no_control(loop: Loop):
    code, _, err = loop.output("sessions", "close", "--work-item", ITEM)
    assert code == 1 and err == f"error: {ITEM} has no live session on this machine\n"

    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    code, out, _ = loop.output("sessions", "close", "--work-item", ITEM, "--kill-tmux")
    assert code == 0 and f"killed tmux {TARGET}" in out
    assert loop.tmux().liveness(TARGET) == "absent"
    assert loop.listing()[0]["status"] == "closed"
    assert _controls(loop) == ["start"]
    assert loop.run("sessions", "close", "--work-item", ITEM) == 1
    assert loop.run("sessions", "close", "--work-item", ITEM, "--keep-tmux", "--kill-tmux") == 2


def test_close_keep_tmux_keeps_the_transcript_even_when_the_config_kills(loop: Loop):
    loop.configure_routing(tmux={"keepSessionOnClose": False})
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "close", "--work-item", ITEM, "--keep-tmux") == 0
    assert loop.tmux().liveness(TARGET) == "dead"


def test_stop_ends_a_pull_request_endpoint_with_a_tmux_session_of_its_own(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "link-pr", "--work-item", ITEM, "--pull-request", "16") == 0
    pr_target = "loop-github-octo-app-16"
    loop.tmux().spawn(pr_target, loop.tmp_path, ["bash", "-c", "echo pr agent; exec sleep 600"])
    registry = loop.registry
    record = registry.find_by_work_item(ITEM)
    assert record is not None
    endpoint = record.endpoint_for(PR)
    assert endpoint is not None
    handles = Session(endpoint.work_item, "command", "pr-1", tmux_target=pr_target)
    registry.save_endpoint(ITEM, handles)
    assert loop.tmux().liveness(pr_target) == "live"
    assert attach(loop, work_item=PR)[-1] == f"={pr_target}"

    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0 and f"kept tmux {TARGET}, {pr_target} for its transcript" in out
    assert loop.tmux().liveness(pr_target) == "dead"
    assert loop.tmux().liveness(TARGET) == "dead"
    [row] = loop.listing()
    assert [endpoint["status"] for endpoint in row["pullRequests"]] == ["closed"]


def test_stop_keeps_the_pane_of_a_hand_started_tmux_session_without_remain_on_exit(loop: Loop):
    checkout = loop.tmp_path / "by-hand"
    checkout.mkdir()
    _register(loop, checkout)
    argv = ["tmux", "-L", loop.socket, "new-session", "-d", "-s", TARGET, "-c", str(checkout)]
    subprocess.run([*argv, "bash -c 'echo hand agent; exec sleep 600'"], check=True)
    registry = loop.registry
    record = registry.find_by_work_item(ITEM)
    assert record is not None
    registry.save_endpoint(ITEM, replace(record, pull_requests=(), tmux_target=TARGET))
    assert wait_until(lambda: _shows(loop, "hand agent"))
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0 and f"kept tmux {TARGET} for its transcript" in out
    assert loop.tmux().liveness(TARGET) == "dead"
    assert _shows(loop, "hand agent")


HAND_AGENT = "bash -c 'echo hand agent; exec sleep 600'"


def _hand_started(loop: Loop, *tmux_after: str, agent: str = HAND_AGENT) -> None:
    """A tmux session started by hand (then ``tmux_after`` run on it), registered as ITEM's."""
    checkout = loop.tmp_path / "by-hand"
    checkout.mkdir()
    _register(loop, checkout)
    argv = ["tmux", "-L", loop.socket, "new-session", "-d", "-s", TARGET, "-c", str(checkout)]
    subprocess.run([*argv, agent], check=True)
    if tmux_after:
        subprocess.run(["tmux", "-L", loop.socket, *tmux_after], check=True)
    record = loop.registry.find_by_work_item(ITEM)
    assert record is not None
    loop.registry.save_endpoint(ITEM, replace(record, pull_requests=(), tmux_target=TARGET))
    assert wait_until(lambda: _shows(loop, "hand agent"))


def test_stop_keeps_the_pane_of_a_session_whose_pane_itself_has_remain_on_exit_off(loop: Loop):
    _hand_started(loop, "set-option", "-p", "-t", f"={TARGET}:", "remain-on-exit", "off")
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0 and f"kept tmux {TARGET} for its transcript" in out
    assert loop.tmux().liveness(TARGET) == "dead"
    assert _shows(loop, "hand agent")


def test_a_close_whose_tmux_session_ended_with_its_harness_claims_no_transcript(loop: Loop):
    # The agent ends its own tmux session as it exits: no pane is left to keep.
    ends_its_session = f"tmux -L {loop.socket} kill-session -t ={TARGET}"
    agent = f"bash -c 'trap \"{ends_its_session}; exit\" TERM; echo hand agent; sleep 600 & wait'"
    _hand_started(loop, agent=agent)
    code, out, _ = loop.output("sessions", "stop", "--work-item", ITEM)
    assert code == 0
    assert out == f"{ITEM}: closed the command session; tmux {TARGET} is gone: no transcript kept\n"
    assert loop.tmux().liveness(TARGET) == "absent"
    assert loop.listing()[0]["status"] == "closed"
    assert loop.events_named("session.retained") == []


def test_a_new_spawn_keeps_the_retained_transcript_under_a_new_name_and_says_so(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    first = loop.listing()[0]["harnessSessionId"]
    assert wait_until(lambda: _shows(loop, f"agent {first} ready"))
    assert loop.run("sessions", "stop", "--work-item", ITEM) == 0
    code, out, _ = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0
    started, kept_line = out.splitlines()
    assert started.startswith(f"{ITEM}: started command session")
    prefix = f"{ITEM}: kept the previous transcript as tmux session {TARGET}~"
    assert kept_line.startswith(prefix)
    kept = kept_line.removeprefix(f"{ITEM}: kept the previous transcript as tmux session ")
    assert loop.tmux().liveness(kept) == "dead"
    assert f"agent {first} ready" in loop.tmux().capture(kept)
    assert loop.tmux().liveness(TARGET) == "live"
    rows = loop.listing("--all")
    assert [(row["workItem"], row["tmuxTarget"], row["status"]) for row in rows] == [
        (ITEM, TARGET, "active"),
        (ITEM, kept, "retained"),
    ]
    assert rows[0]["agent"]["state"] in ("working", "idle")
    assert rows[1]["agent"]["state"] == "exited"
    assert [row["tmuxTarget"] for row in loop.listing()] == [TARGET]


def test_cleanup_ends_the_transcripts_kept_under_new_names_and_says_so(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "stop", "--work-item", ITEM) == 0
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    [kept] = [row["tmuxTarget"] for row in loop.listing("--all") if row["status"] == "retained"]
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--dry-run")
    assert code == 0 and f"{ITEM}: would end tmux session {kept} (a kept transcript)\n" in out
    assert loop.tmux().liveness(kept) == "dead"
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM)
    assert code == 0
    assert out.startswith(
        f"{ITEM}: ended tmux session {TARGET}\n"
        f"{ITEM}: ended tmux session {kept} (a kept transcript)\n"
    )
    assert (loop.tmux().liveness(TARGET), loop.tmux().liveness(kept)) == ("absent", "absent")
    assert loop.listing("--all") == []
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM)
    assert (code, out) == (0, f"{ITEM}: nothing local to release\n")


def test_reset_says_it_keeps_the_transcripts_and_what_ends_them(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "stop", "--work-item", ITEM) == 0
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    [kept] = [row["tmuxTarget"] for row in loop.listing("--all") if row["status"] == "retained"]
    ends_it = f"`the-loop sessions cleanup --work-item '{ITEM}'` ends it\n"
    code, out, _ = loop.output("sessions", "reset", "--work-item", ITEM, "--dry-run")
    assert code == 0
    assert (
        f"{ITEM}: would keep tmux {TARGET}, {kept} for the transcript (a reset never ends one); "
        + ends_it
    ) in out
    code, out, _ = loop.output("sessions", "reset", "--work-item", ITEM)
    assert code == 0
    assert (
        f"{ITEM}: kept tmux {TARGET}, {kept} for the transcript (a reset never ends one); "
        + ends_it
    ) in out
    assert (loop.tmux().liveness(TARGET), loop.tmux().liveness(kept)) == ("dead", "dead")
    assert loop.run("sessions", "cleanup", "--work-item", ITEM) == 0
    assert loop.listing("--all") == []


def test_start_on_a_running_session_says_so_and_records_one_start(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    session_id = loop.listing()[0]["harnessSessionId"]
    code, out, _ = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0
    assert out == f"{ITEM}: already running: command session {session_id} in tmux {TARGET}\n"
    assert _controls(loop) == ["start", "start"]
    assert len(loop.events_named("session.spawned")) == 1


def test_start_resumes_a_paused_session_instead_of_spawning(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "pause", "--work-item", ITEM) == 0
    code, out, _ = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0 and out.startswith(f"{ITEM}: resumed the paused command session")
    [row] = loop.listing()
    assert (row["status"], row["control"]) == ("active", "start")
    assert _controls(loop) == ["start", "pause", "start"]
    assert len(loop.events_named("session.spawned")) == 1


def test_start_restarts_an_active_session_whose_agent_has_ended(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    session_id = loop.listing()[0]["harnessSessionId"]
    loop.tmux().terminate_harness(TARGET, grace_seconds=5)
    assert loop.tmux().liveness(TARGET) == "dead"
    code, out, _ = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0 and out.startswith(f"{ITEM}: resumed the ended command session {session_id}")
    assert loop.tmux().liveness(TARGET) == "live"
    assert _controls(loop) == ["start", "start"]


def test_resume_restarts_a_paused_agent_whose_tmux_session_is_gone(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "pause", "--work-item", ITEM) == 0
    loop.tmux().kill(TARGET)
    assert loop.run("sessions", "resume", "--work-item", ITEM) == 0
    assert loop.tmux().liveness(TARGET) == "live"
    assert loop.listing()[0]["status"] == "active"


def _files_under(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


@pytest.mark.parametrize(
    "action",
    [
        ["pause", "--comment"],
        ["resume", "--comment"],
        ["stop", "--comment"],
        ["cleanup"],
        ["cleanup", "--dry-run"],
    ],
)
def test_a_control_action_on_an_item_this_machine_never_held_exits_1_and_writes_nothing(
    loop: Loop, action: list[str]
):
    unknown = "github:octo/app#51"
    code, out, err = loop.output("sessions", *action, "--work-item", unknown)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"error: no work item {unknown} on this machine (state root {loop.state})"
    )
    assert not (loop.state / "portable").exists() or _files_under(loop.state / "portable") == []
    assert not (loop.state / "logs" / "events.jsonl").exists()


def test_pause_resume_and_stop_of_an_item_known_only_by_its_portable_record_record_the_intent(
    loop: Loop,
):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.run("sessions", "cleanup", "--work-item", ITEM) == 0
    for verb in ("pause", "resume", "stop"):
        code, out, _ = loop.output("sessions", verb, "--work-item", ITEM)
        assert code == 0
        assert out == f"{ITEM}: recorded {verb}; no live session on this machine\n"
        assert loop.portable()["control"]["command"] == verb
    assert _controls(loop) == ["start", "cleanup", "pause", "resume", "stop"]
    assert loop.listing() == []


@pytest.mark.parametrize(
    "spelling",
    ["octo/app#15", "https://github.com/octo/app/issues/15", "https://github.com/octo/app/pull/15"],
)
def test_the_shorthand_and_web_url_of_an_item_name_the_same_session(loop: Loop, spelling: str):
    assert loop.run("sessions", "start", "--work-item", spelling) == 0
    code, out, _ = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0 and out.startswith(f"{ITEM}: already running")
    [row] = loop.listing()
    assert row["workItem"] == ITEM


@pytest.mark.parametrize("spelling", ["gh:octo/app#15", "gitlab:octo/app#15"])
def test_an_unknown_provider_is_refused_with_exit_2_and_touches_nothing(loop: Loop, spelling: str):
    code, out, err = loop.output("sessions", "start", "--work-item", spelling)
    assert (code, out) == (2, "")
    assert f"unknown provider {spelling.split(':')[0]!r}" in err
    assert "'github:[<host>/]<owner>/<repo>#<number>'" in err
    assert not loop.state.exists()
    assert loop.tmux().live_sessions() == set()


def test_attach_runs_tmux_attach_read_write_on_a_live_session_and_read_only_on_request(
    loop: Loop,
):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert attach(loop) == ["tmux", "-L", loop.socket, "attach-session", "-t", f"={TARGET}"]
    read_only = attach(loop, "--read-only")
    assert read_only == ["tmux", "-L", loop.socket, "attach-session", "-r", "-t", f"={TARGET}"]


def test_attach_exits_1_when_the_tmux_session_is_gone(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    loop.tmux().kill(TARGET)
    args = build_parser().parse_args(
        ["--config", str(loop.config_path), "sessions", "attach", "--work-item", ITEM]
    )
    recorder = ExecRecorder()
    with pytest.raises(TheLoopError, match=f"tmux session {TARGET} is gone") as raised:
        run_attach(args, execvp=recorder)
    assert raised.value.exit_code == 1
    assert recorder.calls == []


def test_cleanup_dry_run_says_what_would_go_and_changes_nothing(loop: Loop):
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    before = _controls(loop)
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--dry-run")
    assert code == 0
    assert out == (
        f"{ITEM}: would end tmux session {TARGET}\n"
        f"{ITEM}: would remove the checkout {loop.worktree} (clean)\n"
        f"{ITEM}: would remove the session record\n"
        f"{ITEM}: would clean up (dry run — nothing was changed)\n"
    )
    assert loop.tmux().liveness(TARGET) == "live"
    assert loop.worktree.is_dir()
    assert loop.listing()[0]["status"] == "active"
    assert _controls(loop) == before
    code, out, _ = loop.output("sessions", "cleanup", "--work-item", ITEM, "--format", "json")
    [report] = json.loads(out)["items"]
    assert (code, report["tmuxKilled"], report["recordRemoved"]) == (0, [TARGET], True)
    assert report["checkoutsRemoved"] == [str(loop.worktree)]
    assert not loop.worktree.exists()


# -- a spawn that fails halfway ------------------------------------------------------


def _paused_from_another_machine(loop: Loop) -> None:
    """A ``pause`` in the portable record only, as a hand-off from another machine leaves it."""
    loop.control.record(ITEM, "pause", source="cli", actor="elsewhere")


def _nothing_left_behind(loop: Loop) -> None:
    assert loop.tmux().liveness(TARGET) == "absent"
    assert not loop.worktree.exists()
    assert loop.registry.find_by_work_item(ITEM, include_closed=True) is None
    assert loop.portable()["control"]["command"] == "pause"
    assert [event["work_item"] for event in loop.events_named("session.spawn_failed")] == [ITEM]


def test_a_spawn_with_a_missing_harness_binary_fails_and_leaves_nothing_behind(loop: Loop):
    loop.configure_routing(
        harnesses={"command": {"argv": ["no-such-agent-binary", "{session_id}"]}}
    )
    _paused_from_another_machine(loop)
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert (code, out) == (1, "")
    assert err.startswith(f"{NO_TICKET_WARNING}error: cannot start a session for {ITEM}")
    assert "not on PATH" in err
    _nothing_left_behind(loop)


def test_a_spawn_on_a_branch_that_does_not_exist_fails_and_leaves_nothing_behind(loop: Loop):
    _paused_from_another_machine(loop)
    code, _, err = loop.output("sessions", "start", "--work-item", ITEM, "--branch", "no-such")
    assert code == 1 and "no-such" in err
    _nothing_left_behind(loop)


def test_a_spawn_that_fails_after_tmux_started_undoes_the_checkout_and_the_tmux_session(
    loop: Loop,
):
    _paused_from_another_machine(loop)
    blocked = loop.tmp_path / "not-a-directory"
    blocked.write_text("the registry cannot write here", encoding="utf-8")
    code, _, err = loop.output(
        "sessions", "start", "--work-item", ITEM, "--registry-dir", str(blocked)
    )
    assert code == 1 and "registering the session failed" in err
    _nothing_left_behind(loop)


def test_link_pr_skips_an_unusable_entry_with_a_warning_and_links_everywhere(
    loop: Loop, tmp_path: Path
):
    checkout = tmp_path / "checkout"
    state_file = WorkItemStateFile(checkout, WorkItemRef.parse(ITEM))
    bad = {"ref": "github:octo/lib#7", "repository": "../etc"}
    state_file.path.parent.mkdir(parents=True)
    state_file.path.write_text(json.dumps({"sessionPerPr": "always", "pullRequests": [bad]}))
    _register(loop, checkout)

    code, out, err = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", PR)
    assert code == 0 and out == f"{ITEM}: linked pull request {PR}\n"
    assert f"warning: the work item state file {state_file.path}: pullRequests[0] skipped" in err
    assert [entry.ref for entry in state_file.load().pull_requests] == [PR]
    assert json.loads(state_file.path.read_text())["pullRequests"][0] == bad
    assert PR in loop.portable()["pullRequests"]


def test_link_pr_writes_nothing_when_the_state_file_is_unreadable(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "checkout"
    state_file = WorkItemStateFile(checkout, WorkItemRef.parse(ITEM))
    state_file.path.parent.mkdir(parents=True)
    state_file.path.write_text("{not json")
    _register(loop, checkout)

    code, out, err = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", PR)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and str(state_file.path) in err
    assert loop.listing()[0]["pullRequests"] == []
    assert not (loop.state / "portable").exists() or "pullRequests" not in loop.portable()


def test_link_pr_names_the_records_it_linked_when_a_later_write_fails(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "checkout"
    state_file = WorkItemStateFile(checkout, WorkItemRef.parse(ITEM))
    state_file.save(WorkItemState(work_item=ITEM))
    state_file.lock_path.unlink(missing_ok=True)
    state_file.lock_path.mkdir()  # the state file's lock cannot be taken
    _register(loop, checkout)

    code, out, err = loop.output("sessions", "link-pr", "--work-item", ITEM, "--pull-request", PR)
    assert code == 1 and out == ""
    assert err.startswith(
        f"error: {ITEM}: linked pull request {PR} in the session record and the portable "
        f"record only; not in the work item state file {state_file.path}: "
    )
    assert [endpoint["workItem"] for endpoint in loop.listing()[0]["pullRequests"]] == [PR]
    assert state_file.load().pull_requests == []


def test_link_pr_records_the_pull_request_in_upstreams_state_file(loop: Loop, tmp_path: Path):
    checkout = tmp_path / "checkout"
    upstream = checkout / "docs" / "specs" / "issue-15" / "work-item-state.json"
    upstream.parent.mkdir(parents=True)
    upstream.write_text(json.dumps({"version": 2, "workItem": ITEM, "sessionPerPr": "always"}))
    _register(loop, checkout)

    assert loop.run("sessions", "link-pr", "--work-item", ITEM, "--pull-request", "16") == 0
    assert [entry["ref"] for entry in json.loads(upstream.read_text())["pullRequests"]] == [PR]
    assert sorted(path.name for path in (checkout / "docs" / "specs").iterdir()) == ["issue-15"]


def test_start_warns_of_an_unusable_state_file_entry_and_keeps_the_files_choices(loop: Loop):
    bad = {"ref": "github:octo/lib#7", "repository": "../etc"}
    state = {"version": 2, "model": "opus", "pullRequests": [bad]}
    spec = f"docs/specs/{WorkItemRef.parse(ITEM).slug}/work-item-state.json"
    loop.remote = make_remote(loop.tmp_path, "app-with-state", files={spec: json.dumps(state)})
    loop.configure_routing()

    code, _, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0
    assert "warning: the work item state file " in err and "pullRequests[0] skipped" in err
    assert loop.listing()[0]["model"] == "opus"


def test_another_project_on_the_same_tmux_server_never_ends_this_projects_agent(
    loop: Loop,
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
):
    """Two state roots, one tmux server (the default socket is shared): the second
    project refuses to start the item, holds nothing for it, and cannot end it."""
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    target = loop.registry.find_by_work_item(ITEM).tmux_target  # type: ignore[union-attr]
    other = Loop(tmp_path / "other", tmux_socket)
    other.configure_routing()
    code, _, err = other.output("sessions", "start", "--work-item", ITEM)
    assert code == 1
    assert f"already running for the state root {loop.state}" in err
    for action in (["cleanup"], ["cleanup", "--dry-run"], ["stop"]):
        code, out, err = other.output("sessions", *action, "--work-item", ITEM)
        assert (code, out) == (1, ""), err
        assert err.startswith(f"error: no work item {ITEM} on this machine")
    assert loop.tmux().liveness(target) == "live"
    assert not (other.state / "portable").exists() or _files_under(other.state / "portable") == []


def test_a_tmux_session_another_state_root_started_is_never_ended_by_a_cleanup_here(
    loop: Loop,
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
):
    """Even when this root holds a record of the same item, the other root's agent stays."""
    other = Loop(tmp_path / "other", tmux_socket)
    other.configure_routing()
    assert other.run("sessions", "start", "--work-item", ITEM) == 0
    assert other.run("sessions", "stop", "--work-item", ITEM) == 0  # a record, nothing live
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    target = loop.registry.find_by_work_item(ITEM).tmux_target  # type: ignore[union-attr]
    code, _, err = other.output("sessions", "cleanup", "--work-item", ITEM)
    assert code == 1
    assert f"was started from the state root {loop.state}" in err
    assert loop.tmux().liveness(target) == "live"


def test_a_stop_in_a_project_whose_agent_exited_never_ends_the_agent_another_started_since(
    loop: Loop,
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
):
    """Project A's agent exits (its record stays open); project B starts the item on the
    same tmux server, taking the name; A's stop closes A's record and leaves B's agent."""
    other = Loop(tmp_path / "other", tmux_socket)
    other.configure_routing()
    assert other.run("sessions", "start", "--work-item", ITEM) == 0
    target = other.registry.find_by_work_item(ITEM).tmux_target  # type: ignore[union-attr]
    for pid in loop.tmux().pane_pids(target):
        os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: loop.tmux().liveness(target) == "dead")
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.tmux().liveness(target) == "live"
    code, _, err = other.output("sessions", "stop", "--work-item", ITEM)
    assert f"was started from the state root {loop.state}" in err, (code, err)
    assert loop.tmux().liveness(target) == "live", "B's agent is still running"
    assert other.registry.find_by_work_item(ITEM) is None, "A's record is closed"


# -- LAST EVENT follows what happens to the session (issue 18, item 12) ---------------

LONG_AGO = "2000-01-01T00:00:00Z"


def _last_event_set_long_ago(loop: Loop) -> None:
    """Stamp the record's LAST EVENT far in the past, so any new stamp differs from it."""
    record = loop.registry.find_by_work_item(ITEM, include_closed=True)
    assert record is not None
    loop.registry.save_endpoint(ITEM, replace(record, last_event_at=LONG_AGO))
    assert loop.listing()[0]["lastEventAt"] == LONG_AGO


def test_last_event_moves_on_each_delivery_pause_resume_and_stop(loop: Loop):
    from the_loop.adapters.actions import Actions
    from the_loop.commands.stores import open_dispatcher
    from the_loop.intake.comments import SessionState
    from the_loop.intake.delivery import Delivery
    from the_loop.intake.ports import LiveSession
    from the_loop.ref import WorkItemRef

    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    _last_event_set_long_ago(loop)
    stores = loop.stores
    actions = Actions(stores, open_dispatcher(loop.context, stores), "")
    session = LiveSession(WorkItemRef.parse(ITEM), SessionState.ACTIVE, TARGET)
    actions.deliver(session, Delivery(1001, "a comment", "the-loop-github-octo-app-15-1001-1"))
    [row] = loop.listing()
    assert row["lastEventAt"] != LONG_AGO and row["recentDeliveries"] == ["1001"]
    for action in ("pause", "resume", "stop"):
        _last_event_set_long_ago(loop)
        assert loop.run("sessions", action, "--work-item", ITEM) == 0
        assert loop.listing()[0]["lastEventAt"] != LONG_AGO, action
