"""The one test world: a state root and a config file under a temporary directory, the
stores as the command layer opens them (``open_stores``), and a CLI runner."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from the_loop.cli import main
from the_loop.commands.common import Context
from the_loop.commands.stores import Stores, open_stores
from the_loop.config.file import load_config
from the_loop.eventlog.log import EventLog
from the_loop.layout import LegacyLayout, StateLayout, legacy_layout
from the_loop.portable.control import ControlStore
from the_loop.portable.store import WorkItemStore
from the_loop.sessions.registry import SessionRegistry


class World:
    """``<home>/state`` and ``<home>/cli-config.yaml`` naming it; stores opened on first use.

    ``config`` is the document beside ``state.root`` (written as JSON, which YAML reads);
    ``source`` is the event-log source the stores write with.
    """

    def __init__(
        self,
        home: Path,
        config: Mapping[str, Any] | None = None,
        *,
        source: str = "sessions",
    ) -> None:
        self.home = home
        self.source = source
        self.layout = StateLayout(home / "state")
        self.config_path = home / "cli-config.yaml"
        home.mkdir(parents=True, exist_ok=True)
        self.configure(config or {})

    def configure(self, document: Mapping[str, Any]) -> None:
        """Rewrite the config file: ``document`` with ``state.root`` set to this world's."""
        state = {**document.get("state", {}), "root": str(self.layout.root)}
        full = {**document, "state": state}
        self.config_path.write_text(json.dumps(full), encoding="utf-8")

    @property
    def context(self) -> Context:
        """The config and layout one invocation of the CLI would resolve."""
        config = load_config(str(self.config_path))
        return Context(config=config, layout=self.layout)

    @cached_property
    def stores(self) -> Stores:
        return open_stores(self.context, source=self.source)

    @property
    def registry(self) -> SessionRegistry:
        return self.stores.registry

    @property
    def store(self) -> WorkItemStore:
        return self.stores.store

    @property
    def control(self) -> ControlStore:
        return self.stores.control

    @property
    def events(self) -> EventLog:
        return self.stores.events

    @property
    def legacy(self) -> LegacyLayout:
        return legacy_layout(self.layout)

    def run(self, *argv: str) -> int:
        """``main(["--config", <this config>, *argv])``; output goes to the real streams
        (``capsys`` sees it); a usage error is its exit code, 2."""
        return main(["--config", str(self.config_path), *argv])

    def run_cli(self, argv: Sequence[str]) -> tuple[int, str, str]:
        """:meth:`run` with stdout and stderr captured: ``(exit code, out, err)``.

        A usage error comes back as its exit code (2), its message in ``err``.
        """
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = self.run(*argv)
        return code, out.getvalue(), err.getvalue()
