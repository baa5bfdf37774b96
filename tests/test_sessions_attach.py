"""`sessions attach` explains itself (issue 18, item 13): a missing record names the state
root it searched, a shell inside tmux has its client switched (or is told how to attach),
and without a terminal it says so instead of passing tmux's error. Real tmux on private
sockets, the CLI in a subprocess (and in a tmux pane) where a terminal matters."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import private_tmux_socket, tmux_socket, wait_until  # noqa: F401
from tests.helpers.world import World
from the_loop.cli import build_parser
from the_loop.commands.sessions.attach import run_attach

ITEM = "github:octo/app#15"
TARGET = "loop-github-octo-app-15"
AGENT = ["bash", "-c", "echo agent ready; exec sleep 600"]
DESK = "desk"


def cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "the_loop", *argv]


def run(argv: list[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None):
    """``argv`` with no terminal: stdin closed, stdout and stderr captured."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def tmux(socket: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def socket_path(socket: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", f"={DESK}:", "#{socket_path}").strip()


class Started(World):
    """A world whose agent runs in tmux session ``TARGET`` on the private server ``socket``."""

    def __init__(self, home: Path, socket: str) -> None:
        workdir = home / "workdir"
        workdir.mkdir(parents=True)
        routing = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": AGENT}},
            "spawnWorkdir": str(workdir),
            "tmux": {"socket": socket},
        }
        super().__init__(home, {"routing": routing})
        self.socket = socket
        code, _, err = self.run_cli(["sessions", "start", "--work-item", ITEM, "--no-comment"])
        assert code == 0, err

    def attach(self) -> list[str]:
        return cli("--config", str(self.config_path), "sessions", "attach", "--work-item", ITEM)

    def attach_command(self, *flags: str) -> str:
        return f"`tmux -L {self.socket} attach-session {' '.join([*flags, ''])}-t ={TARGET}`"


@pytest.fixture
def started(tmp_path: Path, tmux_socket: str) -> Started:  # noqa: F811 - the imported fixture
    return Started(tmp_path / "world", tmux_socket)


@pytest.fixture
def desk() -> Iterator[str]:
    """A second tmux server holding a session ``desk``: the operator's own tmux."""
    with private_tmux_socket() as socket:
        tmux(socket, "new-session", "-d", "-s", DESK, "-x", "100", "-y", "30", "--", "sleep", "600")
        yield socket


def test_attach_from_the_wrong_directory_names_the_state_root_it_searched_and_why(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".the-loop").mkdir(parents=True)
    register = ["sessions", "register", "--work-item", ITEM, "--harness", "command"]
    registered = run(cli(*register, "--harness-session-id", "abc"), cwd=project)
    assert registered.returncode == 0, registered.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    attached = run(cli("sessions", "attach", "--work-item", ITEM), cwd=elsewhere)

    home_root = Path(os.environ["HOME"]) / ".the-loop"
    assert (attached.returncode, attached.stdout) == (1, "")
    assert attached.stderr.count("\n") == 1
    assert attached.stderr.startswith(
        f"error: {ITEM} has no session record in the state root {home_root} "
        "(the per-user default: no .the-loop/ at or above the working directory)"
    )
    assert "--state-root" in attached.stderr


def test_attach_without_a_terminal_says_so_and_names_the_command_to_run_from_one(
    started: Started,
) -> None:
    attached = run(started.attach())
    assert (attached.returncode, attached.stdout) == (2, "")
    assert "open terminal failed" not in attached.stderr  # tmux's own words
    assert attached.stderr.count("\n") == 1
    assert attached.stderr.startswith(f"error: {ITEM}: attaching needs a terminal")
    assert f"run {started.attach_command()} from a terminal" in attached.stderr
    assert started.run_cli(["sessions", "list"])[0] == 0


def test_attach_inside_tmux_switches_the_client_to_the_agents_session(started: Started) -> None:
    socket = started.socket
    tmux(socket, "new-session", "-d", "-s", DESK, "-x", "100", "-y", "30", "--", "sleep", "600")
    with private_tmux_socket() as terminal:
        # A real client of the-loop's server, on a terminal another server gives it.
        client = f"env -u TMUX tmux -L {socket} attach-session -t ={DESK}"
        tmux(terminal, "new-session", "-d", "-x", "100", "-y", "30", client)
        clients = lambda: tmux(socket, "list-clients", "-F", "#{client_session}").split()  # noqa: E731
        assert wait_until(lambda: clients() == [DESK])

        log, code = started.home / "attach.log", started.home / "attach.rc"
        command = shlex.join(started.attach())
        tmux(socket, "new-window", "-t", f"={DESK}:", f"{command} >{log} 2>&1; echo $? >{code}")
        assert wait_until(code.exists), "the attach in the pane did not finish"
        assert wait_until(lambda: clients() == [TARGET]), log.read_text(encoding="utf-8")

    assert code.read_text(encoding="utf-8").strip() == "0", log.read_text(encoding="utf-8")
    assert log.read_text(encoding="utf-8") == f"{ITEM}: switched this tmux client to {TARGET}\n"


def test_attach_inside_another_tmux_server_says_how_to_attach_instead(
    started: Started,
    desk: str,
) -> None:
    inside = {"TMUX": f"{socket_path(desk)},1,0", "TMUX_PANE": "%0"}
    attached = run(started.attach(), env=inside)
    assert (attached.returncode, attached.stdout) == (2, "")
    assert attached.stderr.count("\n") == 1
    assert "nested with care" not in attached.stderr  # tmux's own words
    assert f"this shell is inside another tmux server ({socket_path(desk)})" in attached.stderr
    assert f"run {started.attach_command()} outside tmux" in attached.stderr
    assert f"`env -u TMUX {started.attach_command()[1:]}" in attached.stderr


def test_attach_inside_tmux_with_no_client_to_switch_says_how_to_attach(started: Started) -> None:
    server = tmux(started.socket, "display-message", "-p", "-t", f"={TARGET}:", "#{socket_path}")
    attached = run(started.attach(), env={"TMUX": f"{server.strip()},1,0"})
    assert (attached.returncode, attached.stdout) == (1, "")
    assert attached.stderr.count("\n") == 1
    assert f"error: {ITEM}: could not switch a tmux client to {TARGET}" in attached.stderr
    assert "no current client" in attached.stderr
    assert f"run {started.attach_command()} from a terminal" in attached.stderr


class ExecRecorder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, file: str, argv: list[str]) -> None:
        self.calls.append(argv)


def test_a_read_only_attach_inside_tmux_nests_a_read_only_client_in_this_pane(
    started: Started,
) -> None:
    server = tmux(started.socket, "display-message", "-p", "-t", f"={TARGET}:", "#{socket_path}")
    argv = ["--config", str(started.config_path), "sessions", "attach", "--work-item", ITEM]
    args = build_parser().parse_args([*argv, "--read-only"])
    recorder = ExecRecorder()
    inside = {"TMUX": f"{server.strip()},1,0"}
    result = run_attach(args, execvp=recorder, environ=inside, has_terminal=lambda: True)
    assert result.exit_code == 0
    attach = ["tmux", "-L", started.socket, "attach-session", "-r", "-t", f"={TARGET}"]
    assert recorder.calls == [["env", "-u", "TMUX", *attach]]
    assert tmux(started.socket, "list-clients") == ""
