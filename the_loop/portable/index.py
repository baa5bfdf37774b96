"""``index.json`` kept up to date one entry at a time, and the stamp that says when it can be.

Every change to the record directory by the store happens under the index lock: the
stamp (``<locks>/index.stamp``, machine-local) is removed first, the record written,
then the index entry of that one ref spliced in (for a deletion, taken out before the
record goes, so no entry ever names a missing record) and the stamp saved with the
stat of the directory and of the index. A write trusts the index only when the stamp is there
and both stats still match; otherwise (a crash between the writes, a hand edit, a
record added or removed by another tool) it rebuilds the index from every record.
"""

from __future__ import annotations

import bisect
import json
import os
from pathlib import Path
from typing import Any

from the_loop.fsio import read_bytes, remove_file, write_text
from the_loop.records.rows import encode_row

_HEAD = '{"workItems": [\n'
_TAIL = "\n]}\n"
_SEPARATOR = ",\n"  # an encoded row holds no newline, so rows split on this exactly
_DECODER = json.JSONDecoder()


def current_stamp(directory: Path, index_path: Path) -> list[Any]:
    """What the index is derived from, as stat sees it: the record directory's inode and
    mtime, and the index file's inode, size and mtime (None for what is not there)."""
    return [_stat(directory, 2), _stat(index_path, 3)]


def _stat(path: Path, fields: int) -> list[int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return [info.st_ino, info.st_mtime_ns, info.st_size][:fields]


class IndexStamp:
    """The stamp file at ``path`` for the index of ``directory``."""

    def __init__(self, path: Path, directory: Path, index_path: Path) -> None:
        self.path = path
        self._directory = directory
        self._index_path = index_path

    def take(self) -> bool:
        """Whether the index matched the records before this change; removes the stamp, so
        a crash before :meth:`save` leaves the next writer a full rebuild."""
        saved = read_bytes(self.path)
        if saved is None:
            return False
        remove_file(self.path)
        try:
            stamp = current_stamp(self._directory, self._index_path)
        except OSError:
            return False
        return saved == _encode(stamp)

    def matches(self) -> bool:
        """Whether the stamp is there and both stats still match (nothing is changed)."""
        saved = read_bytes(self.path)
        return saved is not None and saved == _encode(
            current_stamp(self._directory, self._index_path)
        )

    def save(self) -> None:
        """Record that the index now equals the records (after every write of the change)."""
        write_text(self.path, _encode(current_stamp(self._directory, self._index_path)).decode())

    def discard(self) -> None:
        remove_file(self.path)


def splice(text: str | None, ref: str, entry: dict[str, Any] | None) -> str | None:
    """The index document ``text`` (None: absent) with ``ref``'s entry replaced by ``entry``
    (None: removed), rows kept sorted by ref; None when no row is left.

    Raises ``ValueError`` when ``text`` is not in the layout the store writes.
    """
    rows = _rows(text)
    at = bisect.bisect_left(rows, ref, key=_row_ref)  # reads about log2(rows) refs
    found = at < len(rows) and _row_ref(rows[at]) == ref
    if entry is None:
        if found:
            del rows[at]
    elif found:
        rows[at] = encode_row(entry)
    else:
        rows.insert(at, encode_row(entry))
    return f"{_HEAD}{_SEPARATOR.join(rows)}{_TAIL}" if rows else None


def _rows(text: str | None) -> list[str]:
    if text is None:
        return []
    if not text.startswith(_HEAD) or not text.endswith(_TAIL) or len(text) < len(_HEAD + _TAIL):
        raise ValueError("the index is not in the layout the store writes")
    return text[len(_HEAD) : -len(_TAIL)].split(_SEPARATOR)


def _row_ref(row: str) -> str:
    # Only the ref is needed; the key order of an entry puts it first.
    prefix = '  {"ref": '
    if not row.startswith(prefix):
        raise ValueError("an index row does not start with its ref")
    value, _end = _DECODER.raw_decode(row, len(prefix))
    if not isinstance(value, str):
        raise ValueError("an index row's ref is not a string")
    return value


#: Marks a stamp of lowercase refs: the stamp of a release whose refs kept their case
#: (its index may name an item as typed) never matches, so that index is rebuilt, not
#: spliced into under the lowercase ref beside its old row.
_STAMP_FORMAT = "lowercase-refs"


def _encode(stamp: list[Any]) -> bytes:
    return (json.dumps([_STAMP_FORMAT, *stamp]) + "\n").encode()
