"""A shared world for the real-tmux reset tests: config, state root, remote, agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.gitrepo import make_remote
from tests.helpers.world import World as SharedWorld
from the_loop.dispatch.tmux import TmuxRunner, tmux_session_name
from the_loop.ref import WorkItemRef

AGENT = ["bash", "-c", 'echo "agent $1 ready"; exec sleep 600', "agent", "{session_id}"]


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


class World(SharedWorld):
    """The shared test world with a remote, a workspace root and a tmux socket configured."""

    def __init__(self, tmp_path: Path, socket: str) -> None:
        self.tmp_path = tmp_path
        self.socket = socket
        self.remote = make_remote(tmp_path, "app")
        super().__init__(tmp_path)
        self.configure_routing()

    @property
    def workspace(self) -> Path:
        return self.tmp_path / "workspaces"

    def configure_routing(self, tmux: dict[str, Any] | None = None, **workspace: Any) -> None:
        """Rewrite the config: the stand-in agent, this workspace and socket, and overrides."""
        routing = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": AGENT}},
            "workspace": {
                "root": str(self.workspace),
                "repositories": {"octo/app": str(self.remote)},
                **workspace,
            },
            "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 3, **(tmux or {})},
        }
        self.configure({"routing": routing})

    def worktree(self, ref: WorkItemRef) -> Path:
        return self.workspace / ".worktrees" / "github.com" / ref.owner / ref.repo / ref.slug

    def tmux(self) -> TmuxRunner:
        return TmuxRunner(socket=self.socket, timeout=30)

    def target(self, ref: WorkItemRef) -> str:
        return tmux_session_name(ref.slug)
