"""`the-loop sessions`: placeholder until its issue lands."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `sessions`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sessions", help="sessions (not yet available)"
    )
    return parser
