"""The CHECKOUT column of ``sessions list``: what ``os.path.isdir`` says of each record's
``cwd``, asked of the disk once per parent directory rather than once per record."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.commands.sessions.listing import existing_directories


def _tree(tmp_path: Path) -> list[str]:
    """A directory holding every kind of entry, and the paths to ask about in it."""
    base = tmp_path / "checkouts"
    (base / "dir").mkdir(parents=True)
    (base / "Mixed").mkdir()
    (base / "file").write_text("x", encoding="utf-8")
    (base / "to-dir").symlink_to(base / "dir")
    (base / "to-file").symlink_to(base / "file")
    (base / "dangling").symlink_to(base / "nowhere")
    (base / "dir" / "inner").mkdir()
    names = ["dir", "Mixed", "mixed", "MIXED", "file", "to-dir", "to-file", "dangling", "gone"]
    paths = [str(base / name) for name in names]
    paths += [
        str(base / "dir" / "inner"),
        str(base / "dir") + "/",
        str(base / "dir" / "."),
        str(base / "dir" / ".."),
        str(base / "file" / "under-a-file"),
        str(base / "gone" / "deeper"),
        str(base / "dir" / "..") + "/dir",
        str(base) + "//dir",
        str(base) + "//gone",
        str(tmp_path / "no-such-parent" / "a"),
        str(tmp_path / "no-such-parent" / "b"),
        "checkouts/dir",
        "checkouts/gone",
        "checkouts",
        "/",
        "/tmp",
        "//tmp",
        str(base / "d\u00efr"),
    ]
    return paths


def test_existing_directories_says_what_isdir_says_of_every_kind_of_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    paths = _tree(tmp_path)
    assert existing_directories(paths) == {path for path in paths if os.path.isdir(path)}
    assert existing_directories([]) == set()


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Record every call of ``os.<name>`` (``os.path.isdir`` for ``isdir``) from now on."""
    calls: list[Any] = []
    owner: Any = os.path if name == "isdir" else os
    real: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_checkouts_that_share_a_parent_are_answered_by_one_listing_not_a_stat_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    world = World(tmp_path / "home")
    parent = tmp_path / "work"
    refs = [f"github:octo/app#{number}" for number in (1, 2, 3)]
    for number, ref in enumerate(refs, start=1):
        (parent / f"checkout-{number}").mkdir(parents=True)
        argv = ["sessions", "register", "--work-item", ref, "--harness", "claude"]
        argv += ["--harness-session-id", f"s-{number}", "--cwd", str(parent / f"checkout-{number}")]
        assert world.run(*argv) == 0
    (parent / "checkout-2").rmdir()
    isdir = _counting(monkeypatch, "isdir")
    scandir = _counting(monkeypatch, "scandir")

    code, out, _ = world.run_cli(["sessions", "list", "--format", "json"])

    assert code == 0
    checkouts = [row["checkout"] for row in json.loads(out)["items"]]
    assert checkouts == [str(parent / "checkout-1"), None, str(parent / "checkout-3")]
    assert str(parent) in scandir and isdir == []
