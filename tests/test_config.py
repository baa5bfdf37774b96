"""The CLI config: search order, validation, and one clear line for a bad file."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from the_loop.cli import main
from the_loop.config.file import Config, ConfigError, find_config, load_config, load_file
from the_loop.layout import layout_from_config

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "cli-config.yaml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_no_config_anywhere_means_all_defaults(tmp_path: Path) -> None:
    config = load_config(None, environ={"HOME": str(tmp_path / "nohome")}, cwd=tmp_path)
    assert config.source is None
    assert layout_from_config(config).local_dir == Path(".the-loop/local")


def test_the_search_order_is_flag_then_env_then_cwd_then_home(tmp_path: Path) -> None:
    flag = write(tmp_path / "flag.yaml", "{}")
    env = write(tmp_path / "env.yaml", "{}")
    cwd_config = write(tmp_path / "cwd" / ".the-loop" / "cli-config.yaml", "{}")
    home_config = write(tmp_path / "home" / ".the-loop" / "cli-config.yaml", "{}")
    environ = {"HOME": str(tmp_path / "home"), "THE_LOOP_CLI_CONFIG": str(env)}
    assert find_config(str(flag), environ, tmp_path / "cwd") == flag
    assert find_config(None, environ, tmp_path / "cwd") == env
    del environ["THE_LOOP_CLI_CONFIG"]
    assert find_config(None, environ, tmp_path / "cwd") == cwd_config
    assert find_config(None, environ, tmp_path / "elsewhere") == home_config


def test_a_named_config_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        find_config(str(tmp_path / "missing.yaml"), {}, tmp_path)


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("state:\n  root: a\n   b: c\n", "line 3, column 5", "mapping values are not allowed here"),
        ("a: *nope\n", "line 1, column 4", "found undefined alias 'nope'"),
        ("a: !!python/name:os.system x\n", "line 1, column 4", "could not determine a constructor"),
    ],
)  # fmt: skip
def test_a_yaml_error_says_its_line_and_column_and_the_problem_in_one_line(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert str(raised.value).startswith(f"{path}: {where}: not valid YAML: {problem}")


NOT_ALLOWED = "Additional properties are not allowed"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("state:\n  roots: x\n", f"state: {NOT_ALLOWED} ('roots' was unexpected); "
         "did you mean 'root'?"),
        ("routin: {}\n", f"(top level): {NOT_ALLOWED} ('routin' was unexpected); "
         "did you mean 'routing'?"),
        ("routing:\n  workspace:\n    clone_protocol: ssh\n", f"routing.workspace: {NOT_ALLOWED} "
         "('clone_protocol' was unexpected); did you mean 'cloneProtocol'?"),
        ("routing:\n  zzz: 1\n", f"routing: {NOT_ALLOWED} ('zzz' was unexpected)"),
    ],
)  # fmt: skip
def test_a_mistyped_key_is_answered_with_the_nearest_known_key_at_its_level(
    tmp_path: Path, text: str, said: str
) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert str(raised.value) == f"{path}: {said}"


def test_the_example_config_is_valid() -> None:
    config = load_file(EXAMPLE)
    assert config.get_str("routing.defaultHarness") == "claude"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("routing:\n  tmux:\n    keepSessionOnClose: 'yes'\n", "routing.tmux.keepSessionOnClose"),
        ("routing:\n  spawnOnUnmatched: sometimes\n", "routing.spawnOnUnmatched"),
        ("routing:\n  tmuxx: {}\n", "routing"),
        ("- a list\n", "(top level)"),
        ("routing: [unclosed\n", "line 2, column 1"),
    ],
)
def test_a_bad_config_names_file_key_and_problem(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {key}")
    assert "\n" not in message


def test_the_cli_refuses_a_bad_config_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "bad.yaml", "routing:\n  defaultHarness: vim\n")
    assert main(["--config", str(path), "sessions", "list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: {path}: routing.defaultHarness:")


def test_typed_getters_fall_back_on_the_wrong_type() -> None:
    config = Config({"a": {"b": "x", "n": 3, "t": True, "l": ["p", "q"], "m": {"k": "v"}}})
    assert config.get_str("a.b") == "x"
    assert config.get_float("a.n", 1.0) == 3.0
    assert config.get_float("a.t", 1.0) == 1.0
    assert config.get_bool("a.b", False) is False
    assert config.get_str_list("a.l") == ["p", "q"]
    assert config.get_str_map("a.m") == {"k": "v"}
    assert config.get("a.missing.deeper", 7) == 7


# -- hostile config bytes (issue 11, point 4) ----------------------------------------


def billion_laughs(levels: int = 9) -> str:
    """Nine anchored lists, each of nine aliases of the one before: 9**9 values expanded."""
    names = [chr(ord("a") + level) for level in range(levels)]
    items = [f"&{names[0]} [x, x, x, x, x, x, x, x, x]"]
    for before, name in itertools.pairwise(names):
        items.append(f"&{name} [" + ",".join([f"*{before}"] * 9) + "]")
    return "[" + ", ".join(items) + "]"


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI in a subprocess, bounded by the harness's timeout."""
    return subprocess.run(
        [sys.executable, "-m", "the_loop", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


def assert_one_line_exit_2(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ")
    assert len(result.stderr) < 400
    for needle in needles:
        assert needle in result.stderr


def test_a_yaml_alias_bomb_is_refused_in_one_line_before_it_expands(tmp_path: Path) -> None:
    path = write(tmp_path / "bomb.yaml", f"routing:\n  prompt: {billion_laughs()}\n")
    assert len(path.read_bytes()) < 500
    result = run_cli(tmp_path, "--config", str(path), "sessions", "list")
    assert_one_line_exit_2(result, str(path), "alias")


def test_a_recursive_yaml_alias_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "loop.yaml", "routing: &r {harnesses: {command: {argv: [*r]}}}\n")
    result = run_cli(tmp_path, "--config", str(path), "sessions", "list")
    assert_one_line_exit_2(result, str(path), "alias")


def test_a_small_alias_within_the_budget_is_still_allowed(tmp_path: Path) -> None:
    text = "routing:\n  harnesses:\n    claude: &h {args: [--verbose]}\n    cursor: *h\n"
    config = load_file(write(tmp_path / "anchors.yaml", text))
    assert config.get_str_list("routing.harnesses.cursor.args") == ["--verbose"]


def test_nesting_deeper_than_the_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "deep.yaml", "routing: " + "[" * 5000 + "]" * 5000 + "\n")
    result = run_cli(tmp_path, "--config", str(path), "sessions", "list")
    assert_one_line_exit_2(result, str(path), "nested")


def test_non_utf8_bytes_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"routing:\n  prompt: caf\xe9\n")
    result = run_cli(tmp_path, "--config", str(path), "sessions", "list")
    assert_one_line_exit_2(result, str(path), "UTF-8", "0xe9")


def test_a_config_directory_is_named_as_a_directory(tmp_path: Path) -> None:
    (tmp_path / "confdir").mkdir()
    result = run_cli(tmp_path, "--config", str(tmp_path / "confdir"), "sessions", "list")
    assert_one_line_exit_2(result, "is a directory")
    assert "does not exist" not in result.stderr


def test_a_fifo_config_is_named_for_what_it_is_and_never_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.yaml")
    result = run_cli(tmp_path, "--config", str(tmp_path / "fifo.yaml"), "sessions", "list")
    assert_one_line_exit_2(result, "not a regular file")


def test_a_directory_where_the_default_config_goes_is_not_silently_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / ".the-loop" / "cli-config.yaml").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a directory"):
        find_config(None, {}, tmp_path)


PATH_KEYS = [
    "state.root",
    "eventLog.path",
    "routing.registryDir",
    "routing.spawnWorkdir",
    "routing.workspace.root",
    "routing.workspace.gitBinary",
    "routing.workspace.repositories.octo/app",
    "routing.tmux.binary",
    "routing.harnesses.claude.binary",
]


def nested(dotted: str, value: object) -> dict[str, object]:
    head, _, rest = dotted.partition(".")
    if head == "routing" and rest.startswith("workspace.repositories."):
        return {"routing": {"workspace": {"repositories": {rest.split(".", 2)[2]: value}}}}
    return {head: nested(rest, value) if rest else value}


@pytest.mark.parametrize("key", PATH_KEYS)
@pytest.mark.parametrize("value", ["a\x00b", "x\ny", "tab\there", "bell\x07", "  ", "\t", "ok\n"])
def test_every_path_key_refuses_control_characters_and_blanks(
    tmp_path: Path, key: str, value: str
) -> None:
    path = write(tmp_path / "paths.yaml", json.dumps(nested(key, value)))
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {key}: ")
    assert "\n" not in message and "\x00" not in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("routing.harnesses.command.argv", ["bash", "-c", "a\x00b"]),
        ("routing.harnesses.claude.args", ["--x\x00"]),
        ("routing.prompt", "do\x00it"),
        ("routing.model", "op\x00us"),
        ("integrations.github.apiUrl", "http://h/\x00"),
    ],
)
def test_strings_passed_to_a_process_refuse_nul(tmp_path: Path, key: str, value: object) -> None:
    path = write(tmp_path / "nul.yaml", json.dumps(nested(key, value)))
    with pytest.raises(ConfigError, match=re.escape(key)):
        load_file(path)


def test_a_nul_in_the_state_root_is_refused_by_list_and_reset_in_one_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "nul.yaml", 'state:\n  root: "a\\0b"\n')
    for args in (["sessions", "list"], ["sessions", "reset", "--all", "--dry-run"]):
        assert_one_line_exit_2(run_cli(tmp_path, "--config", str(path), *args), "state.root")


def test_an_error_message_quotes_at_most_a_bounded_part_of_a_value(tmp_path: Path) -> None:
    path = write(tmp_path / "long.yaml", "routing:\n  defaultHarness: " + "v" * 100_000 + "\n")
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert len(str(raised.value)) < len(str(path)) + 250
    assert "..." in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "state:\n  root: 2026-13-45\n",
        "routing:\n  prompt: " + "9" * 5000 + "\n",
        "routing:\n  prompt: !!binary '%%%'\n",
    ],
)
def test_values_yaml_cannot_construct_are_refused_in_one_line(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "odd.yaml", text)
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert str(raised.value).startswith(f"{path}: ")
