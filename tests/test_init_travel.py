"""What ``init`` writes can be committed (issue 18, item 18): its ``.gitignore`` keeps
everything but ``portable/`` and the config out of a commit, the same block
``docs/cli/state.md`` shows, and the config names no path of the machine it ran on,
so a clone of the project elsewhere resolves to its own places.

Real git throughout; the first test runs a real ``sessions start`` (real tmux on a
private socket, the command harness running a stand-in agent)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers.gitrepo import git, make_remote, write_files
from the_loop.cli import main
from the_loop.config.file import Config, load_config, load_file
from the_loop.dispatch.workspace import Workspace, configured_sources
from the_loop.fsio import TEMP_PREFIX, TEMP_SUFFIX
from the_loop.layout import GENERATED_PATHS, StateLayout
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
SLUG = "github-octo-app-15"
AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]
STATE_DOC = Path(__file__).resolve().parent.parent / "docs" / "cli" / "state.md"


def project(directory: Path) -> Path:
    """A git repository with one commit: the project ``init`` runs in."""
    directory.mkdir(parents=True)
    git(directory, "init", "--quiet")
    write_files(directory, {"README.md": "# app\n"})
    git(directory, "add", "--all")
    git(directory, "commit", "--quiet", "-m", "initial commit")
    return directory


def declared(where: str) -> str:
    """A declared path (``GENERATED_PATHS``) with its placeholders filled in."""
    return where.replace("<slug>", SLUG).replace("<store>", "local")


def tracked(repository: Path, under: str = ".") -> set[str]:
    return set(git(repository, "ls-files", "--", under).splitlines())


def test_a_committed_state_root_tracks_only_portable_and_the_config(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmux_socket: str,
) -> None:
    app = project(tmp_path / "app")
    monkeypatch.chdir(app)
    remote = make_remote(tmp_path, "app")
    assert main(["init", "--repo", f"octo/app={remote}", "--harness", "command"]) == 0
    root = app / ".the-loop"
    config = root / "cli-config.yaml"
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["routing"]["harnesses"]["command"]["argv"] = AGENT
    document["routing"]["tmux"] = {"socket": tmux_socket}
    config.write_text(json.dumps(document), encoding="utf-8")
    # A real start makes the checkout, the machine record, the locks and the log ...
    assert main(["sessions", "start", "--work-item", ITEM.ref, "--no-comment"]) == 0
    capsys.readouterr()
    checkout = Workspace.from_config(load_file(config)).checkout_path(ITEM)
    assert (checkout / ".git").exists() and checkout.is_relative_to(root)
    # ... and every other path the declaration names is made as the code names it.
    layout = StateLayout(root)
    for path in GENERATED_PATHS:
        target = root / declared(path.where)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("{}\n", encoding="utf-8")
    for directory in (layout.portable_dir, root):  # an interrupted atomic write
        (directory / f"{TEMP_PREFIX}{SLUG}.json.k3x9{TEMP_SUFFIX}").write_text("{")
    assert layout.poll_pidfile.is_file() and layout.pidfile.is_file()
    git(app, "add", ".the-loop")
    travelling = {declared(path.where) for path in GENERATED_PATHS if path.portable}
    expected = {f".the-loop/{name}" for name in {".gitignore", "cli-config.yaml", *travelling}}
    assert tracked(app, ".the-loop") == expected
    for path in (checkout, layout.local_dir / f"{SLUG}.json", layout.poll_pidfile):
        assert git(app, "check-ignore", str(path)).strip() == str(path)


def gitignore_block() -> str:
    text = STATE_DOC.read_text(encoding="utf-8")
    match = re.search(r"```gitignore\n(.*?)```", text, re.DOTALL)
    assert match is not None, f"{STATE_DOC} has no gitignore block"
    return match.group(1)


def test_the_gitignore_block_of_the_state_page_is_what_init_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    ignore = tmp_path / "cwd" / ".the-loop" / ".gitignore"
    assert ignore.read_text(encoding="utf-8") == gitignore_block()
    assert f"wrote {ignore}" in capsys.readouterr().out.splitlines()


def test_an_existing_gitignore_is_kept_as_it_is_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ignore = tmp_path / "cwd" / ".the-loop" / ".gitignore"
    ignore.parent.mkdir()
    ignore.write_text("local/\n", encoding="utf-8")
    assert main(["init", "--format", "json"]) == 0
    assert ignore.read_text(encoding="utf-8") == "local/\n"
    items = json.loads(capsys.readouterr().out)["items"]
    assert {"path": str(ignore), "outcome": "kept", "next": []} in items
    assert main(["init"]) == 1  # the config is there now; nothing else changed
    (ignore.parent / "cli-config.yaml").unlink()
    capsys.readouterr()
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert f"kept {ignore} as it was: it should track only portable/" in out


def test_a_clone_of_the_committed_project_names_no_path_of_the_first_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = project(tmp_path / "first" / "app")
    monkeypatch.chdir(first)
    argv = ["init", "--repo", f"octo/app={first}", "--repo", "octo/lib=vendor/lib.git"]
    assert main([*argv, "--harness", "command"]) == 0
    git(first, "add", ".the-loop")
    git(first, "commit", "--quiet", "-m", "the-loop config")
    second = tmp_path / "second" / "app"
    git(tmp_path, "clone", "--quiet", str(first), str(second))
    shutil.rmtree(tmp_path / "first")
    assert ".the-loop/cli-config.yaml" in tracked(second)
    for name in tracked(second):
        assert str(tmp_path / "first") not in (second / name).read_text(encoding="utf-8"), name
    (second / "src").mkdir()
    monkeypatch.chdir(second / "src")
    workspace = Workspace.from_config(load_config())
    assert workspace.root == second / ".the-loop" / "workspaces"
    assert workspace.source_url(ITEM) == str(second)
    assert workspace.source_url(WorkItemRef.parse("github:octo/lib#1")) == str(
        second / "vendor" / "lib.git"
    )
    checkout = workspace.prepare(ITEM)
    assert checkout.path.is_relative_to(second / ".the-loop" / "workspaces")
    assert git(checkout.path, "remote", "get-url", "origin").strip() == str(second)


def test_a_clone_source_outside_the_project_stays_on_this_machine_and_another_sets_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28, item 13: the README's ``init --repo "octo/app=$HOME/src/app"`` run in
    another project: the path lands in the untracked ``local/``, not the tracked config."""
    source = tmp_path / "home" / "src" / "app"
    first = project(tmp_path / "first" / "app")
    monkeypatch.chdir(first)
    assert main(["init", "--repo", f"octo/app={source}"]) == 0
    root = first / ".the-loop"
    machine = root / "local" / "clone-sources.json"
    assert capsys.readouterr().err == (
        f"note: octo/app is cloned from {source}, a path on this machine outside the project: "
        f"kept in {machine}, which never travels; another machine clones it from GitHub until "
        "its operator sets its own there\n"
    )
    config = load_file(root / "cli-config.yaml")
    assert config.get_str_map("routing.workspace.repositories") == {}
    assert json.loads(machine.read_text(encoding="utf-8")) == {
        "version": 1,
        "repositories": {"octo/app": str(source)},
    }
    assert Workspace.from_config(config).source_url(ITEM) == str(source)
    git(first, "add", ".the-loop")
    git(first, "commit", "--quiet", "-m", "the-loop config")
    assert str(tmp_path) not in git(first, "show", "HEAD")
    second = tmp_path / "second" / "app"
    git(tmp_path, "clone", "--quiet", str(first), str(second))
    monkeypatch.chdir(second)
    workspace = Workspace.from_config(load_config())
    assert workspace.source_url(ITEM) == "https://github.com/octo/app.git"
    theirs = tmp_path / "elsewhere" / "app.git"
    mine = second / ".the-loop" / "local" / "clone-sources.json"
    mine.parent.mkdir()
    mine.write_text(json.dumps({"version": 1, "repositories": {"Octo/App": str(theirs)}}))
    assert Workspace.from_config(load_config()).source_url(ITEM) == str(theirs)
    assert main(["config", "check"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"ok: {mine} (this machine's clone sources: Octo/App)"
    ]


def test_a_config_that_names_an_absolute_clone_source_is_read_as_before_without_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What an earlier ``init``, or upstream the-loopy-one 20.10.2, wrote on disk."""
    root = tmp_path / "cwd" / ".the-loop"
    root.mkdir()
    source = tmp_path / "srv" / "app.git"
    (root / "cli-config.yaml").write_text(
        f"routing:\n  workspace:\n    repositories:\n      octo/app: {json.dumps(str(source))}\n",
        encoding="utf-8",
    )
    assert main(["config", "check"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (f"ok: {root / 'cli-config.yaml'} (1 key set)\n", "")
    assert Workspace.from_config(load_config()).source_url(ITEM) == str(source)
    assert main(["state", "paths"]) == 0
    assert capsys.readouterr().err == ""


def test_this_machines_source_wins_over_the_config_s_whatever_the_case_of_its_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "project" / ".the-loop" / "cli-config.yaml"
    workspace = {"repositories": {"octo/app": "../app.git", "octo/lib": "../lib.git"}}
    config = Config(
        {"routing": {"workspace": workspace}}, source=path, clone_sources={"Octo/App": "/m/app"}
    )
    assert configured_sources(config) == {
        "octo/lib": str(path.parents[1] / "lib.git"),
        "Octo/App": "/m/app",
    }


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[1, 2]", "(top level): [1, 2] is not of type 'object'"),
        ('{"version": 2, "repositories": {}}', "version: 2 is not one of [1]"),
        (
            '{"version": 1, "repositories": {"app": "/x"}}',
            "repositories: 'app' is not an <owner>/<repo> name",
        ),
        (
            '{"version": 1, "repositories": {"o/app": ""}}',
            "repositories.o/app: '' is not a usable path",
        ),
        ('{"version": 1, "repos": {}}', "(top level): Additional properties are not allowed"),
        ("{", "cannot read: it is not valid JSON"),
    ],
)
def test_a_bad_clone_sources_file_is_one_line_naming_it_and_exit_2_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    assert main(["init"]) == 0
    machine = tmp_path / "cwd" / ".the-loop" / "local" / "clone-sources.json"
    machine.parent.mkdir()
    machine.write_text(content, encoding="utf-8")
    capsys.readouterr()
    for argv in (["config", "check"], ["sessions", "list"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"error: {machine}: {problem}"), err
        assert len(err.splitlines()) == 1


def test_init_adds_to_a_clone_sources_file_already_there_and_refuses_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "cwd" / ".the-loop"
    machine = root / "local" / "clone-sources.json"
    machine.parent.mkdir(parents=True)
    machine.write_text('{"version": 1, "repositories": {"octo/lib": "/m/lib", "Octo/App": "/old"}}')
    assert main(["init", "--repo", "octo/app=/m/app"]) == 0
    assert json.loads(machine.read_text(encoding="utf-8"))["repositories"] == {
        "octo/lib": "/m/lib",
        "octo/app": "/m/app",
    }
    (root / "cli-config.yaml").unlink()
    machine.write_text("not json", encoding="utf-8")
    capsys.readouterr()
    assert main(["init", "--repo", "octo/app=/m/app"]) == 2
    assert f"error: {machine}: cannot add to it:" in capsys.readouterr().err
    assert machine.read_text(encoding="utf-8") == "not json"
    assert not (root / "cli-config.yaml").exists()


def test_only_a_relative_local_path_is_read_against_the_config_files_directory(
    tmp_path: Path,
) -> None:
    sources = {
        "o/relative": "../vendor/lib.git",
        "o/absolute": "/srv/git/lib.git",
        "o/home": "~/git/lib.git",
        "o/https": "https://git.example/lib.git",
        "o/scp": "git@git.example:o/lib.git",
        "o/host": "git.example:o/lib.git",
    }
    path = tmp_path / "project" / ".the-loop" / "cli-config.yaml"
    workspace = {"root": "checkouts", "repositories": sources}
    config = Config({"routing": {"workspace": workspace}}, source=path)
    assert configured_sources(config) == {
        **sources,
        "o/relative": str(path.parents[1] / "vendor" / "lib.git"),
    }
    assert Workspace.from_config(config).root == path.parent / "checkouts"


def test_a_relative_clone_source_outside_the_project_stays_on_this_machine_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repo octo/app=../app`` leads outside the project just as an absolute path does:
    this machine's, made absolute, never in the config that travels."""
    from the_loop.commands.init_sources import written_source

    project = tmp_path / "project"
    (project / ".the-loop").mkdir(parents=True)
    (tmp_path / "app").mkdir()
    monkeypatch.chdir(project)
    assert written_source("../app", project / ".the-loop") is None
    assert written_source("sub/app", project / ".the-loop") == "../sub/app"
