"""A key given twice in the config is an error at its line, and ``init`` takes the
poller's settings so nobody merges YAML by hand (issue 18, item 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from the_loop.cli import main
from the_loop.config.yaml import YamlRefused, parse_yaml

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "fresh"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


def test_the_readme_snippet_pasted_under_what_init_wrote_is_refused_at_its_line(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--harness", "command"]) == 0
    path = fresh / ".the-loop" / "cli-config.yaml"
    written = path.read_text(encoding="utf-8")
    pasted = "routing:\n  authorizedUsers: [alice]\n"
    path.write_text(written + pasted, encoding="utf-8")
    capsys.readouterr()
    assert main(["state", "paths"]) == 2
    err = capsys.readouterr().err
    line = len(written.splitlines()) + 1
    first = written.splitlines().index("routing:") + 1
    assert f"{path}: line {line}, column 1: the key 'routing' is given twice" in err
    assert f"(first at line {first})" in err


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: 2\na: 3\n", 3),
        ("routing:\n  tmux:\n    socket: x\n    socket: y\n", 4),
        ("items:\n  - {name: a, name: b}\n", 2),
        ("x: &shared {k: 1}\ny:\n  k: 1\n  k: 2\n", 4),
    ],
)
def test_a_key_given_twice_in_any_mapping_is_refused_with_its_line(text: str, line: int) -> None:
    with pytest.raises(YamlRefused, match="given twice") as raised:
        parse_yaml(text)
    assert raised.value.line == line


def test_the_same_key_in_different_mappings_and_merges_are_accepted() -> None:
    text = "base: &b {k: 1}\none: {k: 2, <<: *b}\ntwo:\n  <<: *b\n  j: 3\n'1': a\n1: b\n"
    assert parse_yaml(text)["one"] == {"k": 2}


def test_init_writes_the_pollers_settings_in_one_file(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["init", "--poll", "octo/app", "--poll", "octo/lib", "--label", "the-loop"]
    assert main([*argv, "--authorized", "alice", "--authorized", "bob"]) == 0
    text = (fresh / ".the-loop" / "cli-config.yaml").read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    assert document["polling"] == {"repositories": ["octo/app", "octo/lib"], "labels": ["the-loop"]}
    assert document["routing"]["authorizedUsers"] == ["alice", "bob"]
    assert [line for line in text.splitlines() if not line.startswith((" ", "#"))] == [
        "routing:",
        "polling:",
    ]
    assert "'github:octo/app#1'" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv", [["--poll", "octo"], ["--poll", "octo/app/x"], ["--label", " "], ["--authorized", ""]]
)
def test_init_refuses_a_malformed_poller_setting_and_creates_nothing(
    fresh: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", *argv]) == 2
    assert "error:" in capsys.readouterr().err
    assert list(fresh.iterdir()) == []


def test_the_readmes_run_it_for_real_is_init_with_the_pollers_flags() -> None:
    section = README.read_text(encoding="utf-8").split("## Run it for real", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "the-loop init --poll octo/app --label the-loop --authorized alice" in section
    assert "\nrouting:" not in section and "\npolling:" not in section
