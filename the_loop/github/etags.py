"""Remembered ETags for conditional GETs, keyed by a token fingerprint and the URL.

The client looks a page up before asking and stores what it got; the caller
``flush``es once it has processed what it read, so a crash before the flush asks
again instead of being told "not modified" about pages it never handled.
:class:`FileEtagCache` keeps them in ``local/poll-etags.json`` (machine-local).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from the_loop.fsio import locked, read_object, write_json
from the_loop.layout import ETAG_CACHE_FILE, StateLayout

FORMAT_VERSION = 1
#: Past this many entries a flush drops the ones this process never used.
MAX_ENTRIES = 1000


def token_fingerprint(token: str) -> str:
    """A stable, one-way name for ``token`` (16 hex digits); never the token itself."""
    if not token:
        return "anonymous"
    return hashlib.sha256(b"the-loop etag key\0" + token.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class CachedPage:
    """What a 304 stands for: the validator, the page's ``rel="next"``, its body if kept."""

    etag: str
    next_url: str = ""
    body: str | None = None
    #: How many entries the page listed (-1: not a listing, or not known).
    entries: int = -1

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"etag": self.etag, "next": self.next_url}
        if self.body is not None:
            document["body"] = self.body
        if self.entries >= 0:
            document["entries"] = self.entries
        return document

    @classmethod
    def from_dict(cls, data: object) -> CachedPage | None:
        """The entry, or None for anything that is not one (a hand edit, an older shape)."""
        if not isinstance(data, dict):
            return None
        entry = cast(dict[str, Any], data)
        etag, next_url, body = entry.get("etag"), entry.get("next", ""), entry.get("body")
        if not isinstance(etag, str) or not etag or not isinstance(next_url, str):
            return None
        count = entry.get("entries", -1)
        count = count if isinstance(count, int) and not isinstance(count, bool) else -1
        return cls(etag, next_url, body if isinstance(body, str) else None, count)


class EtagCache(Protocol):
    """Where the client keeps validators between requests."""

    def lookup(self, fingerprint: str, url: str) -> CachedPage | None: ...

    def store(self, fingerprint: str, url: str, page: CachedPage) -> None: ...

    def flush(self) -> None: ...


Entries = dict[tuple[str, str], CachedPage]


class MemoryEtagCache:
    """Validators for the life of the process (a daemon's, or a test's)."""

    def __init__(self) -> None:
        self.entries: Entries = {}

    def lookup(self, fingerprint: str, url: str) -> CachedPage | None:
        return self.entries.get((fingerprint, url))

    def store(self, fingerprint: str, url: str, page: CachedPage) -> None:
        self.entries[(fingerprint, url)] = page

    def flush(self) -> None:
        """Nothing to make durable."""


class FileEtagCache:
    """Validators in one JSON file, read once, staged in memory, written by :meth:`flush`.

    A flush merges the staged entries into what the file holds at that moment,
    under the lock, so another process's entries survive. An unreadable file
    counts as empty and is replaced; a stranger's file (a symlink, a directory)
    is never read or written, and :attr:`problem` says why.
    """

    def __init__(self, path: Path, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path
        self.problem = ""
        self._entries: Entries | None = None
        self._staged: Entries = {}
        self._used: set[tuple[str, str]] = set()

    @classmethod
    def for_layout(cls, layout: StateLayout) -> FileEtagCache:
        """The cache of ``layout``'s machine-local store."""
        return cls(layout.local_dir / ETAG_CACHE_FILE, layout.local_locks_dir / "poll-etags.lock")

    def lookup(self, fingerprint: str, url: str) -> CachedPage | None:
        key = (fingerprint, url)
        self._used.add(key)
        if key in self._staged:
            return self._staged[key]
        return self._load().get(key)

    def store(self, fingerprint: str, url: str, page: CachedPage) -> None:
        self._used.add((fingerprint, url))
        self._staged[(fingerprint, url)] = page

    def flush(self) -> None:
        """Write the staged entries durably (atomic, under the lock); ``OSError`` propagates."""
        if not self._staged or self.problem:
            return
        with locked(self.lock_path):
            entries = self._read()
            if self.problem:
                return
            entries.update(self._staged)
            if len(entries) > MAX_ENTRIES:
                entries = {key: page for key, page in entries.items() if key in self._used}
            write_json(self.path, _document(entries), indent=None)
        self._entries, self._staged = entries, {}

    def _load(self) -> Entries:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> Entries:
        status, data, problem = read_object(self.path)
        if status == "stranger":
            self.problem = f"{self.path} is not a regular file: {problem}"
            return {}
        if status != "ok" or not isinstance(data, dict):
            return {}
        return _entries(cast(dict[str, Any], data).get("tokens"))


def _entries(tokens: object) -> Entries:
    entries: Entries = {}
    if not isinstance(tokens, dict):
        return entries
    for fingerprint, pages in cast(dict[str, Any], tokens).items():
        if not isinstance(pages, dict):
            continue
        for url, raw in cast(dict[str, Any], pages).items():
            page = CachedPage.from_dict(raw)
            if page is not None:
                entries[(fingerprint, url)] = page
    return entries


def _document(entries: Entries) -> dict[str, Any]:
    tokens: dict[str, dict[str, Any]] = {}
    for (fingerprint, url), page in sorted(entries.items()):
        tokens.setdefault(fingerprint, {})[url] = page.to_dict()
    return {"version": FORMAT_VERSION, "tokens": tokens}
