"""``http.client`` is imported by the GitHub client module alone, never at start-up."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import the_loop

PACKAGE = Path(the_loop.__file__).parent
#: The modules allowed to import ``http.client`` themselves (the poster joins later).
HTTP_CLIENT_MODULES = {"github/client.py"}

PROBE = """
import sys
{setup}
print("http.client" in sys.modules)
"""


def imported_after(setup: str) -> bool:
    """Whether a fresh interpreter has ``http.client`` loaded after running ``setup``."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1] == "True"


def test_the_version_flag_does_not_load_http_client() -> None:
    setup = (
        "from the_loop.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert imported_after(setup) is False


def test_the_probe_sees_http_client_once_the_github_client_is_imported() -> None:
    assert imported_after("import the_loop.github.client") is True


def imports_http_client(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "http.client" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (
            node.module == "http.client"
            or (node.module == "http" and any(a.name == "client" for a in node.names))
        ):
            return True
    return False


def test_only_the_github_client_module_imports_http_client() -> None:
    importers = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if imports_http_client(path)
    }
    assert importers == HTTP_CLIENT_MODULES


def test_the_pacing_policy_and_the_etag_cache_load_without_http_client() -> None:
    assert imported_after("import the_loop.github.backoff, the_loop.github.etags") is False
