"""``the-loop config check`` finds the config as every command does, says which file it
read, and names every problem of it on a line of its own (issue 18, item 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from the_loop.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "cli-config.yaml"


def config_file(directory: Path, text: str, name: str = "cli-config.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["config", "check", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


GOOD = "routing:\n  defaultHarness: command\n  tmux:\n    socket: loop\npolling:\n  labels: [x]\n"


def test_a_good_config_is_ok_naming_the_file_and_how_many_keys_it_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, GOOD)
    assert check(capsys, "--config", str(path)) == (0, f"ok: {path} (3 keys set)\n", "")


def test_the_config_is_found_as_every_command_finds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nearest = config_file(Path.cwd() / ".the-loop", GOOD)
    assert check(capsys)[1] == f"ok: {nearest} (3 keys set)\n"
    named = config_file(tmp_path / "elsewhere", "routing: {model: opus}\n", "named.yaml")
    monkeypatch.setenv("THE_LOOP_CLI_CONFIG", str(named))
    assert check(capsys)[1] == f"ok: {named} (1 key set)\n"
    assert main(["--config", str(nearest), "config", "check"]) == 0
    assert capsys.readouterr().out == f"ok: {nearest} (3 keys set)\n"


def test_a_relative_config_path_is_named_as_the_absolute_file_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config_file(Path.cwd(), GOOD, "mine.yaml")
    assert (
        check(capsys, "--config", "mine.yaml")[1]
        == f"ok: {Path.cwd() / 'mine.yaml'} (3 keys set)\n"
    )


def test_with_no_config_file_every_key_has_its_default_and_that_is_ok(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = check(capsys)
    assert (code, err) == (0, "")
    assert out.startswith("no config file found: every key has its default")
    assert "the-loop docs config" in out


def test_every_key_given_twice_is_a_line_naming_its_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "routing:\n  model: a\n  model: b\npolling:\n  labels: [x]\nrouting:\n  effort: high\n"
    path = config_file(tmp_path, text)
    code, out, err = check(capsys, "--config", str(path))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"error: {path}: line 3, column 3: the key 'model' is given twice in one mapping "
        "(first at line 2): YAML would keep only the last; merge the two into one",
        f"error: {path}: line 6, column 1: the key 'routing' is given twice in one mapping "
        "(first at line 1): YAML would keep only the last; merge the two into one",
    ]


def test_an_unknown_key_is_answered_with_the_nearest_known_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, "routing:\n  tmuxx: {}\n")
    code, out, err = check(capsys, "--config", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: routing: Additional properties are not allowed ('tmuxx' was "
        "unexpected); did you mean 'tmux'?\n"
    )


def test_every_bad_value_is_a_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "routing:\n  defaultHarness: nope\npolling:\n  intervalSeconds: fast\n"
    path = config_file(tmp_path, text)
    code, out, err = check(capsys, "--config", str(path))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"error: {path}: routing.defaultHarness: 'nope' is not one of "
        "['claude', 'cursor', 'command']",
        f"error: {path}: polling.intervalSeconds: 'fast' is not of type 'number'",
    ]


def test_a_file_that_is_not_yaml_is_one_line_naming_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, "routing:\n  tmux: [\n")
    code, out, err = check(capsys, "--config", str(path))
    assert (code, out, len(err.splitlines())) == (2, "", 1)
    assert err.startswith(f"error: {path}: line 3, column 1: not valid YAML")


def test_a_named_config_that_is_not_there_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    code, out, err = check(capsys, "--config", str(missing))
    assert (code, out) == (2, "")
    assert err == f"error: {missing}: config file named by --config does not exist\n"


def test_as_json_the_file_read_and_its_problems_are_one_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = config_file(tmp_path, GOOD)
    assert main(["config", "check", "--config", str(good), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["command"], document["ok"], document["errors"]) == ("config check", True, [])
    assert document["items"] == [
        {"file": str(good), "ok": True, "keysSet": 3, "problems": [], "cloneSources": None}
    ]
    bad = config_file(tmp_path / "bad", "routing:\n  tmuxx: {}\n")
    assert main(["config", "check", "--config", str(bad), "--format", "json"]) == 2
    document = json.loads(capsys.readouterr().out)
    [item] = document["items"]
    assert (document["ok"], item["ok"], item["file"]) == (False, False, str(bad))
    assert item["problems"] == document["errors"] and len(item["problems"]) == 1


def test_the_example_config_checks_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--config", str(EXAMPLE))
    assert code == 0 and out.startswith(f"ok: {EXAMPLE} (")


def test_a_bare_config_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config"]) == 0
    assert "check" in capsys.readouterr().out
