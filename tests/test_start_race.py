"""Two ``sessions start`` of one ref at once, for real: two processes, one private tmux
socket, one local bare repository as the remote. The winner must come out whole."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import kill_server
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.portable.control import CLEANUP, PAUSE, RESUME, START, STOP, ControlStore
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry

ITEM = WorkItemRef.parse("github:octo/repo#5")
TARGET = "loop-github-octo-repo-5"
TRIALS = 30
RESUME_TRIALS = 12
QUIETING_TRIALS = 12
AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]
#: Bounds a hung start; not a timing assertion.
HARNESS_TIMEOUT = 120
#: Every action here but ``cleanup`` may post a keyword comment: never in a test.
NO_COMMENT = {action: ["--no-comment"] for action in ("start", "stop", "pause", "resume")}


@dataclass(frozen=True)
class Outcome:
    """One process's exit code and output."""

    code: int
    out: str
    err: str


def write_config(trial: Path, remote: Path, socket: str) -> Path:
    config = trial / "cli-config.yaml"
    routing = {
        "defaultHarness": "command",
        "harnesses": {"command": {"argv": AGENT}},
        "workspace": {
            "root": str(trial / "workspaces"),
            "repositories": {"octo/repo": str(remote)},
        },
        "tmux": {"socket": socket, "harnessKillGraceSeconds": 3},
    }
    document = {"state": {"root": str(trial / "state")}, "routing": routing}
    config.write_text(json.dumps(document), encoding="utf-8")
    return config


def start_twice_at_once(config: Path) -> list[Outcome]:
    """``the-loop sessions start`` twice, launched back to back, then waited for."""
    return at_once(config, "start")


def at_once(config: Path, action: str, times: int = 2) -> list[Outcome]:
    """``the-loop sessions <action>`` ``times`` times, launched back to back, then waited for."""
    return each_at_once(config, [action] * times)


def each_at_once(config: Path, actions: list[str]) -> list[Outcome]:
    """``the-loop sessions <action>`` for each of ``actions``, launched back to back."""
    argv = [sys.executable, "-m", "the_loop", "--config", str(config), "sessions"]
    processes = [
        subprocess.Popen(
            [*argv, action, "--work-item", ITEM.ref, *NO_COMMENT.get(action, [])],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for action in actions
    ]
    outcomes: list[Outcome] = []
    for process in processes:
        out, err = process.communicate(timeout=HARNESS_TIMEOUT)
        outcomes.append(Outcome(process.returncode, out, err))
    return outcomes


def tmux_sessions(socket: str) -> list[str]:
    listed = subprocess.run(
        ["tmux", "-L", socket, "list-sessions", "-F", "#{session_name}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return listed.stdout.split()


def damage(trial: Path, socket: str, outcomes: list[Outcome]) -> list[str]:
    """What is wrong with the winner, and with the loser's exit, after one race."""
    problems: list[str] = []
    sessions = tmux_sessions(socket)
    if sessions != [TARGET]:
        problems.append(f"tmux sessions {sessions}")
    records = SessionRegistry(trial / "state" / "local").list_sessions()
    active = [record for record in records if record.status == "active"]
    if len(active) != 1:
        problems.append(f"{len(active)} active records")
    elif not (Path(active[0].cwd) / ".git").exists():
        problems.append(f"the winner's checkout {active[0].cwd} is gone")
    control = ControlStore(trial / "state" / "portable").get(ITEM)
    if control is None or control.command != START:
        problems.append(f"control says {control and control.command}")
    winners = [outcome for outcome in outcomes if started(outcome)]
    losers = [outcome for outcome in outcomes if not started(outcome)]
    if len(winners) != 1:
        problems.append(f"{len(winners)} processes say they started it: {outcomes}")
    for loser in losers:
        if not (refused_well(loser) or arrived_late(loser)):
            problems.append(f"the loser: {loser}")
    return problems


def started(outcome: Outcome) -> bool:
    return outcome.code == 0 and f"{ITEM.ref}: started" in outcome.out


def refused_well(outcome: Outcome) -> bool:
    """The race's loser: exit 1, with a hint that leaves the winner's session alone."""
    return outcome.code == 1 and well_hinted(outcome.err)


def arrived_late(outcome: Outcome) -> bool:
    """A start that came after the winner had registered: it says so and exits 0."""
    return outcome.code == 0 and f"{ITEM.ref}: already running" in outcome.out


def well_hinted(err: str) -> bool:
    """The refusal names the real ref, points at attach/list, and suggests nothing destructive."""
    return (
        ITEM.ref in err
        and f"the-loop sessions attach --work-item '{ITEM.ref}'" in err
        and "the-loop sessions list" in err
        and "<ref>" not in err
        and "reset" not in err
        and "Traceback" not in err
    )


@pytest.mark.slow
def test_two_starts_of_one_ref_at_once_never_damage_the_winner(
    tmp_path: Path, tmux_socket: str
) -> None:
    remote = make_remote(tmp_path, "repo")
    damaged: dict[int, list[str]] = {}
    raced = 0
    for number in range(TRIALS):
        trial = tmp_path / f"trial-{number}"
        trial.mkdir()
        try:
            outcomes = start_twice_at_once(write_config(trial, remote, tmux_socket))
            raced += any(outcome.code == 1 for outcome in outcomes)
            problems = damage(trial, tmux_socket, outcomes)
        finally:
            kill_server(tmux_socket)
        if problems:
            damaged[number] = problems
    assert damaged == {}
    assert raced > 0, "no trial raced: the loser always arrived after the winner"


def ended_and_paused(trial: Path, config: Path, socket: str) -> None:
    """Start the item, end its agent (its tmux pane stays, dead), pause its record."""
    [started] = at_once(config, "start", times=1)
    assert started.code == 0, started
    tmux = TmuxRunner(socket=socket, timeout=30)
    tmux.terminate_harness(TARGET, grace_seconds=5)
    assert tmux.liveness(TARGET) == "dead"
    assert SessionRegistry(trial / "state" / "local").pause(ITEM) is not None


def resume_damage(trial: Path, socket: str, outcomes: list[Outcome]) -> list[str]:
    """What is wrong after two resumes of one paused session whose agent had ended."""
    problems = [f"a resume failed: {outcome}" for outcome in outcomes if outcome.code != 0]
    tmux = TmuxRunner(socket=socket, timeout=30)
    # One restart: the ended agent's pane is kept once, as a transcript under a new name.
    kept = [name for name in tmux_sessions(socket) if name.startswith(f"{TARGET}~")]
    ours = [name for name in tmux_sessions(socket) if name not in kept]
    if ours != [TARGET] or len(kept) != 1 or len(tmux.pane_pids(TARGET)) != 1:
        problems.append(f"tmux: {tmux_sessions(socket)}, live panes {tmux.pane_pids(TARGET)}")
    record = SessionRegistry(trial / "state" / "local").find_by_work_item(ITEM)
    if record is None or record.status != "active":
        problems.append(f"the record is {record and record.status}")
    control = ControlStore(trial / "state" / "portable").get(ITEM)
    if control is None or control.command != RESUME:
        problems.append(f"control says {control and control.command}")
    return problems


@pytest.mark.slow
def test_two_resumes_of_an_ended_agent_at_once_restart_it_once_and_leave_it_active(
    tmp_path: Path, tmux_socket: str
) -> None:
    remote = make_remote(tmp_path, "repo")
    damaged: dict[int, list[str]] = {}
    for number in range(RESUME_TRIALS):
        trial = tmp_path / f"trial-{number}"
        trial.mkdir()
        config = write_config(trial, remote, tmux_socket)
        try:
            ended_and_paused(trial, config, tmux_socket)
            problems = resume_damage(trial, tmux_socket, at_once(config, "resume"))
        finally:
            kill_server(tmux_socket)
        if problems:
            damaged[number] = problems
    assert damaged == {}


def quieting_damage(trial: Path, socket: str, outcomes: list[Outcome], quiet: str) -> list[str]:
    """What contradicts the last command recorded, after a start and ``quiet`` at once."""
    # ``quiet`` may arrive before the start left anything: refused, it records nothing.
    refused = [o for o in outcomes[1:] if o.code == 1 and o.err.startswith("error: no work item")]
    problems = [
        f"a command failed: {outcome}"
        for outcome in outcomes
        if outcome.code != 0 and outcome not in refused
    ]
    control = ControlStore(trial / "state" / "portable").get(ITEM)
    record = SessionRegistry(trial / "state" / "local").find_by_work_item(ITEM)
    agent = TmuxRunner(socket=socket, timeout=30).liveness(TARGET)
    command = control and control.command
    if command == STOP and (record is not None or agent == "live"):
        problems.append(f"control says stop, but the record is {record} and the agent {agent}")
    elif command == PAUSE and record is not None and not record.is_paused:
        problems.append(f"control says pause, but the record is {record.status}")
    elif command == CLEANUP and (record is not None or agent == "live"):
        problems.append(f"control says cleanup, but the record is {record} and the agent {agent}")
    elif command == START and (record is None or agent != "live"):
        problems.append(f"control says start, but the record is {record} and the agent {agent}")
    elif command not in (START, quiet):
        problems.append(f"control says {command}")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [STOP, PAUSE, CLEANUP])
def test_a_stop_pause_or_cleanup_during_a_start_is_never_outrun_by_it(
    tmp_path: Path, tmux_socket: str, quiet: str
) -> None:
    remote = make_remote(tmp_path, "repo")
    damaged: dict[int, list[str]] = {}
    for number in range(QUIETING_TRIALS):
        trial = tmp_path / f"trial-{number}"
        trial.mkdir()
        config = write_config(trial, remote, tmux_socket)
        try:
            outcomes = each_at_once(config, ["start", quiet])
            problems = quieting_damage(trial, tmux_socket, outcomes, quiet)
        finally:
            kill_server(tmux_socket)
        if problems:
            damaged[number] = problems
    assert damaged == {}


def resume_close_damage(trial: Path, socket: str, outcomes: list[Outcome]) -> list[str]:
    """An agent left running with no live record, or a live record with no agent."""
    problems = [f"crashed: {outcome}" for outcome in outcomes if "Traceback" in outcome.err]
    record = SessionRegistry(trial / "state" / "local").find_by_work_item(ITEM)
    agent = TmuxRunner(socket=socket, timeout=30).liveness(TARGET)
    if record is None and agent == "live":
        problems.append("the agent runs, but its session is closed")
    if record is not None and record.status == "active" and agent != "live":
        problems.append(f"the session is active, but its agent is {agent}")
    return problems


@pytest.mark.slow
def test_a_close_during_a_resume_never_leaves_the_agent_running_unrecorded(
    tmp_path: Path, tmux_socket: str
) -> None:
    remote = make_remote(tmp_path, "repo")
    damaged: dict[int, list[str]] = {}
    for number in range(RESUME_TRIALS):
        trial = tmp_path / f"trial-{number}"
        trial.mkdir()
        config = write_config(trial, remote, tmux_socket)
        try:
            ended_and_paused(trial, config, tmux_socket)
            outcomes = each_at_once(config, ["resume", "close"])
            problems = resume_close_damage(trial, tmux_socket, outcomes)
        finally:
            kill_server(tmux_socket)
        if problems:
            damaged[number] = problems
    assert damaged == {}
