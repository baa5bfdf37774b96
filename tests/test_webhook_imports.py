"""The receiver's server (and ``asyncio`` under it) is loaded by ``the-loop webhook`` alone:
never at start-up, never by another command, never for ``--print-setup``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import the_loop

PACKAGE = Path(the_loop.__file__).parent
SERVER = "the_loop.webhook.server"
#: The modules allowed to import the receiver's server.
SERVER_IMPORTERS = {"commands/webhook.py"}

PROBE = """
import contextlib, io, sys
from the_loop.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
print(sorted(name for name in ("asyncio", {server!r}) if name in sys.modules))
"""


def loaded_after(argv: list[str], tmp_path: Path) -> str:
    """What of asyncio and the server a fresh interpreter holds after ``main(argv)``."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, server=SERVER)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    return result.stdout.strip().splitlines()[-1]


def test_start_up_help_and_other_commands_load_no_server(tmp_path: Path) -> None:
    for argv in (["--version"], ["--help"], ["webhook", "--help"], ["poll", "status"],
                 ["webhook", "--print-setup"], ["webhook", "status"]):  # fmt: skip
        assert loaded_after(argv, tmp_path) == "[]", argv


def test_the_probe_sees_the_server_once_it_is_imported(tmp_path: Path) -> None:
    probe = f"import sys, {SERVER}; print(sorted(n for n in ('asyncio',) if n in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "['asyncio']"


def imported_by(module: str) -> set[str]:
    """The package's modules that import ``module`` (at any level of their code)."""
    package, _, name = module.rpartition(".")
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Import) and any(a.name == module for a in node.names)) or (
                isinstance(node, ast.ImportFrom)
                and (node.module == module
                     or (node.module == package and any(a.name == name for a in node.names)))
            ):  # fmt: skip
                found.add(str(path.relative_to(PACKAGE)))
    return found


def test_only_the_webhook_command_imports_the_server_and_only_the_server_asyncio() -> None:
    """The receiver's server, and the local API's (issue 30), are the only users of
    asyncio, each imported by its own command alone: no other command pays for it."""
    assert imported_by(SERVER) == SERVER_IMPORTERS
    assert imported_by("the_loop.webhook.exchange") == {"webhook/server.py"}
    servers = {"webhook/server.py", "webhook/exchange.py", "api/server.py", "api/stream.py"}
    assert imported_by("asyncio") == servers
    assert imported_by("the_loop.api.server") == {"commands/serve.py"}
