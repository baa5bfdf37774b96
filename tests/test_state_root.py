"""One state root per project, found like git finds ``.git`` (decision 013), through
``main([...])``: the nearest ``.the-loop/``, ``state.root`` against its config file's
directory, ``~/.the-loop`` otherwise, and ``state paths`` naming the rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from the_loop.cli import main

ITEM = "github:octo/app#15"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def chosen(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, out, _ = run(capsys, "state", "paths", "--format", "json", *extra)
    assert code == 0
    summary = json.loads(out)["summary"]
    assert set(summary.pop("machine")) == {"name", "id"}  # this machine, beside the root
    return summary


def project(tmp_path: Path, config: str | None = None) -> Path:
    """``<tmp>/project`` with a ``.the-loop/`` (and a config when given) and two subdirectories."""
    root = tmp_path / "project"
    (root / ".the-loop").mkdir(parents=True)
    for name in ("dirA", "dirB/deeper"):
        (root / name).mkdir(parents=True)
    if config is not None:
        (root / ".the-loop" / "cli-config.yaml").write_text(config, encoding="utf-8")
    return root


def test_two_shells_in_two_subdirectories_of_a_project_see_one_state_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, config="{}\n")
    monkeypatch.chdir(root / "dirA")
    argv = ["sessions", "register", "--work-item", ITEM, "--harness", "command"]
    assert run(capsys, *argv, "--harness-session-id", "s-1")[0] == 0
    monkeypatch.chdir(root / "dirB" / "deeper")
    code, out, _ = run(capsys, "sessions", "list", "--format", "json")
    assert code == 0
    assert [item["workItem"] for item in json.loads(out)["items"]] == [ITEM]
    assert chosen(capsys) == {
        "root": str(root / ".the-loop"),
        "rule": "nearest",
        "reason": "the nearest .the-loop/ at or above the working directory",
    }


def test_a_relative_state_root_resolves_against_the_config_files_directory_from_any_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, config="state:\n  root: ../shared-state\n")
    config = root / ".the-loop" / "cli-config.yaml"
    monkeypatch.chdir(root / "dirB" / "deeper")
    assert chosen(capsys)["root"] == str(root / "shared-state")
    monkeypatch.chdir(tmp_path / "cwd")
    assert main(["--config", str(config), "state", "paths", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["root"] == str(root / "shared-state")
    assert summary["rule"] == "state.root"
    assert "relative to that file's directory" in summary["reason"]


def test_with_no_the_loop_directory_anywhere_the_root_is_the_home_one_and_cwd_stays_empty(
    hermetic_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "sessions", "list")
    assert (code, out) == (0, "")
    home_root = hermetic_home / ".the-loop"
    assert f"no sessions in the state root {home_root} (the per-user default" in err
    assert list(Path.cwd().iterdir()) == []
    assert chosen(capsys)["rule"] == "home"


def test_an_explicit_state_root_wins_over_the_environment_which_wins_over_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, config=f"state:\n  root: {tmp_path / 'configured'}\n")
    monkeypatch.chdir(root / "dirA")
    assert chosen(capsys)["rule"] == "state.root"
    monkeypatch.setenv("THE_LOOP_STATE_ROOT", str(tmp_path / "from-env"))
    assert chosen(capsys)["root"] == str(tmp_path / "from-env")
    assert chosen(capsys, "--state-root", "flagged") == {
        "root": str(root / "dirA" / "flagged"),
        "rule": "--state-root",
        "reason": "named by --state-root",
    }


def test_state_paths_prints_the_root_and_the_rule_that_chose_it_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "state", "paths", "--state-root", str(tmp_path / "st"))
    assert code == 0
    assert out.splitlines()[:2] == [
        f"state root: {tmp_path / 'st'}",
        "chosen by:  named by --state-root",
    ]


def test_the_config_is_found_in_the_nearest_the_loop_directory_above_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, config="state:\n  root: elsewhere\n")
    monkeypatch.chdir(root / "dirB" / "deeper")
    assert chosen(capsys)["root"] == str(root / ".the-loop" / "elsewhere")


def test_the_documented_defaults_written_out_as_empty_strings_mean_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``state.root: ""``, ``eventLog.path: ""`` and ``routing.registryDir: ""`` are what
    docs/cli/config.md lists as their defaults: accepted, and the same as leaving them out."""
    config = 'state: {root: ""}\neventLog: {path: ""}\nrouting: {registryDir: ""}\n'
    root = project(tmp_path, config=config)
    monkeypatch.chdir(root / "dirA")
    assert chosen(capsys)["rule"] == "nearest"
    argv = ["sessions", "register", "--work-item", ITEM, "--harness", "command"]
    assert run(capsys, *argv, "--harness-session-id", "s-1")[0] == 0
    assert list((root / ".the-loop" / "local").glob("*.json"))
    assert (root / ".the-loop" / "logs" / "events.jsonl").is_file()
