"""The tmux runner against a real tmux server on a private socket (one per test)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.config.file import Config
from the_loop.dispatch.process import DispatchError, Relay
from the_loop.dispatch.settings import agent_environment
from the_loop.dispatch.tmux import TmuxRunner

AGENT = ["bash", "-c", "echo ready; sleep 300"]
STUBBORN_AGENT = ["bash", "-c", "trap '' TERM; echo stubborn; sleep 300"]


@pytest.fixture
def tmux(tmux_socket: str) -> TmuxRunner:  # noqa: F811 - the imported fixture
    return TmuxRunner(socket=tmux_socket, timeout=30)


def _shows(tmux: TmuxRunner, name: str, text: str) -> bool:
    return text in tmux.capture(name)


def test_a_stand_in_agent_goes_from_live_to_dead_to_absent(tmux: TmuxRunner, tmp_path: Path):
    tmux.spawn("loop-github-octo-app-1", tmp_path, AGENT)
    assert tmux.liveness("loop-github-octo-app-1") == "live"
    assert wait_until(lambda: _shows(tmux, "loop-github-octo-app-1", "ready"))

    assert tmux.terminate_harness("loop-github-octo-app-1", grace_seconds=10) is True
    assert tmux.liveness("loop-github-octo-app-1") == "dead"
    assert tmux.pane_pids("loop-github-octo-app-1") == []
    assert "ready" in tmux.capture("loop-github-octo-app-1")

    assert tmux.kill("loop-github-octo-app-1") is True
    assert tmux.liveness("loop-github-octo-app-1") == "absent"
    assert tmux.kill("loop-github-octo-app-1") is False


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace_period(
    tmux_socket: str,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    sent: list[int] = []

    def recording_killpg(pgid: int, signum: int) -> None:
        sent.append(signum)
        os.killpg(pgid, signum)

    tmux = TmuxRunner(socket=tmux_socket, timeout=30, signal_group=recording_killpg)
    tmux.spawn("loop-stubborn", tmp_path, STUBBORN_AGENT)
    assert wait_until(lambda: _shows(tmux, "loop-stubborn", "stubborn"))

    assert tmux.terminate_harness("loop-stubborn", grace_seconds=0.3) is True
    assert sent == [signal.SIGTERM, signal.SIGKILL]
    assert tmux.liveness("loop-stubborn") == "dead"
    assert "stubborn" in tmux.capture("loop-stubborn")


def test_an_agent_that_exits_at_once_still_leaves_its_pane(tmux: TmuxRunner, tmp_path: Path):
    # A tenth of a second before it exits: under load tmux 3.3a may mark a pane dead
    # before it reads the last output of a process gone at once (seen in CI: the pane
    # kept, dead, and blank), which is tmux's, not what this test is about.
    tmux.spawn("loop-quick", tmp_path, ["bash", "-c", "echo finished-already; sleep 0.1"])
    assert wait_until(lambda: tmux.liveness("loop-quick") == "dead")
    assert "finished-already" in tmux.capture("loop-quick")
    assert tmux.terminate_harness("loop-quick", grace_seconds=1) is False


def test_the_agent_runs_in_cwd_with_env_and_a_lone_argv_without_a_shell(
    tmux: TmuxRunner, tmp_path: Path
) -> None:
    program = tmp_path / "my agent; rm -rf ~"
    program.write_text('#!/bin/sh\necho "cwd=$PWD var=$LOOP_TEST_VAR"\nsleep 300\n')
    program.chmod(0o755)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    tmux.spawn("loop-lone", checkout, [str(program)], env={"LOOP_TEST_VAR": "a b"})
    expected = f"cwd={checkout} var=a b"
    assert wait_until(lambda: _shows(tmux, "loop-lone", expected)), tmux.capture("loop-lone")
    assert tmux.liveness("loop-lone") == "live"


def test_a_second_spawn_on_a_live_name_is_refused_and_suggests_nothing_destructive(
    tmux: TmuxRunner, tmp_path: Path
) -> None:
    tmux.spawn("loop-busy", tmp_path, AGENT)
    first = tmux.pane_pids("loop-busy")
    with pytest.raises(DispatchError, match=r"already running.*sessions list") as refused:
        tmux.spawn("loop-busy", tmp_path, ["bash", "-c", "echo second; sleep 300"])
    assert "reset" not in str(refused.value) and "<ref>" not in str(refused.value)
    assert tmux.pane_pids("loop-busy") == first
    assert tmux.liveness("loop-busy") == "live"


def test_a_dead_session_is_replaced_by_a_new_spawn(tmux: TmuxRunner, tmp_path: Path) -> None:
    tmux.spawn("loop-again", tmp_path, ["bash", "-c", "echo first-run"])
    assert wait_until(lambda: tmux.liveness("loop-again") == "dead")
    tmux.spawn("loop-again", tmp_path, ["bash", "-c", "echo second-run; sleep 300"])
    assert tmux.liveness("loop-again") == "live"
    assert wait_until(lambda: _shows(tmux, "loop-again", "second-run"))
    assert "first-run" not in tmux.capture("loop-again")


def test_a_prefix_of_a_live_session_name_is_never_mistaken_for_it(
    tmux: TmuxRunner, tmp_path: Path
) -> None:
    tmux.spawn("loop-github-octo-app-15", tmp_path, AGENT)
    assert tmux.liveness("loop-github-octo-app-1") == "absent"
    assert tmux.terminate_harness("loop-github-octo-app-1", grace_seconds=1) is False
    assert tmux.kill("loop-github-octo-app-1") is False
    assert tmux.liveness("loop-github-octo-app-15") == "live"


def test_with_no_server_on_the_socket_a_session_is_absent(tmux: TmuxRunner) -> None:
    assert tmux.liveness("loop-none") == "absent"
    assert tmux.pane_pids("loop-none") == []
    assert tmux.terminate_harness("loop-none", grace_seconds=1) is False
    assert tmux.kill("loop-none") is False


def test_a_missing_tmux_binary_reads_as_unknown_and_spawn_fails(tmp_path: Path) -> None:
    tmux = TmuxRunner(binary=str(tmp_path / "no-tmux"), socket="unused", timeout=5)
    assert tmux.liveness("loop-x") == "unknown"
    with pytest.raises(DispatchError, match="tmux did not answer"):
        tmux.spawn("loop-x", tmp_path, AGENT)
    with pytest.raises(DispatchError, match="not found"):
        tmux.kill("loop-x")


@pytest.mark.parametrize(
    "name", ["foo", "loop-", "loop-a:b", "loop-a.b", "loop-a b", "=loop-a", "loop-a;x", "Loop-a"]
)
def test_names_outside_the_loop_pattern_are_refused(name: str, tmp_path: Path) -> None:
    tmux = TmuxRunner(binary=str(tmp_path / "never-run"), socket="unused")
    calls = [
        lambda: tmux.spawn(name, tmp_path, AGENT),
        lambda: tmux.liveness(name),
        lambda: tmux.pane_pids(name),
        lambda: tmux.terminate_harness(name, 1),
        lambda: tmux.kill(name),
        lambda: tmux.attach_argv(name, read_only=True),
        lambda: tmux.capture(name),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="refusing tmux target"):
            call()


def test_attach_argv_names_the_socket_and_read_only_mode() -> None:
    assert TmuxRunner(socket="s1").attach_argv("loop-a", read_only=True) == [
        "tmux", "-L", "s1", "attach-session", "-r", "-t", "=loop-a",
    ]  # fmt: skip
    assert TmuxRunner().attach_argv("loop-a", read_only=False) == [
        "tmux", "attach-session", "-t", "=loop-a",
    ]  # fmt: skip


def test_an_invalid_socket_name_is_refused() -> None:
    with pytest.raises(ValueError, match="socket"):
        TmuxRunner(socket="../elsewhere")


def test_the_runner_is_built_from_the_routing_config() -> None:
    config = Config(
        {"routing": {"tmux": {"binary": "/opt/tmux", "socket": "t1"}, "dispatchTimeoutSeconds": 9}}
    )
    tmux = TmuxRunner.from_config(config)
    assert (tmux.binary, tmux.socket, tmux.timeout) == ("/opt/tmux", "t1", 9.0)
    assert TmuxRunner.from_config(Config()).command("ls") == ["tmux", "ls"]


# -- with fakes at the process boundary -------------------------------------------------


class FakeTmux:
    """Answers tmux argv from a script; records every call."""

    def __init__(self, fail: str = "", panes: str = "") -> None:
        self.fail = fail
        self.panes = panes
        self.calls: list[list[str]] = []

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: Mapping[str, str | None] | None = None,
        check: bool = True,
        relay: Relay | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        del relay, input
        self.calls.append(list(argv))
        subcommand = argv[3]
        if subcommand == self.fail:
            if check:
                raise DispatchError(f"{subcommand} failed")
            return subprocess.CompletedProcess(list(argv), 1, "", "boom")
        if subcommand == "list-panes":
            if not self.panes:
                return subprocess.CompletedProcess(list(argv), 1, "", "can't find session: x")
            return subprocess.CompletedProcess(list(argv), 0, self.panes, "")
        return subprocess.CompletedProcess(list(argv), 0, "", "")


def test_a_failed_start_kills_the_session_it_created(tmp_path: Path) -> None:
    fake = FakeTmux(fail="respawn-pane")
    tmux = TmuxRunner(socket="s", run=fake)
    with pytest.raises(DispatchError):
        tmux.spawn("loop-a", tmp_path, AGENT)
    subcommands = [call[3] for call in fake.calls]
    assert subcommands == [
        "list-panes",
        "new-session",
        "set-option",
        "respawn-pane",
        "kill-session",
    ]
    assert all(call[:3] == ["tmux", "-L", "s"] for call in fake.calls)


class ExitingServer(FakeTmux):
    """The first ``new-session`` reaches a server that is shutting down."""

    def __call__(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[3] == "new-session" and "new-session" not in [call[3] for call in self.calls]:
            self.calls.append(list(argv))
            return subprocess.CompletedProcess(list(argv), 1, "", "server exited unexpectedly")
        return super().__call__(argv, **kwargs)


def test_a_start_that_meets_an_exiting_server_starts_a_new_one(tmp_path: Path) -> None:
    fake = ExitingServer()
    TmuxRunner(socket="s", run=fake).spawn("loop-a", tmp_path, AGENT)
    subcommands = [call[3] for call in fake.calls]
    assert subcommands == ["list-panes", "new-session", "new-session", "set-option", "respawn-pane"]


class FakeProcessGroup:
    """A process group that dies on the signals in ``fatal``; time passes only in ``sleep``."""

    def __init__(self, fatal: set[int]) -> None:
        self.fatal = fatal
        self.alive = True
        self.now = 0.0
        self.sent: list[tuple[float, int]] = []

    def killpg(self, pgid: int, signum: int) -> None:
        if not self.alive:
            raise ProcessLookupError(pgid)
        self.sent.append((self.now, signum))
        self.alive = signum not in self.fatal

    def running(self, pgid: int) -> bool:
        return self.alive

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _runner_over(group: FakeProcessGroup) -> TmuxRunner:
    fake = FakeTmux(panes="0 4242\n")

    def run(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        fake.panes = "0 4242\n" if group.alive else "1 4242\n"
        return fake(argv, timeout=1.0)

    return TmuxRunner(
        socket="s",
        run=run,
        clock=lambda: group.now,
        sleep=group.sleep,
        signal_group=group.killpg,
        group_running=group.running,
    )


def test_sigkill_follows_sigterm_only_once_the_grace_period_has_passed() -> None:
    group = FakeProcessGroup(fatal={signal.SIGKILL})
    assert _runner_over(group).terminate_harness("loop-a", grace_seconds=5) is True
    assert [signum for _, signum in group.sent] == [signal.SIGTERM, signal.SIGKILL]
    assert group.sent[0][0] == 0.0
    assert group.sent[1][0] >= 5.0


def test_an_agent_that_obeys_sigterm_is_never_sent_sigkill() -> None:
    group = FakeProcessGroup(fatal={signal.SIGTERM, signal.SIGKILL})
    assert _runner_over(group).terminate_harness("loop-a", grace_seconds=5) is True
    assert [signum for _, signum in group.sent] == [signal.SIGTERM]
    assert group.now == 0.0


def test_a_missing_working_directory_or_a_bad_env_name_starts_nothing(tmp_path: Path) -> None:
    fake = FakeTmux()
    tmux = TmuxRunner(socket="s", run=fake)
    with pytest.raises(DispatchError, match="not a directory"):
        tmux.spawn("loop-a", tmp_path / "missing", AGENT)
    with pytest.raises(ValueError, match="environment variable"):
        tmux.spawn("loop-a", tmp_path, AGENT, env={"A=B": "x"})
    assert "new-session" not in [call[3] for call in fake.calls]


def test_live_sessions_lists_exactly_the_sessions_with_a_running_pane(
    tmux: TmuxRunner, tmp_path: Path
) -> None:
    assert tmux.live_sessions() == set()
    tmux.spawn("loop-a-1", tmp_path, ["bash", "-c", "echo ready; exec sleep 300"])
    tmux.spawn("loop-b-1", tmp_path, ["true"])
    assert wait_until(lambda: tmux.liveness("loop-b-1") == "dead")
    assert tmux.live_sessions() == {"loop-a-1"}
    tmux.terminate_harness("loop-a-1", grace_seconds=5)
    assert tmux.live_sessions() == set()


def test_live_sessions_is_none_when_tmux_does_not_answer(tmp_path: Path) -> None:
    assert TmuxRunner(binary=str(tmp_path / "no-tmux"), timeout=5).live_sessions() is None


class EmptyServer(FakeTmux):
    """A server whose last session just ended: it answers until it has exited."""

    def __call__(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[3] == "list-panes":
            self.calls.append(list(argv))
            return subprocess.CompletedProcess(list(argv), 1, "", "no current target")
        return super().__call__(argv, **kwargs)


def test_a_session_asked_about_while_its_server_exits_is_absent_not_unknown() -> None:
    tmux = TmuxRunner(socket="s", run=EmptyServer())
    assert tmux.liveness("loop-a") == "absent"


def test_an_agent_gets_the_spawning_environment_not_the_servers_leftovers(
    tmux: TmuxRunner, tmp_path: Path
) -> None:
    """The server keeps the environment of whichever command first started it; a later
    spawn's agent gets its own HOME, PATH and harness variables, and none of the rest."""
    first = {"PATH": os.environ["PATH"], "HOME": "/first/home", "LEFTOVER_SECRET": "old"}
    first["ANTHROPIC_API_KEY"] = "first-key"
    subprocess.run(
        tmux.command("new-session", "-d", "-s", "loop-first", "sleep", "600"),
        env=first,
        check=True,
    )
    later = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "ANTHROPIC_BASE_URL": "http://x"}
    env = agent_environment(
        {**later, "OTHER": "carried", "GITHUB_TOKEN": "t", "TMUX": "x"}, withheld=("GITHUB_TOKEN",)
    )
    assert env == {**later, "OTHER": "carried"}
    out = tmp_path / "env.txt"
    tmux.spawn("loop-later", tmp_path, ["bash", "-c", f'env > "{out}"; sleep 600'], env)
    assert wait_until(lambda: out.exists() and "HOME=" in out.read_text())
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert seen["HOME"] == str(tmp_path) and seen["ANTHROPIC_BASE_URL"] == "http://x"
    assert "LEFTOVER_SECRET" not in seen and "ANTHROPIC_API_KEY" not in seen
    assert seen["OTHER"] == "carried" and "GITHUB_TOKEN" not in seen


def test_an_environment_too_big_for_tmux_keeps_what_the_agent_needs() -> None:
    big = {f"BULK_{n}": "x" * 200 for n in range(100)}
    needed = {"HOME": "/h", "PATH": "/bin", "ANTHROPIC_BASE_URL": "http://x", "MINE": "y"}
    env = agent_environment({**big, **needed}, passed=("MINE",), withheld=("GITHUB_TOKEN",))
    assert env == needed


def test_the_agents_environment_reaches_it_whole_and_never_on_a_command_line(
    tmux_socket: str,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    """Values go to tmux on stdin: an API key never stands in a tmux client's argv (which
    any user can read in the process list), and quotes, newlines, ``$``, ``~`` and ``#``
    arrive as written."""
    from the_loop.dispatch.process import run

    argvs: list[list[str]] = []

    def recording(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        argvs.append(list(argv))
        return run(argv, **kwargs)

    tmux = TmuxRunner(socket=tmux_socket, timeout=30, run=recording)
    tricky = 'it\'s "quoted" $HOME ~/x #{pane_id} ; {brace}\nsecond line\\'
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-secret-42"}
    env["TRICKY"] = tricky
    out = tmp_path / "env.bin"
    script = f'printf %s "$TRICKY" > "{out}.t"; printf %s "$ANTHROPIC_API_KEY" > "{out}.k"'
    script += "; sleep 600"
    tmux.spawn("loop-envy", tmp_path, ["bash", "-c", script], env)
    assert wait_until(lambda: Path(f"{out}.k").exists() and bool(Path(f"{out}.k").read_text()))
    assert Path(f"{out}.t").read_text() == tricky
    assert Path(f"{out}.k").read_text() == "sk-secret-42"
    assert argvs and not any("sk-secret-42" in word for argv in argvs for word in argv)
