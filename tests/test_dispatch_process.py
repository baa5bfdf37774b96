"""The one subprocess call: argv only, a timeout, stdin closed, errors that name the command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import the_loop
from the_loop.dispatch.process import STDERR_LIMIT, DispatchError, run
from the_loop.errors import TheLoopError


def test_a_failing_command_raises_an_error_naming_it_and_carrying_its_stderr() -> None:
    with pytest.raises(DispatchError) as raised:
        run(["bash", "-c", "echo 'the reason' >&2; exit 3"], timeout=10)
    message = str(raised.value)
    assert "bash -c" in message
    assert "exit code 3" in message
    assert "the reason" in message
    assert isinstance(raised.value, TheLoopError)


def test_a_missing_binary_is_a_dispatch_error_that_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    with pytest.raises(DispatchError, match="no-such-program not found"):
        run([str(missing), "--flag"], timeout=10)


def test_a_command_that_outlives_its_timeout_is_stopped_and_reported() -> None:
    with pytest.raises(DispatchError, match=r"timed out after 0\.2s"):
        run(["sleep", "30"], timeout=0.2)


def test_without_check_a_failure_is_returned_not_raised() -> None:
    completed = run(["bash", "-c", "echo out; echo err >&2; exit 4"], timeout=10, check=False)
    assert (completed.returncode, completed.stdout, completed.stderr) == (4, "out\n", "err\n")


def test_a_relayed_run_hands_over_the_stderr_as_it_comes_and_still_keeps_it() -> None:
    relayed: list[str] = []
    script = "echo out; printf 'step 1\\r' >&2; sleep 0.2; echo 'step 2, done.' >&2; exit 4"
    completed = run(["bash", "-c", script], timeout=10, check=False, relay=relayed.append)
    assert "".join(relayed) == "step 1\rstep 2, done.\n"
    assert len(relayed) >= 2  # as it came, not at the end
    assert (completed.returncode, completed.stdout, completed.stderr) == (
        4,
        "out\n",
        "step 1\rstep 2, done.\n",
    )
    with pytest.raises(DispatchError, match="exit code 4: step 1"):
        run(["bash", "-c", script], timeout=10, relay=relayed.append)


def test_a_relayed_run_that_outlives_its_timeout_is_stopped_and_reported() -> None:
    relayed: list[str] = []
    script = "echo started >&2; exec sleep 30"
    with pytest.raises(DispatchError, match=r"timed out after 0\.3s: started"):
        run(["bash", "-c", script], timeout=0.3, relay=relayed.append)
    assert relayed == ["started\n"]


def test_stdin_is_closed_so_a_reader_never_waits() -> None:
    assert run(["cat"], timeout=10).stdout == ""


def test_env_is_laid_over_the_inherited_environment(tmp_path: Path) -> None:
    completed = run(
        ["bash", "-c", 'echo "$LOOP_EXTRA $HOME"; pwd'],
        timeout=10,
        cwd=tmp_path,
        env={"LOOP_EXTRA": "extra"},
    )
    extra, home = completed.stdout.splitlines()[0].split(" ")
    assert extra == "extra"
    assert home == str(tmp_path / "home")
    assert completed.stdout.splitlines()[1] == str(tmp_path)


def test_an_argument_is_never_interpreted_by_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "injected"
    completed = run(["echo", f"$(touch {marker}); rm -rf /"], timeout=10)
    assert completed.stdout == f"$(touch {marker}); rm -rf /\n"
    assert not marker.exists()


def test_a_huge_stderr_is_trimmed_to_its_tail_in_the_message() -> None:
    script = "head -c 100000 /dev/zero | tr '\\0' x >&2; echo THE-END >&2; exit 1"
    with pytest.raises(DispatchError) as raised:
        run(["bash", "-c", script], timeout=10)
    message = str(raised.value)
    assert message.endswith("THE-END")
    assert len(message) < STDERR_LIMIT + 500


def test_no_other_package_module_runs_a_subprocess() -> None:
    """Only dispatch/process.py may spawn processes (attach's os.execvp aside)."""
    package = Path(the_loop.__file__).parent
    spawning = re.compile(
        r"\bsubprocess\.(run|Popen|call|check_call|check_output|getoutput|getstatusoutput)\b"
        r"|\bos\.(system|popen|spawn\w*|posix_spawn\w*)\("
    )
    offenders = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path != package / "dispatch" / "process.py"
        and spawning.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
