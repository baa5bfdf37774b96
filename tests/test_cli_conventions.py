"""The CLI's conventions: examples in every help, -V, global flags anywhere, did you mean,
bare groups print help, and a closed stdout ends quietly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from the_loop import __version__
from the_loop.cli import build_parser, main
from the_loop.commands.parsing import walk

BIN = Path(sys.executable).parent / "the-loop"
COMMAND_PATHS = [path for path, _ in walk(build_parser())]


@pytest.mark.parametrize("path", COMMAND_PATHS)
def test_every_help_ends_with_an_example_of_its_own_command(path: str) -> None:
    parser = dict(walk(build_parser()))[path]
    help_text = parser.format_help()
    examples = help_text.partition("\nexamples:\n")[2]
    assert examples, f"`the-loop {path} --help` has no examples"
    assert all(f"the-loop {path}".rstrip() in line for line in examples.splitlines())


def test_every_ref_in_an_example_is_quoted_for_the_shell() -> None:
    helps = "".join(parser.epilog or "" for _, parser in walk(build_parser()))
    refs = re.findall(r"(\S*github:\S+)", helps)
    assert refs
    assert [ref for ref in refs if not ref.startswith("'")] == []


def test_dash_capital_v_prints_the_version_like_dash_dash_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == f"the-loop {__version__}\n"
    assert main(["-V", "sessions", "list"]) == 0  # the parser's own -V, past the fast path
    assert capsys.readouterr().out == f"the-loop {__version__}\n"


@pytest.mark.parametrize(
    ("argv", "config"),
    [
        (["--config", "a.yaml", "sessions", "list"], "a.yaml"),
        (["sessions", "--config", "b.yaml", "list"], "b.yaml"),
        (["sessions", "list", "--config", "c.yaml"], "c.yaml"),
        (["events", "--config", "d.yaml"], "d.yaml"),
        (["state", "paths", "--config", "e.yaml"], "e.yaml"),
        (["sessions", "list"], None),
    ],
)
def test_the_config_flag_is_read_before_or_after_the_command(
    argv: list[str], config: str | None
) -> None:
    assert build_parser().parse_args(argv).config == config


@pytest.mark.parametrize(
    "argv",
    [
        ["--config", "a.yaml", "sessions", "list", "--config=c.yaml"],
        ["sessions", "--config", "a.yaml", "list", "--config", "c.yaml"],
    ],
)
def test_the_config_flag_given_before_and_after_the_command_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith("the-loop: error: argument --config: given more than once; it takes one")
    )


def test_a_config_named_after_the_command_is_the_one_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.yaml"
    assert main(["sessions", "list", "--config", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"error: {missing}: config file named by --config does not exist\n"
    )


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["sesions"], "sessions"),
        (["sessions", "lsit"], "list"),
        (["sessions", "stpo"], "stop"),
        (["state", "chek"], "check"),
        (["completion", "bsh"], "bash"),
    ],
)
def test_a_mistyped_command_is_a_usage_error_that_suggests_the_nearest(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert f"invalid choice: {argv[-1]!r} — did you mean {suggestion!r}?" in last


@pytest.mark.parametrize("group", ["sessions", "state"])
def test_a_bare_command_group_prints_its_own_help_and_succeeds(
    group: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([group]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"usage: the-loop {group} ")
    assert "\nexamples:\n" in captured.out
    assert captured.err == ""


def _closed_pipe_run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the installed CLI with stdout a pipe whose reading end is already closed."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [str(BIN), *argv], stdout=writer, stderr=subprocess.PIPE, cwd=cwd, timeout=60
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    "argv", [["--version"], ["-V"], ["--help"], ["sessions"], ["state", "paths"]]
)
def test_a_closed_stdout_ends_quietly_with_success(argv: list[str], tmp_path: Path) -> None:
    completed = _closed_pipe_run(argv, tmp_path)
    assert (completed.returncode, completed.stderr) == (0, b"")


def test_a_long_listing_piped_to_head_ends_quietly_with_success(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    line = (
        '{"ts":"2026-01-01T00:00:00.000Z","source":"sessions","event":"session.closed",'
        '"level":"info","pid":1,"work_item":"github:octo/app#15","reason":"stop"}\n'
    )
    log.write_text(line * 20_000)  # far more than a pipe holds: the writer meets the close
    with subprocess.Popen(
        [str(BIN), "events", "--file", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    ) as the_loop:
        assert the_loop.stdout is not None and the_loop.stderr is not None
        head = subprocess.run(["head", "-1"], stdin=the_loop.stdout, capture_output=True)
        the_loop.stdout.close()
        stderr = the_loop.stderr.read()
        returncode = the_loop.wait(timeout=60)
    assert head.stdout.count(b"\n") == 1
    assert (returncode, stderr) == (0, b"")


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete "), ("zsh", "#compdef the-loop"), ("fish", "complete --command the-loop")],
)
def test_completion_prints_the_script_for_each_shell(
    shell: str, marker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert marker in script and "the-loop" in script


def _complete(line: str, cwd: Path, output: Path) -> list[str]:
    """What the installed CLI answers when the shell completes ``line``."""
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(output),
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
    }
    subprocess.run([str(BIN)], env=env, cwd=cwd, check=True, timeout=60)
    return output.read_text().split("\v")


def test_completion_offers_commands_flags_and_the_refs_this_machine_holds(
    tmp_path: Path,
) -> None:
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {tmp_path / 'state'}\n")
    register = ["sessions", "register", "--work-item", "github:octo/app#15", "--harness"]
    register += ["command", "--harness-session-id", "s1", "--config", str(config)]
    assert main(register) == 0
    output = tmp_path / "completions"
    assert "sessions" in [word.strip() for word in _complete("the-loop sess", tmp_path, output)]
    flags = _complete("the-loop sessions stop --", tmp_path, output)
    assert "--work-item" in [word.strip() for word in flags]
    line = f"the-loop sessions stop --config {config} --work-item "
    assert [word.strip() for word in _complete(line, tmp_path, output)] == ["github:octo/app#15"]


def test_the_version_and_a_listing_never_import_argcomplete(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom the_loop.cli import main\n"
        "main(['--version']); main(['-V']); main(['sessions', 'list'])\n"
        "print('argcomplete' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert completed.stdout.splitlines()[-1] == "False"


ROOT = Path(__file__).resolve().parents[1]


def test_the_package_writes_no_ansi_escapes() -> None:
    escapes = ("\x1b", "\\x1b", "\\033", "\\u001b", "\\e[")
    found = [
        str(source.relative_to(ROOT))
        for source in (ROOT / "the_loop").rglob("*.py")
        if any(escape in source.read_text(encoding="utf-8") for escape in escapes)
    ]
    assert found == []
