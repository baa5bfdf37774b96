#!/usr/bin/env python3
"""Validate the-loop CLI config files against the JSON Schema the CLI uses.

Usage: ``scripts/validate_config.py FILE...``. Prints one line per bad file
(file, key, problem) on stderr; exit 0 when all are valid, 2 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from the_loop.config.file import ConfigError, load_file


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: validate_config.py FILE...", file=sys.stderr)
        return 2
    status = 0
    for name in argv:
        try:
            load_file(Path(name))
        except ConfigError as error:
            print(f"error: {error}", file=sys.stderr)
            status = 2
        else:
            print(f"ok: {name}")
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
