"""The CLI config: search order, validation, and one clear line for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop.cli import main
from the_loop.config import Config, ConfigError, find_config, load_config, load_file
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
        ("routing: [unclosed\n", "(top level)"),
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
