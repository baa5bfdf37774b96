"""`the-loop events`: placeholder until its issue lands."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `events`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "events", help="events (not yet available)"
    )
    return parser
