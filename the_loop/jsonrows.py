"""JSON documents of many rows, one row per line: ``{"<key>": [\n  {...},\n  {...}\n]}``.

The form of ``sessions list --format json`` and of ``portable/index.json``: valid
JSON that a line-based tool (``grep``, a ``git diff``) reads one row at a time.
Each row is encoded by the C encoder as it is produced; ``indent=2`` would take
the pure-Python one, several times slower on ten thousand rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


def rows_document(key: str, rows: Iterable[Mapping[str, Any]]) -> str:
    """The document whose only member ``key`` holds ``rows``, ending with a newline."""
    encode = json.JSONEncoder(ensure_ascii=False).encode
    body = ",\n".join("  " + encode(row) for row in rows)
    head = encode(key)
    return f"{{{head}: [\n{body}\n]}}\n" if body else f"{{{head}: []}}\n"
