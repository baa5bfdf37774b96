"""`scripts/demo.sh` (`make demo`): it runs end to end and writes no ANSI escapes into a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent / "the-loop"


def test_the_demo_prints_no_ansi_escapes_into_a_pipe(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("NO_COLOR", None)
    completed = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    assert b"$ the-loop sessions list" in completed.stdout
    assert b"\x1b" not in completed.stdout + completed.stderr
