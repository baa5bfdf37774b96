"""A shared world for the real-tmux reset tests: config, state root, remote, agent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.gitrepo import make_remote
from the_loop.cli import main
from the_loop.dispatch.tmux import TmuxRunner, tmux_session_name
from the_loop.layout import StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.store import WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry

AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@dataclass
class World:
    tmp_path: Path
    socket: str

    def __post_init__(self) -> None:
        self.layout = StateLayout(self.tmp_path / "state")
        self.remote = make_remote(self.tmp_path, "app")
        self.config = self.tmp_path / "cli-config.yaml"
        self.configure()

    @property
    def workspace(self) -> Path:
        return self.tmp_path / "workspaces"

    def configure(self, tmux: dict[str, Any] | None = None, **workspace: Any) -> None:
        document = {
            "state": {"root": str(self.layout.root)},
            "routing": {
                "defaultHarness": "command",
                "harnesses": {"command": {"argv": AGENT}},
                "workspace": {
                    "root": str(self.workspace),
                    "repositories": {"octo/app": str(self.remote)},
                    **workspace,
                },
                "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 3, **(tmux or {})},
            },
        }
        self.config.write_text(json.dumps(document), encoding="utf-8")

    def run(self, *argv: str) -> int:
        try:
            return main(["--config", str(self.config), *argv])
        except SystemExit as exit_:
            return int(exit_.code or 0)

    def worktree(self, ref: WorkItemRef) -> Path:
        return self.workspace / ".worktrees" / "github.com" / ref.owner / ref.repo / ref.slug

    def registry(self) -> SessionRegistry:
        return SessionRegistry(self.layout.local_dir)

    def store(self) -> WorkItemStore:
        return WorkItemStore(self.layout.portable_dir, legacy_layout(self.layout))

    def control(self) -> ControlStore:
        return ControlStore(self.layout.portable_dir, store=self.store())

    def tmux(self) -> TmuxRunner:
        return TmuxRunner(socket=self.socket, timeout=30)

    def target(self, ref: WorkItemRef) -> str:
        return tmux_session_name(ref.slug)
