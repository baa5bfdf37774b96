"""The board's record cache (the_loop.api.file_cache): a record is parsed again when its
file changed, and a change made within a tick of the file system's clock of a listing,
which the times cannot tell, is read again at the next listing all the same."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from the_loop.api.file_cache import RACY_SECONDS, FileCache


def _load(path: str) -> object:
    return json.loads(Path(path).read_text())


def test_a_change_within_the_listings_tick_is_read_again(tmp_path: Path) -> None:
    record = tmp_path / "a.json"
    record.write_text('{"v": "pause"}')
    cache = FileCache[object](tmp_path, _load)
    assert cache.files() == {"a.json": {"v": "pause"}}
    assert not cache.unchanged(), "listed within a tick of its change: listed again"
    # The same size, and both times put back: what a coarse clock would show.
    before, folder = os.stat(record), os.stat(tmp_path)
    record.write_text('{"v": "start"}')
    os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.utime(tmp_path, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    assert cache.files() == {"a.json": {"v": "start"}}


def test_an_old_listing_is_trusted_and_a_replaced_record_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"v": 1}')
    (tmp_path / "index.json").write_text("{}")
    (tmp_path / ".a.json.x.tmp").write_text("{}")
    old = time.time_ns() - 10**10
    for path in (tmp_path / "a.json", tmp_path):
        os.utime(path, ns=(old, old))
    cache = FileCache[object](tmp_path, _load)
    assert cache.files() == {"a.json": {"v": 1}}, "never the index or a temp file"
    assert cache.unchanged()
    time.sleep(RACY_SECONDS)  # the replacement comes after the listing's tick
    replacement = tmp_path / ".next"
    replacement.write_text('{"v": 22}')
    replacement.replace(tmp_path / "a.json")
    assert not cache.unchanged()
    assert cache.files() == {"a.json": {"v": 22}}
