"""``the-loop doctor [--fix]``: the first-run answers as pure functions over Claude Code's
files, and the command end to end with real tmux and git, a stand-in ``claude`` on PATH,
the loopback fake GitHub and a private HOME."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.world import World
from the_loop.agent.firstrun import (
    BYPASS_ACCEPTED,
    KEY_RESPONSES,
    LEGACY_BYPASS_ACCEPTED,
    ONBOARDING_DONE,
    claude_files,
    first_run,
    fixes,
    key_suffix,
    refuses_bypass_as_root,
    unattended_gaps,
)
from the_loop.cli import build_parser
from the_loop.commands.doctor import tmux_paste_crash
from the_loop.commands.parsing import walk

KEY = "sk-ant-api03-doctor-test-key-0123456789-ABCDEFGHIJKLMNOPQRST"
SUFFIX = "ABCDEFGHIJKLMNOPQRST"
BYPASS = ("--dangerously-skip-permissions",)
TOKEN = "ghp_doctor-test-token"
REPO = "octo/app"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli" / "commands" / "doctor.md"

# -- the pure functions ---------------------------------------------------------------


def test_the_key_claude_code_keeps_is_the_last_20_characters_of_the_trimmed_key() -> None:
    assert key_suffix(f"  {KEY}\n") == SUFFIX
    assert key_suffix("short") == "short"


def test_a_fresh_home_lacks_every_answer_an_unattended_agent_needs() -> None:
    assert unattended_gaps({}, api_key=KEY, args=BYPASS) == [
        "Claude Code's onboarding is not done",
        "the API key in ANTHROPIC_API_KEY is not approved",
        "the bypass-permissions warning is not accepted",
    ]
    assert unattended_gaps({}, api_key=None, args=()) == ["Claude Code's onboarding is not done"]
    assert unattended_gaps({}, api_key="  ", args=()) == ["Claude Code's onboarding is not done"]


def test_a_home_with_every_answer_has_no_gap_whichever_file_holds_the_bypass() -> None:
    answered = {ONBOARDING_DONE: True, KEY_RESPONSES: {"approved": [SUFFIX], "rejected": []}}
    settings = {BYPASS_ACCEPTED: True}
    assert unattended_gaps(answered, api_key=KEY, args=BYPASS, settings=settings) == []
    legacy = {**answered, LEGACY_BYPASS_ACCEPTED: True}  # older releases kept it here
    assert unattended_gaps(legacy, api_key=KEY, args=BYPASS) == []
    assert unattended_gaps(answered, api_key=KEY, args=BYPASS) == [
        "the bypass-permissions warning is not accepted"
    ]


def test_a_rejected_key_is_a_gap_of_its_own_and_a_truthy_string_is_no_answer() -> None:
    rejected = {ONBOARDING_DONE: "yes", KEY_RESPONSES: {"approved": [], "rejected": [SUFFIX]}}
    assert unattended_gaps(rejected, api_key=KEY, args=()) == [
        "Claude Code's onboarding is not done",
        "the API key in ANTHROPIC_API_KEY was rejected",
    ]
    assert first_run(rejected, api_key=KEY, args=()).key == "rejected"


@pytest.mark.parametrize(
    ("args", "bypasses"),
    [
        (["--dangerously-skip-permissions"], True),
        (["--verbose", "--permission-mode", "bypassPermissions"], True),
        (["--permission-mode=bypassPermissions"], True),
        (["--permission-mode", "acceptEdits"], False),
        (["--allow-dangerously-skip-permissions"], False),
        (["--permission-mode"], False),
        ([], False),
    ],
)
def test_only_the_args_that_start_in_bypass_mode_need_its_warning_accepted(
    args: list[str], bypasses: bool
) -> None:
    assert first_run({}, api_key=None, args=args).bypass is (False if bypasses else None)


def test_fix_sets_only_the_named_keys_and_keeps_every_other() -> None:
    claude_json = {"numStartups": 7, "projects": {"/w": {"hasTrustDialogAccepted": True}}}
    claude_json[KEY_RESPONSES] = {"approved": ["old-key-suffix-00000"], "rejected": [SUFFIX]}
    settings = {"theme": "dark"}
    plan = fixes(claude_json, api_key=KEY, args=BYPASS, settings=settings)
    assert plan.claude_json == {
        "numStartups": 7,
        "projects": {"/w": {"hasTrustDialogAccepted": True}},
        KEY_RESPONSES: {"approved": ["old-key-suffix-00000", SUFFIX], "rejected": []},
        ONBOARDING_DONE: True,
    }
    assert plan.settings == {"theme": "dark", BYPASS_ACCEPTED: True}
    assert [(change.file, change.key) for change in plan.changes] == [
        ("claude.json", ONBOARDING_DONE),
        ("claude.json", KEY_RESPONSES),
        ("settings", BYPASS_ACCEPTED),
    ]
    assert all(SUFFIX not in change.describe() for change in plan.changes)
    assert claude_json[KEY_RESPONSES] == {
        "approved": ["old-key-suffix-00000"],
        "rejected": [SUFFIX],
    }


def test_fix_of_a_ready_home_changes_nothing_and_never_writes_an_unasked_bypass() -> None:
    ready = {ONBOARDING_DONE: True, KEY_RESPONSES: {"approved": [SUFFIX], "rejected": []}}
    plan = fixes(ready, api_key=KEY, args=(), settings={})
    assert (plan.claude_json, plan.settings, plan.changes) == (None, None, ())
    assert fixes({}, api_key=None, args=()).settings is None


def test_bypass_mode_as_root_is_refused_outside_a_sandbox_claude_code_recognises() -> None:
    assert refuses_bypass_as_root(BYPASS, uid=0, environ={})
    assert not refuses_bypass_as_root(BYPASS, uid=0, environ={"IS_SANDBOX": "1"})
    assert not refuses_bypass_as_root(BYPASS, uid=0, environ={"CLAUDE_CODE_BUBBLEWRAP": "1"})
    assert refuses_bypass_as_root(BYPASS, uid=0, environ={"IS_SANDBOX": "true"})
    assert not refuses_bypass_as_root(BYPASS, uid=1000, environ={})
    assert not refuses_bypass_as_root((), uid=0, environ={})


def test_the_files_are_the_homes_unless_claude_config_dir_moves_them(tmp_path: Path) -> None:
    home = claude_files({"HOME": str(tmp_path)})
    assert (home.claude_json, home.settings) == (
        tmp_path / ".claude.json",
        tmp_path / ".claude" / "settings.json",
    )
    moved = claude_files({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert (moved.claude_json, moved.settings) == (
        tmp_path / "c" / ".claude.json",
        tmp_path / "c" / "settings.json",
    )


@pytest.mark.parametrize(
    ("version", "crashes"),
    [
        ("tmux 3.3a", True),
        ("tmux 3.2", True),
        ("tmux 2.9a", True),
        ("tmux next-3.4", True),
        ("tmux 3.4-rc", True),
        ("tmux 3.4", False),
        ("tmux 3.5a", False),
        ("tmux next-3.5", False),
        ("tmux 10.1", False),
        ("tmux master", None),
        ("tmux openbsd-7.5", None),
    ],
)
def test_a_tmux_before_3_4_has_the_dead_pane_paste_crash(version: str, crashes: bool) -> None:
    assert tmux_paste_crash(version) is crashes


# -- the command, end to end ----------------------------------------------------------


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "octo-bot"})) as fake:
        yield fake


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in ``claude`` first on PATH, no key or sandbox variable: returns HOME."""
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text('#!/bin/sh\necho "2.1.332 (Claude Code)"\n', encoding="utf-8")
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return Path(os.environ["HOME"])


def doctor_world(tmp_path: Path, github: FakeGitHub, **routing: Any) -> World:
    """A config polling one repository on the fake; the claude harness with ``routing``'s
    keys (``args``, ``passEnv``)."""
    claude = {"harnesses": {"claude": routing}} if routing else {}
    return World(
        tmp_path / "world",
        {
            "routing": claude,
            "polling": {"repositories": [REPO]},
            "integrations": {"github": {"apiUrl": github.url}},
        },
    )


def lines_of(out: str) -> dict[str, str]:
    """Each check line's name and its whole line (``fixed``/``cannot fix`` lines left out)."""
    found = (re.match(r"(ok|info|warn|FAIL)\s+([^:]+):", line) for line in out.splitlines())
    return {match[2]: match.string for match in found if match}


def write(path: Path, document: dict[str, Any], mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    path.chmod(mode)


def test_a_ready_machine_passes_every_check_and_exits_0(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    answered = {ONBOARDING_DONE: True, KEY_RESPONSES: {"approved": [SUFFIX], "rejected": []}}
    write(machine / ".claude.json", answered, 0o600)
    world = doctor_world(tmp_path, github)
    code, out, err = world.run_cli(["doctor"])
    assert (code, err) == (0, "")
    lines = lines_of(out)
    assert list(lines) == [
        "tmux",
        "git",
        "harness",
        "claude first run",
        "github token",
        f"github {REPO}",
        "state root",
    ]
    tmux = subprocess.run(["tmux", "-V"], capture_output=True, text=True, check=True).stdout
    assert lines["tmux"].startswith("warn" if tmux_paste_crash(tmux) else "ok")
    assert tmux.strip() in lines["tmux"]
    assert lines["git"].startswith("ok    git: git version ")
    assert lines["harness"].startswith("ok    harness: claude 2.1.332 (Claude Code) at ")
    assert lines["claude first run"].startswith("ok    claude first run: onboarding done, the")
    assert "GitHub knows it as octo-bot" in lines["github token"]
    assert lines[f"github {REPO}"] == f"ok    github {REPO}: readable (its issues answered)"
    assert lines["state root"].startswith(f"ok    state root: {world.layout.root} is made")
    assert TOKEN not in out and SUFFIX not in out


def test_fix_writes_only_the_named_keys_prints_each_change_and_a_second_fix_changes_nothing(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("IS_SANDBOX", "1")  # so bypass mode as root is allowed too
    claude_json, settings = machine / ".claude.json", machine / ".claude" / "settings.json"
    write(claude_json, {"numStartups": 3, "userID": "u1", "projects": {"/w": {}}}, 0o640)
    write(settings, {"theme": "dark", "permissions": {"allow": ["Bash(ls)"]}}, 0o644)
    world = doctor_world(tmp_path, github, args=list(BYPASS), passEnv=["IS_SANDBOX"])
    assert world.run_cli(["doctor"])[0] == 1  # not fixed yet: the answers are missing
    assert json.loads(claude_json.read_text(encoding="utf-8")) == {
        "numStartups": 3,
        "userID": "u1",
        "projects": {"/w": {}},
    }

    code, out, err = world.run_cli(["doctor", "--fix"])
    assert (code, err) == (0, "")
    assert [line for line in out.splitlines() if line.startswith("fixed")] == [
        f"fixed claude first run: hasCompletedOnboarding: true in {claude_json}",
        "fixed claude first run: customApiKeyResponses: the API key in ANTHROPIC_API_KEY "
        f"approved in {claude_json}",
        f"fixed claude first run: skipDangerousModePermissionPrompt: true in {settings}",
    ]
    assert json.loads(claude_json.read_text(encoding="utf-8")) == {
        "numStartups": 3,
        "userID": "u1",
        "projects": {"/w": {}},
        ONBOARDING_DONE: True,
        KEY_RESPONSES: {"approved": [SUFFIX], "rejected": []},
    }
    assert json.loads(settings.read_text(encoding="utf-8")) == {
        "theme": "dark",
        "permissions": {"allow": ["Bash(ls)"]},
        BYPASS_ACCEPTED: True,
    }
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o640
    assert stat.S_IMODE(settings.stat().st_mode) == 0o644
    assert lines_of(out)["claude first run"].startswith("ok    claude first run: onboarding done")
    assert SUFFIX not in out
    assert [p.name for p in claude_json.parent.iterdir() if p.name.endswith(".tmp")] == []

    before = {
        path: (path.stat().st_mtime_ns, path.read_bytes()) for path in (claude_json, settings)
    }
    code, again, _ = world.run_cli(["doctor", "--fix"])
    assert code == 0
    assert [line for line in again.splitlines() if line.startswith("fixed")] == []
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (claude_json, settings)} == before


def test_fix_creates_the_files_readable_by_their_owner_only_and_reports_as_json(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    world = doctor_world(tmp_path, github)
    code, out, _ = world.run_cli(["doctor", "--fix", "--format", "json"])
    document = json.loads(out)
    assert (code, document["command"], document["ok"]) == (0, "doctor", True)
    assert [change["key"] for change in document["summary"]["fixed"]] == [
        ONBOARDING_DONE,
        KEY_RESPONSES,
    ]
    assert {change["file"] for change in document["summary"]["fixed"]} == {
        str(machine / ".claude.json")
    }
    assert stat.S_IMODE((machine / ".claude.json").stat().st_mode) == 0o600
    assert not (machine / ".claude" / "settings.json").exists()  # no bypass in the args
    assert [set(item) for item in document["items"]] == [
        {"check", "status", "found", "remedy"}
    ] * len(document["items"])
    assert SUFFIX not in out and TOKEN not in out


def test_a_file_claude_code_keeps_that_cannot_be_read_fails_and_is_never_written(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    (machine / ".claude.json").write_text("{not json", encoding="utf-8")
    code, out, _ = doctor_world(tmp_path, github).run_cli(["doctor", "--fix"])
    assert code == 1
    line = lines_of(out)["claude first run"]
    assert line.startswith(f"FAIL  claude first run: cannot read {machine / '.claude.json'}: ")
    assert "cannot fix claude first run: repair it or move it aside" in out
    assert (machine / ".claude.json").read_text(encoding="utf-8") == "{not json"


def test_no_token_fails_only_while_polling_is_configured(
    tmp_path: Path, machine: Path, github: FakeGitHub
) -> None:
    world = doctor_world(tmp_path, github)
    code, out, _ = world.run_cli(["doctor"])
    assert code == 1
    assert lines_of(out)["github token"].startswith(
        "FAIL  github token: none set in $GITHUB_TOKEN and $GH_TOKEN, and polling.repositories "
        "names 1 to poll; export one there"
    )
    world.configure(
        {"routing": {"defaultHarness": "command", "harnesses": {"command": {"argv": ["true"]}}}}
    )
    code, out, _ = world.run_cli(["doctor"])
    assert code == 0, out
    assert lines_of(out)["github token"] == (
        "info  github token: none set in $GITHUB_TOKEN and $GH_TOKEN; none is needed: "
        "no repository is polled"
    )
    assert lines_of(out)["harness"].startswith("ok    harness: command: true at ")
    assert "claude first run" not in lines_of(out)
    assert github.requests == []


def test_a_refused_token_and_an_unreadable_repository_each_fail_their_line(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = doctor_world(tmp_path, github)
    world.configure(
        {
            "polling": {"repositories": [REPO, "octo/secret"]},
            "integrations": {"github": {"apiUrl": github.url, "tokenEnv": "LOOP_TOKEN"}},
        }
    )
    monkeypatch.setenv("LOOP_TOKEN", "ghp_not-one-github-knows")
    code, out, _ = world.run_cli(["doctor"])
    assert code == 1
    lines = lines_of(out)
    assert lines["github token"].startswith("FAIL  github token: $LOOP_TOKEN is set, but ")
    assert "401" in lines["github token"] and "GitHub refused the token" in lines["github token"]
    assert "ghp_not-one-github-knows" not in out

    monkeypatch.setenv("LOOP_TOKEN", TOKEN)
    github.fail_repository("octo/secret", status=404)
    code, out, _ = world.run_cli(["doctor"])
    lines = lines_of(out)
    assert code == 1
    assert lines["github token"].startswith("ok    github token: $LOOP_TOKEN: GitHub knows it")
    assert lines[f"github {REPO}"].startswith("ok")
    assert lines["github octo/secret"].startswith("FAIL  github octo/secret: not readable: ")
    assert "404" in lines["github octo/secret"]


def test_what_fix_cannot_fix_it_says_and_the_exit_stays_1(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = doctor_world(tmp_path, github)
    world.configure(
        {
            "routing": {
                "tmux": {"binary": "no-such-tmux"},
                "harnesses": {"claude": {"binary": "no-such-claude"}},
            },
            "integrations": {"github": {"apiUrl": github.url}},
        }
    )
    code, out, _ = world.run_cli(["doctor", "--fix"])
    assert code == 1
    lines = lines_of(out)
    assert lines["tmux"] == "FAIL  tmux: no-such-tmux is not on PATH"
    assert lines["harness"].startswith("FAIL  harness: the claude harness cannot run: no-such-")
    assert lines["claude first run"].startswith("ok")  # fixed, though its binary is not there
    assert "cannot fix tmux: install it, or set routing.tmux.binary" in out.splitlines()
    assert any(
        line.startswith("cannot fix harness: the claude harness") for line in out.splitlines()
    )


@pytest.mark.skipif(os.getuid() != 0, reason="Claude Code refuses bypass mode only to root")
def test_bypass_mode_as_root_without_a_sandbox_variable_fails(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_BUBBLEWRAP", raising=False)
    world = doctor_world(tmp_path, github, args=list(BYPASS))
    code, out, _ = world.run_cli(["doctor", "--fix"])
    assert code == 1
    assert lines_of(out)["claude as root"].startswith("FAIL  claude as root: Claude Code refuses")
    assert "cannot fix claude as root: " in out


def test_auto_mode_behind_a_gateway_is_a_warning_with_the_mode_to_set(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's default auto mode checks commands on Anthropic's side; through a
    gateway that does not pass that check on, each such command stops at a dialog (seen
    with the pinned agent: tests/screens/claude-2.1.332/auto-mode-check.txt)."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8089/")
    out = doctor_world(tmp_path / "auto", github).run_cli(["doctor", "--format", "json"])[1]
    [check] = [c for c in json.loads(out)["items"] if c["check"] == "claude auto mode"]
    assert check["status"] == "warn", "a warning: the gateway may pass the check on"
    out = doctor_world(tmp_path / "text", github).run_cli(["doctor"])[1]
    assert lines_of(out)["claude auto mode"] == (
        "warn  claude auto mode: auto mode behind a gateway (ANTHROPIC_BASE_URL): if the gateway "
        "does not pass its safety check on, each command the check must see stops at a "
        "dialog; add --permission-mode default to routing.harnesses.claude.args (each prompt "
        "is then said on the ticket, for allow or deny)"
    )
    world = doctor_world(tmp_path / "manual", github, args=["--permission-mode", "default"])
    assert "claude auto mode" not in lines_of(world.run_cli(["doctor"])[1])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    assert "claude auto mode" not in lines_of(
        doctor_world(tmp_path / "a", github).run_cli(["doctor"])[1]
    )


def test_auto_mode_is_told_by_the_args_and_the_settings_default_mode() -> None:
    from the_loop.agent.firstrun import auto_mode_behind_gateway

    gateway = {"ANTHROPIC_BASE_URL": "https://gateway.example/v1"}
    assert auto_mode_behind_gateway([], environ=gateway, settings={})
    assert not auto_mode_behind_gateway([], environ={}, settings={})
    assert not auto_mode_behind_gateway(["--permission-mode=plan"], environ=gateway, settings={})
    assert not auto_mode_behind_gateway(
        ["--dangerously-skip-permissions"], environ=gateway, settings={}
    )
    chosen = {"permissions": {"defaultMode": "acceptEdits"}}
    assert not auto_mode_behind_gateway([], environ=gateway, settings=chosen)
    auto = {"permissions": {"defaultMode": "auto"}}
    assert auto_mode_behind_gateway([], environ=gateway, settings=auto)


def test_a_state_root_that_is_a_file_fails(
    tmp_path: Path, machine: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = doctor_world(tmp_path, github)
    world.layout.root.write_text("", encoding="utf-8")
    code, out, _ = world.run_cli(["doctor"])
    assert code == 1
    assert lines_of(out)["state root"].startswith(
        f"FAIL  state root: {world.layout.root} is not a directory"
    )


def test_every_flag_of_doctor_is_on_its_page() -> None:
    parser = dict(walk(build_parser()))["doctor"]
    text = PAGE.read_text(encoding="utf-8")
    flags = [flag for action in parser._actions for flag in action.option_strings]  # pyright: ignore[reportPrivateUsage]
    assert "--fix" in flags
    assert [flag for flag in flags if not re.search(rf"`{re.escape(flag)}(?![\w-])", text)] == []
