"""The ETag cache: keyed by a token fingerprint and the URL, durable only once flushed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from the_loop.github.etags import (
    MAX_ENTRIES,
    CachedPage,
    FileEtagCache,
    MemoryEtagCache,
    token_fingerprint,
)
from the_loop.layout import StateLayout

URL = "https://api.github.com/repos/octo/app/issues/comments?per_page=100"
TOKEN = "ghp_secret-token-value"


def cache_at(root: Path) -> FileEtagCache:
    return FileEtagCache.for_layout(StateLayout(root))


def test_a_fingerprint_is_stable_short_and_never_the_token() -> None:
    fingerprint = token_fingerprint(TOKEN)
    assert fingerprint == token_fingerprint(TOKEN) != token_fingerprint(TOKEN + "x")
    assert len(fingerprint) == 16 and TOKEN not in fingerprint
    assert token_fingerprint("") == "anonymous"


def test_a_flushed_entry_is_read_back_by_a_new_cache(tmp_path: Path) -> None:
    first = cache_at(tmp_path)
    first.store("f1", URL, CachedPage('W/"abc"', next_url=URL + "&page=2", body="[]"))
    first.flush()
    assert cache_at(tmp_path).lookup("f1", URL) == CachedPage('W/"abc"', URL + "&page=2", "[]")
    assert cache_at(tmp_path).lookup("f2", URL) is None


def test_nothing_is_durable_before_the_flush(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.store("f1", URL, CachedPage('W/"abc"'))
    assert cache.lookup("f1", URL) == CachedPage('W/"abc"')
    assert cache_at(tmp_path).lookup("f1", URL) is None
    assert not (tmp_path / "local" / "poll-etags.json").exists()


def test_a_flush_keeps_what_another_process_flushed_meanwhile(tmp_path: Path) -> None:
    mine, theirs = cache_at(tmp_path), cache_at(tmp_path)
    mine.lookup("f1", URL)  # loaded before the other one writes
    theirs.store("f2", URL, CachedPage('W/"theirs"'))
    theirs.flush()
    mine.store("f1", URL, CachedPage('W/"mine"'))
    mine.flush()
    fresh = cache_at(tmp_path)
    assert fresh.lookup("f1", URL) == CachedPage('W/"mine"')
    assert fresh.lookup("f2", URL) == CachedPage('W/"theirs"')


def test_the_file_is_written_atomically_in_local_and_leaves_no_temporary(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.store("f1", URL, CachedPage('W/"abc"'))
    cache.flush()
    assert os.listdir(tmp_path / "local") == ["poll-etags.json"]
    document = json.loads((tmp_path / "local" / "poll-etags.json").read_text())
    assert document == {"version": 1, "tokens": {"f1": {URL: {"etag": 'W/"abc"', "next": ""}}}}
    assert (tmp_path / "locks" / "local" / "poll-etags.lock").exists()


def test_an_unreadable_file_counts_as_empty_and_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "local" / "poll-etags.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    cache = cache_at(tmp_path)
    assert cache.lookup("f1", URL) is None and cache.problem == ""
    cache.store("f1", URL, CachedPage('W/"abc"'))
    cache.flush()
    assert cache_at(tmp_path).lookup("f1", URL) == CachedPage('W/"abc"')


def test_a_hand_edited_entry_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "local" / "poll-etags.json"
    path.parent.mkdir(parents=True)
    entries = {"good": {"etag": 'W/"1"', "next": ""}, "bad": {"etag": 7}, "worse": []}
    path.write_text(json.dumps({"version": 1, "tokens": {"f1": entries}}), encoding="utf-8")
    cache = cache_at(tmp_path)
    assert cache.lookup("f1", "good") == CachedPage('W/"1"')
    assert cache.lookup("f1", "bad") is None and cache.lookup("f1", "worse") is None


def test_a_symlink_at_the_path_is_never_followed_or_replaced(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"keep": true}', encoding="utf-8")
    path = tmp_path / "state" / "local" / "poll-etags.json"
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    cache = cache_at(tmp_path / "state")
    cache.store("f1", URL, CachedPage('W/"abc"'))
    cache.flush()
    assert path.is_symlink() and outside.read_text(encoding="utf-8") == '{"keep": true}'
    assert "not a regular file" in cache.problem


def test_past_the_cap_a_flush_drops_the_entries_this_process_never_used(tmp_path: Path) -> None:
    old = cache_at(tmp_path)
    for index in range(MAX_ENTRIES):
        old.store("f1", f"{URL}&page={index}", CachedPage(f'W/"{index}"'))
    old.flush()
    current = cache_at(tmp_path)
    current.lookup("f1", f"{URL}&page=3")
    current.store("f1", "new", CachedPage('W/"new"'))
    current.flush()
    fresh = cache_at(tmp_path)
    assert fresh.lookup("f1", "new") == CachedPage('W/"new"')
    assert fresh.lookup("f1", f"{URL}&page=3") == CachedPage('W/"3"')
    assert fresh.lookup("f1", f"{URL}&page=4") is None


def test_the_memory_cache_keeps_entries_per_fingerprint() -> None:
    cache = MemoryEtagCache()
    cache.store("f1", URL, CachedPage('W/"abc"'))
    cache.flush()
    assert cache.lookup("f1", URL) == CachedPage('W/"abc"') and cache.lookup("f2", URL) is None
