"""A bug is exit 3 with one line, the traceback in the crash log; Ctrl-C is still 130.

The bugs are injected through the CLI's public seam: ``COMMAND_MODULES`` names this
module as the ``boom`` command, whose handler raises what ``--raise`` asks for.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from the_loop import cli
from the_loop.cli import main
from the_loop.commands.common import format_parent
from the_loop.commands.render import Result
from the_loop.layout import StateLayout

RAISED: dict[str, BaseException] = {
    "bug": ValueError("kaboom:\n  a second line"),
    "interrupt": KeyboardInterrupt(),
    "nothing": RuntimeError(),
}
LINE = re.compile(
    r"error: internal error: (?P<what>.+) \(details in (?P<path>[^;]+)(?P<why>;.*)?\)\n"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """The ``boom`` command: a handler with a bug in it."""
    parser: argparse.ArgumentParser = subparsers.add_parser("boom", parents=[format_parent()])
    parser.add_argument("--raise", dest="raised", choices=RAISED, default="bug")
    parser.set_defaults(func=_handler)
    return parser


def _handler(args: argparse.Namespace) -> Result:
    raise RAISED[args.raised]


@pytest.fixture
def boom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMAND_MODULES, "boom", __name__)


def configured(tmp_path: Path, root: Path) -> Path:
    config = tmp_path / "cli-config.yaml"
    config.write_text(f"state:\n  root: {root}\n", encoding="utf-8")
    return config


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.usefixtures("boom")
def test_an_unexpected_exception_exits_3_with_one_line_and_the_traceback_in_the_crash_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = StateLayout(tmp_path / "state")
    config = configured(tmp_path, layout.root)
    code, out, err = run(capsys, "--config", str(config), "boom")
    assert (code, out) == (3, "")
    match = LINE.fullmatch(err)
    assert match is not None, err
    assert match["what"] == "ValueError: kaboom: a second line"
    assert (match["path"], match["why"]) == (str(layout.crash_log), None)
    logged = layout.crash_log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in logged and "ValueError: kaboom:" in logged
    assert "argv=['--config'" in logged


@pytest.mark.usefixtures("boom")
def test_every_bug_is_appended_to_the_crash_log_and_json_output_gets_no_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = StateLayout(tmp_path / "state")
    config = configured(tmp_path, layout.root)
    assert run(capsys, "--config", str(config), "boom")[0] == 3
    code, out, err = run(
        capsys, "--config", str(config), "boom", "--raise", "nothing", "--format", "json"
    )
    assert (code, out) == (3, "")
    assert err == f"error: internal error: RuntimeError (details in {layout.crash_log})\n"
    logged = layout.crash_log.read_text(encoding="utf-8")
    assert logged.count("Traceback") == 2 and logged.index("ValueError") < logged.index(
        "RuntimeError"
    )


@pytest.mark.usefixtures("boom")
def test_a_state_root_that_cannot_be_written_sends_the_details_to_the_temporary_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the state root should be", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, out, err = run(capsys, "--config", str(configured(tmp_path, blocked)), "boom")
    assert (code, out) == (3, "")
    match = LINE.fullmatch(err)
    assert match is not None, err
    fallback = Path(match["path"])
    assert fallback.parent == tmp_path and fallback.name.startswith("the-loop-crash-")
    assert match["why"].startswith(f"; could not write {blocked / 'logs' / 'crash.log'}: ")
    assert "ValueError: kaboom" in fallback.read_text(encoding="utf-8")
    assert blocked.read_text(encoding="utf-8") == "a file where the state root should be"


@pytest.mark.usefixtures("boom")
def test_a_config_that_cannot_be_read_still_gives_one_line_and_the_details_somewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("state: [unclosed\n", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, out, err = run(capsys, "--config", str(config), "boom")
    assert (code, out) == (3, "")
    match = LINE.fullmatch(err)
    assert match is not None, err
    assert match["why"].startswith("; the state root could not be found: ")
    assert "ValueError: kaboom" in Path(match["path"]).read_text(encoding="utf-8")


@pytest.mark.usefixtures("boom")
def test_nowhere_to_write_the_details_is_said_in_the_one_line_and_still_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(blocked))
    code, out, err = run(capsys, "--config", str(configured(tmp_path, blocked)), "boom")
    assert (code, out) == (3, "")
    assert err.startswith("error: internal error: ValueError: kaboom: a second line (no details")
    assert err.count("could not write") == 2 and err.count("\n") == 1


@pytest.mark.usefixtures("boom")
def test_ctrl_c_is_still_130_and_writes_no_crash_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = StateLayout(tmp_path / "state")
    config = configured(tmp_path, layout.root)
    code, out, err = run(capsys, "--config", str(config), "boom", "--raise", "interrupt")
    assert (code, out, err) == (130, "", "interrupted\n")
    assert not layout.crash_log.exists()
