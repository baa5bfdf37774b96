"""Hermetic tests: no test can touch a real home directory, tmux server or state root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.helpers.tmuxsock"]


@pytest.fixture(autouse=True)
def hermetic_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point HOME and the working directory at ``tmp_path`` and drop config env vars.

    With HOME elsewhere, ``~/.the-loop`` is a temporary directory; with the cwd
    in ``tmp_path``, the default state root ``.the-loop`` is too.
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("THE_LOOP_CLI_CONFIG", "GITHUB_TOKEN", "GH_TOKEN", "TMUX", "TMUX_PANE"):
        monkeypatch.delenv(name, raising=False)
    # A rebase's `exec` or a hook exports GIT_DIR and friends: tests must never act on
    # the repository they run from.
    for name in [name for name in os.environ if name.startswith("GIT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "the-loop tests")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "tests@the-loop.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "the-loop tests")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "tests@the-loop.invalid")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    yield home
    assert os.environ["HOME"] == str(home)
