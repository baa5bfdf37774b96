"""Resume only what can be resumed: a Claude Code session is resumed (``--resume <id>``)
only when Claude Code keeps its transcript, else started afresh under the same id with the
ticket's prompt again (``claude --resume`` of a session that never had a turn says "No
conversation found" and exits). Other harnesses resume as they always did.

Where the transcript lives was read off Claude Code 2.1.332 (the pinned binary): under
``$CLAUDE_CONFIG_DIR`` or ``$HOME/.claude``, ``projects/<cwd with each character but an
ASCII letter or digit as '-'>/<id>.jsonl``, written at the first turn, not before; a
name past 200 characters is cut there and ends in ``-<hash>``. The last test proves it
against that binary.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, running_fake_anthropic, user_says
from tests.helpers.claude_agent import (
    FAKE_API_KEY,
    OFFLINE_ENV,
    claude_binary,
    git_repo,
    make_agent_home,
)
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.config.file import Config
from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.dispatch.factory import build_dispatcher
from the_loop.dispatch.harnesses import (
    ClaudeHarness,
    CommandHarness,
    CursorHarness,
    claude_transcripts,
)
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

REF = WorkItemRef.parse("github:octo/app#15")
TARGET = "loop-github-octo-app-15"
SID = "0b9c3f2e-8d1a-4c5e-9f00-123456789abc"


def transcript(config_dir: Path, cwd: str, session_id: str = SID) -> Path:
    """Write a transcript where Claude Code 2.1.332 does (a name of 200 characters or less)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    path = config_dir / "projects" / name / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"type":"user"}\n', encoding="utf-8")
    return path


# -- where Claude Code keeps a transcript ----------------------------------------------------


def test_a_claude_session_with_a_transcript_under_home_can_be_resumed_and_one_without_cannot(
    tmp_path: Path,
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work.dir_x y+z@1"
    cwd.mkdir()
    claude = ClaudeHarness()
    env = {"HOME": str(home)}
    assert not claude.can_resume(SID, cwd=cwd, env=env)
    written = transcript(home / ".claude", str(cwd))
    assert written.parent.name.endswith("-work-dir-x-y-z-1")
    assert claude.can_resume(SID, cwd=cwd, env=env)
    assert not claude.can_resume("another-id", cwd=cwd, env=env)


def test_claude_config_dir_takes_the_place_of_home_dot_claude(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    transcript(tmp_path / "home" / ".claude", str(cwd))
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    assert not ClaudeHarness().can_resume(SID, cwd=cwd, env=env)
    transcript(tmp_path / "config", str(cwd))
    assert ClaudeHarness().can_resume(SID, cwd=cwd, env=env)


def test_a_cwd_reached_through_a_link_is_found_under_either_name(tmp_path: Path) -> None:
    real = tmp_path / "real" / "work"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    transcript(tmp_path / "home" / ".claude", str(real))
    env = {"HOME": str(tmp_path / "home")}
    assert ClaudeHarness().can_resume(SID, cwd=tmp_path / "link" / "work", env=env)


def test_a_project_name_past_200_characters_is_matched_by_its_cut_and_any_hash(
    tmp_path: Path,
) -> None:
    cwd = tmp_path / ("d" * 120) / ("e.f" * 40)
    name = "".join(c if c.isalnum() else "-" for c in str(cwd))
    assert len(name) > 200
    folder = tmp_path / "home" / ".claude" / "projects" / f"{name[:200]}-1a2b3c"
    folder.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home")}
    assert not ClaudeHarness().can_resume(SID, cwd=cwd, env=env)
    (folder / f"{SID}.jsonl").write_text("{}\n", encoding="utf-8")
    assert claude_transcripts(SID, cwd, env) == [folder / f"{SID}.jsonl"]
    assert ClaudeHarness().can_resume(SID, cwd=cwd, env=env)


def test_no_home_or_an_id_that_is_no_plain_file_name_finds_no_transcript(tmp_path: Path) -> None:
    assert claude_transcripts(SID, tmp_path, {}) == []
    for bad in ("../escape", "a/b", "*", "[x]", ""):
        assert claude_transcripts(bad, tmp_path, {"HOME": str(tmp_path)}) == []


def test_every_other_harness_resumes_as_it_always_did(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert CursorHarness().can_resume(SID, cwd=tmp_path, env=env)
    assert CommandHarness(["agent"]).can_resume(SID, cwd=tmp_path, env=env)


# -- the dispatcher's restart, with a stand-in `claude` -------------------------------------


class Env(World):
    """A state root, a stand-in ``claude`` that writes its argv to a file and stays up,
    the agent's HOME, and a tmux socket."""

    def __init__(self, tmp_path: Path, socket: str) -> None:
        super().__init__(tmp_path, source="test")
        self.tmp_path = tmp_path
        self.socket = socket
        self.argv_file = tmp_path / "claude-argv.txt"
        self.binary = tmp_path / "bin" / "claude"
        self.binary.parent.mkdir()
        self.binary.write_text(
            f'#!/bin/bash\nprintf "%s\\n" "$@" > {self.argv_file}\nexec sleep 300\n',
            encoding="utf-8",
        )
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IXUSR)
        self.cwd = tmp_path / "checkout"
        self.cwd.mkdir()
        self.home = Path(os.environ["HOME"])  # the hermetic HOME the agent gets

    def dispatcher(self, warnings: list[str] | None = None) -> Dispatcher:
        routing: dict[str, Any] = {
            "harnesses": {"claude": {"binary": str(self.binary)}},
            "tmux": {"socket": self.socket},
            "dispatchTimeoutSeconds": 60,
        }
        return build_dispatcher(
            Config({"routing": routing}),
            registry=self.registry,
            control_store=self.control,
            events=self.events,
            on_warning=None if warnings is None else warnings.append,
        )

    def claude_session(self) -> Session:
        """A live record of a claude session whose agent has gone (no tmux session)."""
        return self.registry.register(
            Session(REF, "claude", SID, cwd=str(self.cwd), tmux_target=TARGET)
        )

    def argv(self) -> list[str]:
        assert wait_until(self.argv_file.exists), "the stand-in claude never ran"
        return self.argv_file.read_text(encoding="utf-8").splitlines()

    def spawned(self) -> list[dict[str, Any]]:
        lines = self.layout.event_log.read_text(encoding="utf-8").splitlines()
        events = [json.loads(line) for line in lines]
        return [e for e in events if e["event"] == "session.spawned"]


@pytest.fixture
def env(tmp_path: Path, tmux_socket: str) -> Env:  # noqa: F811 - the imported fixture
    return Env(tmp_path, tmux_socket)


def test_a_claude_session_that_never_had_a_turn_restarts_afresh_with_the_prompt_again(
    env: Env,
) -> None:
    asked: list[bool] = []

    def prompt() -> str:
        asked.append(True)
        return "Ticket github:octo/app#15: fix the widget"

    resumed = env.dispatcher().resume_session(env.claude_session(), prompt=prompt)
    argv = env.argv()
    assert argv[:2] == ["--session-id", SID] and "--resume" not in argv
    assert argv[-1] == "Ticket github:octo/app#15: fix the widget" and asked == [True]
    assert "--settings" in argv, "the-loop's hooks as on any start"
    assert resumed.harness_session_id == SID and resumed.status == "active"
    [event] = env.spawned()
    assert (event["resumed"], event["fresh_start"], event["session_id"]) == (True, True, SID)


def test_a_claude_session_with_its_transcript_is_resumed_and_its_prompt_never_read(
    env: Env,
) -> None:
    transcript(env.home / ".claude", str(env.cwd))

    def prompt() -> str:
        raise AssertionError("a resume needs no prompt")

    env.dispatcher().resume_session(env.claude_session(), prompt=prompt)
    argv = env.argv()
    assert argv[:2] == ["--resume", SID] and "--session-id" not in argv
    [event] = env.spawned()
    assert "fresh_start" not in event


def test_a_fresh_restart_with_no_prompt_given_says_so_and_starts_without_one(env: Env) -> None:
    warnings: list[str] = []
    env.dispatcher(warnings).resume_session(env.claude_session())
    argv = env.argv()
    assert argv[:2] == ["--session-id", SID]
    assert argv[-2] == "--settings", "no prompt after the hooks"
    assert warnings == [
        f"{REF.ref}: its agent never had a turn to resume: started afresh as session {SID}, "
        "without the ticket's prompt"
    ]


# -- the real Claude Code ------------------------------------------------------------------


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with running_fake_anthropic() as fake:
        yield fake


def test_the_real_claude_resumes_only_a_session_that_had_a_turn(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cwd = git_repo(tmp_path / "work.tree_15")
    make_agent_home(Path(os.environ["HOME"]), trusted=[cwd])
    for name, value in {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": anthropic.url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_API_KEY)
    world = World(tmp_path / "loop", source="test")
    routing = {
        "harnesses": {"claude": {"binary": str(claude_binary()), "passEnv": ["ANTHROPIC_API_KEY"]}},
        "tmux": {"socket": tmux_socket},
        "dispatchTimeoutSeconds": 60,
    }
    dispatcher = build_dispatcher(
        Config({"routing": routing}),
        registry=world.registry,
        control_store=world.control,
        events=world.events,
    )
    session = world.registry.register(Session(REF, "claude", SID, cwd=str(cwd), tmux_target=TARGET))

    # Never had a turn: no transcript; a fresh start under the same id takes the prompt.
    dispatcher.resume_session(session, prompt=lambda: "the first prompt, again")
    turn = anthropic.wait_for(user_says("the first prompt, again"), timeout=30)
    assert turn.headers["x-claude-code-session-id"] == SID
    assert wait_until(lambda: ClaudeHarness().can_resume(SID, cwd=cwd, env=os.environ), 20)

    # Had a turn: ended, then resumed by its transcript, and the conversation goes on.
    assert dispatcher.tmux.terminate_harness(TARGET, grace_seconds=5)
    dispatcher.resume_session(session, prompt=lambda: "never sent")
    assert wait_until(lambda: "the first prompt, again" in dispatcher.tmux.capture(TARGET), 30)
    assert dispatcher.liveness(session) == "live"
    screen = dispatcher.tmux.capture(TARGET)
    assert "No conversation found" not in screen and "never sent" not in screen
    assert [e.get("fresh_start") for e in _spawned(world)] == [True, None]


def _spawned(world: World) -> list[dict[str, Any]]:
    lines = world.layout.event_log.read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "session.spawned"]
