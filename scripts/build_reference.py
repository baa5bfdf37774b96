"""The build step that puts the CLI reference in the wheel: ``docs/cli/**/*.md`` is copied
to ``the_loop/reference/`` beside the modules, where ``the-loop docs`` reads it.

setuptools runs this ``build_py`` for every build (``[tool.setuptools.cmdclass]`` in
pyproject.toml). ``docs/cli/`` stays the one source of the pages; an editable install
copies nothing and reads them there (decision 017).
"""

from __future__ import annotations

from pathlib import Path

from setuptools.command.build_py import build_py

PROJECT = Path(__file__).resolve().parent.parent
PAGES = PROJECT / "docs" / "cli"
#: Where the pages go, inside the package (``the_loop.commands.docs.SHIPPED``).
SHIPPED = ("the_loop", "reference")


class BuildWithReference(build_py):
    """``build_py``, then the reference pages into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        pages = sorted(PAGES.rglob("*.md"))
        if not pages:
            raise RuntimeError(f"{PAGES} holds no reference pages: the wheel would lack them")
        target = Path(self.build_lib, *SHIPPED)
        for page in pages:
            destination = target / page.relative_to(PAGES)
            self.mkpath(str(destination.parent))
            self.copy_file(str(page), str(destination))
