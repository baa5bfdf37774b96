"""The-loop driving the real Claude Code: the loopback fake GitHub, the loopback fake of
the Messages API, real tmux on a private socket, real git (a local bare repository as the
remote), and `the-loop poll --once` cycles run in this process.

The agent's environment is this process's (the-loop carries its own ``os.environ`` into
each session through ``tmux new-session -e``), so :func:`offline_agent_environ` puts the
offline variables, the fake's URL and the API key into ``os.environ``, and the agent's
``HOME`` is the test's hermetic ``HOME`` (``tests/conftest.py``), made a Claude Code home
by :func:`~tests.helpers.claude_agent.make_agent_home`.

The fake GitHub's clock is kept on the wall clock (:meth:`RealLoop.comment`): the-loop
compares a comment's ``created_at`` with times of its own (a blocked notice's, a manual
start's), which a clock days behind would turn into history.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, RecordedRequest, is_turn
from tests.fake_github import FakeComment, FakeGitHub
from tests.helpers.claude_agent import (
    FAKE_API_KEY,
    OFFLINE_ENV,
    AgentHome,
    claude_binary,
    make_agent_home,
)
from tests.helpers.gitrepo import make_remote
from tests.helpers.world import World
from the_loop.agent.hooks import hook_log_path
from the_loop.agent.state import read_hook_log
from the_loop.dispatch.workspace import Workspace
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.portable.poll import PollState
from the_loop.ref import WorkItemRef
from the_loop.sessions.session import Session

TOKEN = "ghp_real-loop-token"
BOT = "the-loop-bot"
REPO = "octo/app"
AUTHORIZED = "alice"
PROMPT = "Ticket {url}: {title}"

Report = dict[str, Any]


def offline_agent_environ(monkeypatch: pytest.MonkeyPatch, api_url: str) -> None:
    """The variables the agent needs, set in this process's environment (which the-loop
    hands to every agent it spawns): offline switches, the fake API, the key, proxies
    that send anything bound elsewhere to the fake (which records and refuses it)."""
    values = {
        **OFFLINE_ENV,
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "HTTPS_PROXY": api_url,
        "HTTP_PROXY": api_url,
        "https_proxy": api_url,
        "http_proxy": api_url,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CONFIG_DIR", "IS_SANDBOX"):
        monkeypatch.delenv(name, raising=False)


def item_ref(number: int) -> WorkItemRef:
    return WorkItemRef.parse(f"github:{REPO}#{number}")


class RealLoop(World):
    """A state root and config (the claude harness, the pinned binary), the two fakes, a
    workspace remote, a tmux socket and the agent's HOME."""

    def __init__(
        self,
        tmp_path: Path,
        socket: str,
        github: FakeGitHub,
        anthropic: FakeAnthropic,
    ) -> None:
        super().__init__(tmp_path / "loop", source="test")
        self.socket = socket
        self.github = github
        self.anthropic = anthropic
        self.remote = make_remote(tmp_path, "app")
        self.workspaces = tmp_path / "workspaces"
        self.home = AgentHome(Path(os.environ["HOME"]))
        self.setup()

    # -- the config and the agent's HOME --------------------------------------------

    def setup(
        self,
        *,
        args: Sequence[str] = (),
        trust_checkouts: bool = True,
        claude: Mapping[str, Any] | None = None,
        routing: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the config: the claude harness (its ``args``, ``trustCheckouts``)."""
        harness: dict[str, Any] = {
            "binary": str(claude_binary()),
            "args": list(args),
            "trustCheckouts": trust_checkouts,
            **(claude or {}),
        }
        self.configure(
            {
                "routing": {
                    "defaultHarness": "claude",
                    "harnesses": {"claude": harness},
                    "prompt": PROMPT,
                    "authorizedUsers": [AUTHORIZED],
                    "workspace": {
                        "root": str(self.workspaces),
                        "repositories": {REPO: str(self.remote)},
                    },
                    "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 3},
                    **(routing or {}),
                },
                "polling": {"repositories": [REPO], "labels": ["the-loop"]},
                "integrations": {"github": {"apiUrl": self.github.url}},
            }
        )

    def make_home(self, *, trusted: Iterable[int] = (), api_key_approved: bool = True) -> AgentHome:
        """The agent's HOME (onboarded); the checkouts of ``trusted`` items trusted.

        Claude Code keeps the trust of a git worktree under its main repository's root:
        for the-loop's worktrees, the shared clone (see :meth:`trust_key`)."""
        paths = [self.trust_key(number) for number in trusted]
        return make_agent_home(self.home.root, trusted=paths, api_key_approved=api_key_approved)

    def checkout_path(self, number: int) -> Path:
        """Where the checkout of item ``number`` is made."""
        return Workspace.from_config(self.context.config).checkout_path(item_ref(number))

    def trust_key(self, number: int) -> Path:
        """The folder whose trust Claude Code asks for and keeps when it starts in item
        ``number``'s checkout: the main repository of the worktree, the shared clone."""
        return Workspace.from_config(self.context.config).shared_clone_path(item_ref(number))

    # -- GitHub ---------------------------------------------------------------------

    def issue(self, number: int, title: str, body: str = "") -> None:
        self.github.add_issue(REPO, number, title=title, body=body, labels=("the-loop",))

    def comment(self, number: int, body: str, *, login: str = AUTHORIZED) -> FakeComment:
        """A comment on item ``number``, stamped with the wall clock (never before the
        last one)."""
        self.tick()
        return self.github.add_comment(REPO, number, body, login=login)

    def tick(self) -> None:
        """Move the fake GitHub's clock to now (it never goes back)."""
        with self.github.lock:
            now = datetime.now(UTC).replace(microsecond=0)
            self.github.now = max(self.github.now, now)

    def notices(self, number: int, containing: str = "") -> list[FakeComment]:
        """The-loop's marked comments on ``number`` holding ``containing`` (claims aside)."""
        return [
            c
            for c in self.github.comments
            if c.number == number
            and AGENT_COMMENT_MARKER in c.body
            and "the-loop:claim" not in c.body
            and containing in c.body
        ]

    # -- the poller -------------------------------------------------------------------

    def poll(self) -> Report:
        """One ``poll --once --format json``: its report (``items`` and ``summary``)."""
        self.tick()
        code, out, err = self.run_cli(["poll", "--once", "--format", "json"])
        assert code in (0, 1), f"poll --once exited {code}: {err}"
        report: Report = json.loads(out)
        report["exit"], report["stderr"] = code, err
        return report

    def poll_until(
        self,
        condition: Callable[[], object],
        *,
        timeout: float = 30.0,
        what: str = "",
        pause: float = 0.3,
    ) -> list[Report]:
        """Poll cycles until ``condition()`` holds (checked after each); the reports.
        Fails naming ``what`` (and the last reports) when it never holds in ``timeout``."""
        reports: list[Report] = []
        deadline = time.monotonic() + timeout
        while True:
            reports.append(self.poll())
            if condition():
                return reports
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"never {what or 'held'} in {timeout}s ({len(reports)} cycles)\n"
                    + self.describe(reports)
                )
            time.sleep(pause)

    def describe(self, reports: Sequence[Report] = ()) -> str:
        """What a failure message shows: the cycles' actions and failures, the events,
        each session's ledger rows, hooks and screen."""
        lines = [f"actions: {self.actions(reports)}"]
        lines += [f"failed: {f}" for r in reports for f in r["summary"].get("failed", [])]
        lines += [f"stderr: {r['stderr'].strip()}" for r in reports if r["stderr"].strip()]
        log = self.layout.event_log
        events = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        for event in map(json.loads, events):
            if event["event"] == "poll.cycle":
                continue
            extra = {k: v for k, v in event.items() if k not in ("ts", "source", "level", "pid")}
            lines.append(f"event {event['ts']}: {json.dumps(extra)[:300]}")
        for number in sorted({issue.number for issue in self.github.issues.values()}):
            record = self.session(number)
            rows = [
                (r.get("id"), r.get("state"), r.get("attempts")) for r in self.deliveries(number)
            ]
            lines.append(f"#{number}: rows {rows}; hooks {self.hook_names(number)}")
            if record is not None and record.tmux_target:
                lines.append(f"#{number} pane {self.pane(record.tmux_target)}:")
                lines.append(self.screen(record.tmux_target).rstrip())
        lines.append(f"tmux sessions: {self.sessions_on_server()}")
        return "\n".join(lines)

    def actions(self, reports: Iterable[Report], kind: str = "") -> list[dict[str, Any]]:
        return [a for r in reports for a in r.get("items", []) if not kind or a["kind"] == kind]

    # -- what the-loop keeps ---------------------------------------------------------

    def events_named(self, name: str) -> list[dict[str, Any]]:
        log = self.layout.event_log
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [event for event in map(json.loads, lines) if event["event"] == name]

    def session(self, number: int) -> Session | None:
        return self.registry.find_by_work_item(item_ref(number))

    def live_session(self, number: int) -> Session:
        record = self.session(number)
        assert record is not None, f"no live session for #{number}"
        return record

    def deliveries(self, number: int) -> list[dict[str, Any]]:
        return PollState(self.store, registry=self.registry).deliveries(item_ref(number))

    def row(self, number: int, comment_id: int | str) -> dict[str, Any]:
        found = [r for r in self.deliveries(number) if str(r.get("id")) == str(comment_id)]
        return found[0] if found else {}

    def hook_events(self, number: int) -> list[dict[str, Any]]:
        record = self.registry.path_for(item_ref(number))
        return read_hook_log(hook_log_path(record.parent, record.stem))

    def hook_names(self, number: int) -> list[str]:
        return [str(e.get("event")) for e in self.hook_events(number)]

    def sessions_json(self) -> list[dict[str, Any]]:
        code, out, err = self.run_cli(["sessions", "list", "--format", "json"])
        assert code == 0, err
        document = json.loads(out)
        return list(document["items"] if isinstance(document, dict) else document)

    # -- tmux ---------------------------------------------------------------------

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    def target(self, number: int) -> str:
        return self.live_session(number).tmux_target

    def screen(self, target: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", f"={target}:").stdout

    def pane(self, target: str) -> tuple[bool, str]:
        """(dead, exit status) of ``target``'s pane."""
        shown = self.tmux(
            "display-message", "-p", "-t", f"={target}:", "#{pane_dead} #{pane_dead_status}"
        )
        dead, _, status = shown.stdout.strip().partition(" ")
        return dead == "1", status

    def sessions_on_server(self) -> list[str]:
        shown = self.tmux("list-sessions", "-F", "#{session_name}")
        return shown.stdout.split() if shown.returncode == 0 else []

    def server_alive(self) -> bool:
        return self.tmux("list-sessions").returncode == 0


# -- what the fake Messages API saw ----------------------------------------------------


def turns_holding(fake: FakeAnthropic, text: str) -> list[RecordedRequest]:
    """The turn requests whose last user message holds ``text``."""
    return [r for r in fake.requests if is_turn(r) and text in r.last_user_text()]


def any_request_holds(fake: FakeAnthropic, text: str) -> bool:
    """Whether any request (any message of it) holds ``text``."""
    return any(text in json.dumps(r.body or {}) for r in fake.requests)


def user_turns_with(fake: FakeAnthropic, text: str) -> int:
    """How many user messages holding ``text`` the conversation that holds it carries:
    the longest such request's (each turn resends the earlier ones)."""
    turns = [r for r in fake.requests if is_turn(r) and any(text in t for t in r.user_texts())]
    if not turns:
        return 0
    longest = max(turns, key=lambda r: len(r.messages))
    return sum(1 for t in longest.user_texts() if text in t)
