"""`the-loop state`: placeholder until its issue lands."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `state`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "state", help="state (not yet available)"
    )
    return parser
