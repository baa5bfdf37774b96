"""The real Claude Code CLI in tests: the pinned binary, a private HOME, its environment,
and a tmux pane to drive it in.

The binary is the one ``make agent`` installs under ``.tools/agent`` (the version in
``tests/agent-version.txt``); ``THE_LOOP_TEST_CLAUDE`` names another. A missing binary
fails the test (never skips it): CI must run the real agent.

Every run is offline: the agent talks only to the loopback fake of
``tests/fake_anthropic.py``. Its environment is built from nothing (``env -i``), turns
off every nonessential request, and points ``HTTPS_PROXY``/``HTTP_PROXY`` at the fake
too, so a request for any other host arrives at the fake as a recorded ``CONNECT`` (or
an absolute URL) and is refused, instead of reaching DNS.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import (
    kill_server,
    private_socket_name,
    remove_socket_file,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
VERSION_FILE = REPO / "tests" / "agent-version.txt"
INSTALL_DIR = REPO / ".tools" / "agent"
OVERRIDE_ENV = "THE_LOOP_TEST_CLAUDE"

# The key the agent is given; Claude Code remembers an approved key by its last 20 characters.
FAKE_API_KEY = "sk-ant-api03-fake-key-for-the-loop-tests-0123456789abcdefghij"

# The switches that keep the agent off the network but for its API. The first four are
# in Claude Code's environment-variable reference (the first one alone implies the next
# three); the others are read by the pinned binary (their names are in it) and each turns
# off one more start-up side job. With them, a run makes no request but its turns.
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    "DISABLE_INSTALLATION_CHECKS": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}

WIDTH, HEIGHT = 120, 40


def pinned_version() -> str:
    return VERSION_FILE.read_text(encoding="utf-8").strip()


def _candidates(root: Path) -> list[Path]:
    modules = root / "node_modules"
    found = sorted(modules.glob("@anthropic-ai/claude-code-linux-*/claude"))
    return [*found, modules / ".bin" / "claude"]


@functools.cache
def claude_binary() -> Path:
    """The agent binary to run; fails the test, naming ``make agent``, when there is none."""
    override = os.environ.get(OVERRIDE_ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"{OVERRIDE_ENV}={override} is not an executable file")
        return path
    for path in _candidates(INSTALL_DIR):
        if path.is_file() and os.access(path, os.X_OK):
            _check_version(path)
            return path
    pytest.fail(
        f"Claude Code {pinned_version()} is not installed under {INSTALL_DIR}: run `make agent` "
        f"(or set {OVERRIDE_ENV} to a claude binary)"
    )


def _check_version(path: Path) -> None:
    result = subprocess.run(
        [str(path), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **OFFLINE_ENV},
        stdin=subprocess.DEVNULL,
    )
    version = result.stdout.split(" ", 1)[0].strip()
    if version != pinned_version():
        pytest.fail(
            f"{path} is Claude Code {version or '?'} ({result.stderr.strip()[:200]}), "
            f"not the pinned {pinned_version()}: run `make agent`"
        )


# -- the private HOME ---------------------------------------------------------------------


def mangled_project_dir(cwd: Path) -> str:
    """The directory name under ``~/.claude/projects/`` that holds a cwd's transcripts.

    Claude Code replaces every character but ASCII letters and digits with ``-``.
    """
    return re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


@dataclasses.dataclass(frozen=True)
class AgentHome:
    """A private HOME for one agent: ``~/.claude.json`` and ``~/.claude/``."""

    root: Path
    api_key: str = FAKE_API_KEY

    @property
    def claude_json_path(self) -> Path:
        return self.root / ".claude.json"

    @property
    def settings_path(self) -> Path:
        return self.root / ".claude" / "settings.json"

    def claude_json(self) -> dict[str, Any]:
        try:
            return json.loads(self.claude_json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def write_claude_json(self, value: Mapping[str, Any]) -> None:
        self.claude_json_path.write_text(json.dumps(value, indent=2), encoding="utf-8")

    def projects_dir(self, cwd: Path) -> Path:
        return self.root / ".claude" / "projects" / mangled_project_dir(cwd)

    def transcript(self, cwd: Path, session_id: str) -> Path:
        return self.projects_dir(cwd) / f"{session_id}.jsonl"


def claude_json_contents(
    *,
    api_key: str = FAKE_API_KEY,
    onboarded: bool = True,
    api_key_approved: bool = True,
    trusted: Iterable[Path] = (),
    auto_notice_seen: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``~/.claude.json`` of a machine in the given first-run state.

    The keys are the ones Claude Code itself writes when its dialogs are answered (see
    ``tests/screens/claude-<version>/NOTES.md``).
    """
    value: dict[str, Any] = {"numStartups": 1}
    if onboarded:
        value["hasCompletedOnboarding"] = True
        value["lastOnboardingVersion"] = pinned_version()
    if api_key_approved:
        value["customApiKeyResponses"] = {"approved": [api_key[-20:]], "rejected": []}
    if auto_notice_seen:
        value["hasSeenAutoDefaultNotice"] = True
    projects = {str(path): {"hasTrustDialogAccepted": True, "allowedTools": []} for path in trusted}
    if projects:
        value["projects"] = projects
    value.update(extra or {})
    return value


def make_agent_home(
    root: Path,
    *,
    settings: Mapping[str, Any] | None = None,
    bypass_accepted: bool = False,
    api_key: str = FAKE_API_KEY,
    **state: Any,
) -> AgentHome:
    """Create ``root`` as a HOME: ``~/.claude.json`` per ``state`` (the keywords of
    :func:`claude_json_contents`) and ``~/.claude/settings.json`` holding ``settings``
    (with the bypass-permissions warning already accepted when ``bypass_accepted``)."""
    root.mkdir(parents=True, exist_ok=True)
    home = AgentHome(root, api_key)
    home.write_claude_json(claude_json_contents(api_key=api_key, **state))
    user_settings = dict(settings or {})
    if bypass_accepted:
        user_settings["skipDangerousModePermissionPrompt"] = True
    home.settings_path.parent.mkdir(parents=True, exist_ok=True)
    home.settings_path.write_text(json.dumps(user_settings, indent=2), encoding="utf-8")
    return home


# -- hooks --------------------------------------------------------------------------------

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
# The events whose matcher names a tool; the others take none.
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PermissionRequest"})


def hook_logging_settings(log: Path, events: Iterable[str] = HOOK_EVENTS) -> dict[str, Any]:
    """Settings (for ``claude --settings``) whose hooks append every event to ``log``.

    Each line of ``log`` is ``{"t": <epoch seconds>, "e": <the hook's stdin JSON>}``,
    written by one ``printf`` so lines of hooks running at once do not interleave.
    """
    command = 'p=$(cat); printf \'{"t":%s,"e":%s}\\n\' "$(date +%s.%N)" "$p" >> ' + shlex.quote(
        str(log)
    )
    hooks: dict[str, Any] = {}
    for event in events:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if event in TOOL_EVENTS:
            group["matcher"] = "*"
        hooks[event] = [group]
    return {"hooks": hooks}


def read_hook_log(log: Path) -> list[dict[str, Any]]:
    """The hook payloads of ``log``, in order, each with its time under ``"_t"``."""
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    events: list[dict[str, Any]] = []
    for line in lines:
        if line.strip():
            entry = json.loads(line)
            events.append({**entry["e"], "_t": entry["t"]})
    return events


def hook_names(log: Path) -> list[str]:
    """The ``hook_event_name`` of every payload in ``log``, in order."""
    return [str(event.get("hook_event_name")) for event in read_hook_log(log)]


def agent_env(
    home: AgentHome,
    api_url: str,
    *,
    use_auth_token: bool = False,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of the agent: nothing of the test runner's leaks in."""
    env = {
        "HOME": str(home.root),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TERM": "tmux-256color",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "USER": os.environ.get("USER", "root"),
        "TMPDIR": str(home.root / "tmp"),
        "ANTHROPIC_BASE_URL": api_url,
        # Anything bound elsewhere goes through the fake, which records and refuses it.
        "HTTPS_PROXY": api_url,
        "HTTP_PROXY": api_url,
        "https_proxy": api_url,
        "http_proxy": api_url,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "the-loop tests",
        "GIT_AUTHOR_EMAIL": "tests@the-loop.invalid",
        "GIT_COMMITTER_NAME": "the-loop tests",
        "GIT_COMMITTER_EMAIL": "tests@the-loop.invalid",
        **OFFLINE_ENV,
    }
    (home.root / "tmp").mkdir(exist_ok=True)
    if use_auth_token:
        env["ANTHROPIC_AUTH_TOKEN"] = home.api_key
    else:
        env["ANTHROPIC_API_KEY"] = home.api_key
    env.update(extra or {})
    return env


def git_repo(path: Path) -> Path:
    """A git repository with one commit at ``path``, for the agent's cwd."""
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "config", "user.email", "tests@the-loop.invalid"],
        ["git", "config", "user.name", "the-loop tests"],
    ):
        subprocess.run(argv, cwd=path, check=True, env=env, capture_output=True)
    (path / "README.md").write_text("A repository for the agent.\n", encoding="utf-8")
    subprocess.run(["git", "add", "."], cwd=path, check=True, env=env, capture_output=True)
    subprocess.run(
        ["git", "commit", "-q", "-m", "init"], cwd=path, check=True, env=env, capture_output=True
    )
    return path


# -- the pane -----------------------------------------------------------------------------


# The input box starts with "❯" and a no-break space; a past prompt, with a plain space.
INPUT_BOX = "❯\xa0"


class ScreenTimeout(AssertionError):
    """The screen never showed what was waited for."""


def is_idle_screen(screen: str) -> bool:
    """Whether a screen of Claude Code shows it at rest at its input box."""
    busy = ("esc to interrupt", "Esc to cancel", "Enter to confirm", "Enter to select")
    at_input = re.search(r"^─+\n❯", screen, re.MULTILINE) is not None
    return at_input and not any(marker in screen for marker in busy)


@dataclasses.dataclass
class AgentPane:
    """One tmux pane (its own server, on socket ``socket``) running one agent."""

    socket: str
    target: str = "agent"

    def tmux(self, *args: str, input_bytes: bytes | None = None) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            input=input_bytes,
            capture_output=True,
            timeout=15,
            check=False,
            stdin=None if input_bytes is not None else subprocess.DEVNULL,
        )
        if result.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {result.stderr.decode(errors='replace')}")
        return result.stdout.decode("utf-8", errors="replace")

    def start(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        """Start ``argv`` in a new detached session, in exactly the environment ``env``."""
        command = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        # remain-on-exit before the session exists, so even an agent that exits at once
        # leaves its pane (its last screen and exit status) to read.
        self.tmux(
            "-f",
            "/dev/null",
            "start-server",
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "new-session",
            "-d",
            "-s",
            self.target,
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            "-c",
            str(cwd),
            *command,
        )

    def respawn(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        """Run ``argv`` anew in the same pane (``respawn-pane -k``), as :meth:`start` does."""
        command = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        self.tmux("respawn-pane", "-k", "-t", self.target, "-c", str(cwd), *command)

    def screen(self) -> str:
        """The visible screen as plain text (``capture-pane -p``), trailing blanks trimmed."""
        text = self.tmux("capture-pane", "-p", "-t", self.target)
        return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n")).rstrip() + "\n"

    def wait_for(self, pattern: str, timeout: float = 20.0, *, regex: bool = False) -> str:
        """Poll the screen until it shows ``pattern`` (a substring, or a regex); return it."""
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            screen = self.screen()
            found = re.search(pattern, screen) if regex else pattern in screen
            if found:
                return screen
            if time.monotonic() >= deadline:
                raise ScreenTimeout(f"screen never showed {pattern!r} in {timeout}s:\n{screen}")
            time.sleep(0.1)

    def wait_gone(self, pattern: str, timeout: float = 20.0) -> str:
        """Poll the screen until ``pattern`` is no longer on it; return the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if pattern not in screen:
                return screen
            if time.monotonic() >= deadline:
                raise ScreenTimeout(f"screen still shows {pattern!r} after {timeout}s:\n{screen}")
            time.sleep(0.1)

    def wait_idle(self, timeout: float = 20.0) -> str:
        """Poll until the agent waits at its input box: no turn running (the footer's
        ``esc to interrupt`` gone) and no dialog (no ``Enter to confirm``/``Esc to cancel``)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if is_idle_screen(screen):
                return screen
            if time.monotonic() >= deadline:
                raise ScreenTimeout(f"the agent never came to rest in {timeout}s:\n{screen}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        """``send-keys`` (tmux key names: ``Enter``, ``Escape``, ``C-c``, ``1``…)."""
        self.tmux("send-keys", "-t", self.target, *keys)

    def type(self, text: str) -> None:
        """Type ``text`` literally (``send-keys -l``)."""
        self.tmux("send-keys", "-t", self.target, "-l", text)

    def say(self, line: str, timeout: float = 10.0) -> None:
        """Type one line into the input box, wait until the box shows it, press Enter."""
        self.type(line)
        self.wait_for(INPUT_BOX + line, timeout)
        self.keys("Enter")

    def paste(self, text: str, *, enter: bool = True) -> None:
        """A bracketed paste of ``text`` (``load-buffer`` + ``paste-buffer -p``), then Enter."""
        buffer = f"paste-{time.monotonic_ns()}"
        self.tmux("load-buffer", "-b", buffer, "-", input_bytes=text.encode())
        self.tmux("paste-buffer", "-p", "-d", "-b", buffer, "-t", self.target)
        if enter:
            self.keys("Enter")

    def highlighted(self, option: str, screen: str | None = None) -> bool:
        """Whether a menu line ``❯ <option>`` (optionally numbered) is on the screen."""
        pattern = rf"❯[ \xa0]+(?:\d+\. +)?(?:✔ +)?{re.escape(option)}"
        return re.search(pattern, self.screen() if screen is None else screen) is not None

    def settle(self, quiet: float = 0.5, timeout: float = 5.0) -> str:
        """Wait until the screen has not changed for ``quiet`` seconds; return it.

        Claude Code draws some dialogs twice: the trust dialog comes back about 0.1 s
        after it first shows, with its cursor reset, and drops a key sent in between.
        """
        deadline = time.monotonic() + timeout
        screen = self.screen()
        still_since = time.monotonic()
        while time.monotonic() - still_since < quiet and time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.screen()
            if now != screen:
                screen, still_since = now, time.monotonic()
        return screen

    def choose(self, option: str, *, key: str = "Down", moves: int = 8, tries: int = 3) -> None:
        """Move a dialog's cursor (with ``key``) onto ``option`` and press Enter, once the
        dialog has settled; check that the dialog went away, and try again if not.

        Enter is only ever sent while the screen shows the cursor on ``option``.
        """
        for _ in range(tries):
            self.settle()
            sent = 0
            while not self.highlighted(option) and sent < moves:
                before = self.screen()
                self.keys(key)
                sent += 1
                wait_until(lambda before=before: self.screen() != before, timeout=1.0)
            if not self.highlighted(option) or not self.highlighted(option, self.settle(0.3)):
                continue
            self.keys("Enter")
            if wait_until(lambda: option not in self.screen(), timeout=5.0):
                return
        raise ScreenTimeout(f"could not choose {option!r}:\n{self.screen()}")

    def dead(self) -> bool:
        """Whether the agent's process has exited and tmux knows its status (the pane
        stays, by remain-on-exit)."""
        return self.exit_status() is not None

    def exit_status(self) -> int | None:
        """The agent's exit status once it has exited; ``None`` while it runs.

        An agent killed by a signal reads as ``128 + signal``, as a shell would say.
        Debian's tmux (built with utempter) can miss the SIGCHLD of a pane whose
        process exits just as its pty closes (tmux issue 311): the pane reads dead with
        no status and the process stays a zombie. This tmux server is then sent a
        SIGCHLD of its own, so that it reaps the process and records the status.
        """
        fields = "#{pane_dead} #{pid} #{pane_dead_status} #{pane_dead_signal}"
        dead, server, *rest = self.tmux("display-message", "-p", "-t", self.target, fields).split()
        if dead != "1":
            return None
        status, signal_number = [*rest, "", ""][:2]
        if status:
            return int(status)
        if signal_number:
            return 128 + int(signal_number)
        with contextlib.suppress(OSError):
            os.kill(int(server), signal.SIGCHLD)
        return None


@contextlib.contextmanager
def agent_pane(socket: str | None = None) -> Iterator[AgentPane]:
    """An :class:`AgentPane` on a private tmux server, killed when the block ends."""
    name = socket or private_socket_name()
    try:
        yield AgentPane(name)
    finally:
        kill_server(name)
        remove_socket_file(name)


def claude_argv(*args: str, settings: Path | str | None = None) -> list[str]:
    """The agent's argv: the pinned binary, ``--settings`` when given, then ``args``."""
    argv = [str(claude_binary())]
    if settings is not None:
        argv += ["--settings", str(settings)]
    return [*argv, *args]
