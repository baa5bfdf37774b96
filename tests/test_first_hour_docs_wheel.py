"""A wheel carries the reference pages, and ``the-loop docs`` reads them from an install of
it, far from any checkout (issue 18, item 20; decision 017). Built offline, from a copy
of the tree, so the checkout is never written to."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import the_loop

REPO = Path(the_loop.__file__).resolve().parent.parent
PAGES = REPO / "docs" / "cli"
#: What a build reads: the project's files, the package, the pages and the build hook.
SOURCES = ("pyproject.toml", "README.md", "MANIFEST.in", "the_loop", "docs", "scripts")
SHIPPED = "the_loop/reference"


def page_names() -> list[str]:
    return sorted(str(page.relative_to(PAGES)) for page in PAGES.rglob("*.md"))


def source_copy(destination: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    destination.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    return destination


def build(kind: str, source: Path, out: Path) -> Path:
    """One wheel (``pip wheel``) or sdist (the backend's own hook) of ``source``, offline."""
    out.mkdir(parents=True, exist_ok=True)
    if kind == "wheel":
        argv = ["-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        argv += ["--quiet", "--wheel-dir", str(out), "."]
    else:
        argv = ["-c", f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"]
    subprocess.run([sys.executable, *argv], cwd=source, check=True, capture_output=True)
    [built] = out.glob("*.whl" if kind == "wheel" else "*.tar.gz")
    return built


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = source_copy(tmp_path_factory.mktemp("source"))
    return build("wheel", source, tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_every_reference_page_inside_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = sorted(name.removeprefix(f"{SHIPPED}/") for name in names if ".md" in name)
        assert shipped == page_names()
        config = archive.read(f"{SHIPPED}/config.md").decode("utf-8")
    assert config == (PAGES / "config.md").read_text(encoding="utf-8")
    assert not [name for name in names if name.startswith(("docs/", "scripts/"))]


def test_docs_run_from_an_install_of_the_wheel_prints_the_shipped_page(
    wheel: Path, tmp_path: Path
) -> None:
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    environ = {**os.environ, "PYTHONPATH": str(installed), "HOME": str(tmp_path)}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def the_loop_docs(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "the_loop", "docs", *argv]
        return subprocess.run(command, cwd=elsewhere, env=environ, capture_output=True, text=True)

    printed = the_loop_docs("config")
    assert (printed.returncode, printed.stderr) == (0, "")
    assert printed.stdout == (PAGES / "config.md").read_text(encoding="utf-8")
    as_json = json.loads(the_loop_docs("config", "--format", "json").stdout)
    assert Path(as_json["items"][0]["path"]).is_relative_to(installed / SHIPPED)
    assert len(the_loop_docs().stdout.splitlines()) == len(page_names())


def test_the_sdist_carries_the_pages_and_the_build_hook_a_wheel_is_built_with(
    tmp_path: Path,
) -> None:
    """``python -m build`` and an index build the wheel from the sdist: it needs both."""
    sdist = build("sdist", source_copy(tmp_path / "source"), tmp_path / "dist")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {f"docs/cli/{name}" for name in page_names()} <= names
    assert "scripts/build_reference.py" in names
