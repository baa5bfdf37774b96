"""JSON documents of many rows, one row per line: ``{"<key>": [\n  {...},\n  {...}\n]}``.

The form of ``sessions list --format json`` and of ``portable/index.json``: valid
JSON that a line-based tool (``grep``, a ``git diff``) reads one row at a time.
Each row is encoded by the C encoder as it is produced; ``indent=2`` would take
the pure-Python one, several times slower on ten thousand rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False)


def rows_document(
    key: str,
    rows: Iterable[Mapping[str, Any]],
    *,
    before: Mapping[str, Any] | None = None,
    after: Callable[[], Mapping[str, Any]] | None = None,
) -> str:
    """The document whose member ``key`` holds ``rows``, ending with a newline.

    ``before``'s members come first; ``after()`` is called once every row is
    encoded, and its members come last (so they can say what producing the rows said).
    """
    encode = _ENCODER.encode
    body = ",\n".join(map(encode_row, rows))
    head = "".join(f"{encode(name)}: {encode(value)}, " for name, value in (before or {}).items())
    tail = "".join(f", {encode(name)}: {encode(value)}" for name, value in _members(after))
    rows_text = f"[\n{body}\n]" if body else "[]"
    return f"{{{head}{encode(key)}: {rows_text}{tail}}}\n"


def encode_row(row: Mapping[str, Any]) -> str:
    """One row as :func:`rows_document` writes it: two spaces, then its JSON on one line."""
    return "  " + _ENCODER.encode(row)


def _members(after: Callable[[], Mapping[str, Any]] | None) -> Iterable[tuple[str, Any]]:
    return after().items() if after is not None else ()
