"""The entry point: version, help, and building only the chosen command's parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop import __version__
from the_loop.cli import COMMAND_MODULES, build_parser, chosen_command, main


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"the-loop {__version__}\n"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMAND_MODULES:
        assert name in out


def test_no_command_prints_help_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "usage: the-loop" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "chosen"),
    [
        (["sessions", "list"], "sessions"),
        (["--config", "sessions", "events"], "events"),
        (["--config=x.yaml", "state", "check"], "state"),
        (["-h", "sessions"], None),
        (["bogus"], None),
        ([], None),
    ],
)
def test_the_chosen_command_is_found_past_the_config_value(
    argv: list[str], chosen: str | None
) -> None:
    assert chosen_command(argv) == chosen


def test_an_unknown_command_is_a_usage_error_naming_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err and "sessions" in err


@pytest.mark.parametrize(
    ("argv", "blamed"),
    [
        (["sessions", "list", "--statsu", "active"], "the-loop sessions list"),
        (["sessions", "list", "--format", "json", "extra"], "the-loop sessions list"),
        (["--bogus"], "the-loop"),
    ],
)
def test_an_unknown_flag_is_blamed_on_the_command_it_follows(
    argv: list[str], blamed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{blamed}: error: unrecognized arguments: ")
    assert err.endswith(f"(see '{blamed} --help')\n")
    assert err.count("\n") == 1


def test_a_single_command_parser_parses_like_the_full_one() -> None:
    argv = ["sessions", "reset", "--all", "--dry-run"]
    assert vars(build_parser(only="sessions").parse_args(argv)) == vars(
        build_parser().parse_args(argv)
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--conf", "sessions", "events", "--types"],
        ["--config", "events", "sessions", "list"],
        ["--config=sessions", "events", "--types"],
    ],
)
def test_the_single_command_parser_reads_argv_exactly_as_the_full_one(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    def outcome(only: str | None) -> tuple[object, str]:
        try:
            parsed: object = vars(build_parser(only=only).parse_args(argv))
        except SystemExit as exit_:
            parsed = exit_.code
        return parsed, capsys.readouterr().err.splitlines()[-1:].__repr__()

    assert outcome(chosen_command(argv)) == outcome(None)


def test_a_stray_oserror_is_one_error_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "not-a-log"
    directory.mkdir()
    assert main(["events", "--file", str(directory)]) == 1
    assert capsys.readouterr().err == f"error: {directory} is a directory, not a regular file\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list", "--portable-dir", ""],
        ["sessions", "list", "--registry-dir", "  "],
        ["sessions", "reset", "--all", "--dry-run", "--portable-dir", "a\nb"],
        ["sessions", "register", "--work-item", "github:o/r#1", "--harness", "command",
         "--harness-session-id", "s", "--cwd", ""],
        ["events", "--file", ""],
        ["state", "check", "--checkout", "\t"],
    ],
)  # fmt: skip
def test_a_blank_or_control_character_path_flag_is_refused_before_anything_runs(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert "is not a path" in capsys.readouterr().err
    assert not (Path.cwd() / ".the-loop").exists()


def test_an_empty_config_flag_is_refused_not_read_as_no_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--config", "", "sessions", "list"]) == 2
    assert capsys.readouterr().err == "error: --config: an empty path names no config file\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "stpo"],
        ["sessions", "stop"],
        ["sessions", "stop", "--work-item", "gh:octo/app#1"],
        ["sessions", "stop", "--work-item", "octo/app#1", "--work-item", "octo/app#2"],
        ["events", "--format", "yaml"],
        ["--no-such-flag"],
    ],
)
def test_a_usage_error_is_one_line_on_stderr_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert ": error: " in lines[0]
    assert lines[0].endswith("--help')")
