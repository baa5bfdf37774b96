"""``the-loop init`` through ``main([...])``: it writes a valid, commented config and
never over one, and ``init`` then ``start`` works in a fresh directory (real tmux on a
private socket, real git, the command harness running a stand-in agent)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers.gitrepo import make_remote
from tests.helpers.tmuxsock import kill_server, tmux_socket  # noqa: F401 - fixture
from the_loop.cli import main
from the_loop.config.file import load_file
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.dispatch.workspace import workspace_root

ITEM = "github:octo/app#15"
AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "fresh"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


def written(directory: Path) -> Path:
    return directory / ".the-loop" / "cli-config.yaml"


def test_init_then_start_works_in_a_fresh_directory(
    fresh: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    remote = make_remote(tmp_path, "app")
    assert main(["init", "--repo", f"octo/app={remote}", "--harness", "command"]) == 0
    path = written(fresh)
    machine = path.parent / "local" / "clone-sources.json"
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {path}",
        f"wrote {path.parent / '.gitignore'}",
        f"wrote {machine}",
        "next:",
        f"  $EDITOR {path}",
        "  the-loop sessions start --work-item 'github:octo/app#1'",
        "  the-loop sessions attach --work-item 'github:octo/app#1'",
    ]
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert document["routing"]["workspace"]["repositories"] == {}  # this machine's, beside
    assert json.loads(machine.read_text(encoding="utf-8"))["repositories"] == {
        "octo/app": str(remote)
    }
    # The operator's edit: their agent, and (for the test) a private tmux server.
    document["routing"]["harnesses"]["command"]["argv"] = AGENT
    document["routing"]["tmux"] = {"socket": tmux_socket}
    path.write_text(json.dumps(document), encoding="utf-8")
    (fresh / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(fresh / "src" / "deep")
    assert main(["sessions", "start", "--work-item", ITEM, "--no-comment"]) == 0
    out = capsys.readouterr().out
    checkout = fresh / ".the-loop" / "workspaces" / ".worktrees" / "github.com" / "octo" / "app"
    assert f"in {checkout / 'github-octo-app-15'}" in out
    assert (fresh / ".the-loop" / "local" / "github-octo-app-15.json").is_file()
    assert "loop-github-octo-app-15" in (TmuxRunner(socket=tmux_socket).live_sessions() or set())
    assert list((fresh / "src" / "deep").iterdir()) == []


def test_init_refuses_to_overwrite_a_config_and_changes_nothing(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(fresh)
    path.parent.mkdir()
    path.write_text("# mine\n", encoding="utf-8")
    assert main(["init"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: {path} already exists: edit it (`the-loop docs config` lists every key), "
        "or move it away to start over\n"
    )
    assert path.read_text(encoding="utf-8") == "# mine\n"


@pytest.mark.parametrize("repo", ["octo", "octo/app", "octo/app=", "a b/c=x", "octo/app=x\ty"])
def test_a_malformed_repo_is_a_usage_error_that_creates_nothing(
    fresh: Path, repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--repo", repo]) == 2
    assert "--repo" in capsys.readouterr().err
    assert list(fresh.iterdir()) == []


@pytest.mark.parametrize("harness", ["claude", "cursor", "command"])
def test_what_init_writes_is_a_valid_config_naming_the_harness_and_a_workspace(
    fresh: Path, harness: str
) -> None:
    argv = ["init", "--harness", harness, "--repo", "octo/app=https://git.example/app.git"]
    assert main(argv) == 0
    config = load_file(written(fresh))
    assert config.get_str("routing.defaultHarness") == harness
    assert config.get_str("routing.workspace.root") == "workspaces"  # beside the file
    assert workspace_root(config) == fresh / ".the-loop" / "workspaces"
    assert config.get_str_map("routing.workspace.repositories") == {
        "octo/app": "https://git.example/app.git"
    }
    text = written(fresh).read_text(encoding="utf-8")
    assert text.startswith("# the-loop CLI config, written by `the-loop init`.")


@pytest.fixture
def own_tmux_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The "default" tmux server, inside ``tmp_path``: a config-less spawn uses it."""
    directory = tmp_path / "tmux"
    directory.mkdir()
    monkeypatch.setenv("TMUX_TMPDIR", str(directory))
    yield
    kill_server("default")


def test_a_spawn_with_no_config_at_all_says_defaults_are_in_use_and_how_to_write_one(
    fresh: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    own_tmux_dir: None,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "claude"
    stand_in.write_text("#!/bin/sh\nexec sleep 600\n", encoding="utf-8")
    stand_in.chmod(0o755)
    home = Path(os.environ["HOME"])  # the hermetic one of conftest: Claude Code set up
    (home / ".claude.json").write_text('{"hasCompletedOnboarding": true}', encoding="utf-8")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["sessions", "start", "--work-item", ITEM, "--no-comment"]) == 0
    err = capsys.readouterr().err
    assert (
        "note: no config file found: every key has its default (`the-loop docs config`); "
        "`the-loop init` writes a commented .the-loop/cli-config.yaml here\n"
    ) in err


def test_init_below_another_projects_state_root_warns_that_it_hides_it(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    (fresh / "sub").mkdir()
    monkeypatch.chdir(fresh / "sub")
    capsys.readouterr()
    assert main(["init"]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"warning: {fresh / 'sub' / '.the-loop'} is a new state root inside the project of "
        f"{fresh / '.the-loop'}: commands run at or below {fresh / 'sub'} use it, and no "
        "longer see that one\n"
    )
    assert written(fresh / "sub").is_file()


def test_init_in_a_fresh_directory_warns_of_nothing(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    assert capsys.readouterr().err == ""


def test_init_below_home_does_not_warn_of_the_per_user_state_root(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Path(os.environ["HOME"])  # the hermetic one of conftest
    (home / ".the-loop").mkdir()
    (home / "project").mkdir()
    monkeypatch.chdir(home / "project")
    assert main(["init"]) == 0
    assert capsys.readouterr().err == ""
