"""What the meter keeps between reads, so that each read costs what was appended.

Per file: the offset read so far (complete lines only), the file's identity, and a
digest of the bytes just before that offset, so a file replaced or rewritten is seen
and read again from its start. Per message, for the last ``RECENT_KEYS`` messages only:
the usage already counted, so a later line of the same message adds just what it says
more, and a file read again counts none of them twice. Per model: the running totals.
Its size follows the number of files and models, never the transcripts' length.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from the_loop.spend.figures import Tokens

STATE_VERSION = 1
#: How many messages' counted usage is kept (each message's lines are near each other).
RECENT_KEYS = 512
#: A model's running totals are kept apart for the requests that paid its long-prompt tier.
Bucket = tuple[str, bool]


@dataclass(frozen=True)
class FileMark:
    """How far one transcript was read: the offset after its last complete line, the
    file's inode and device, and a digest of the bytes just before the offset."""

    offset: int
    inode: int
    device: int
    tail: str


@dataclass(frozen=True)
class MeterState:
    """The meter's memory of a session's transcripts; ``to_dict`` is plain JSON and
    ``from_dict`` reads anything it cannot trust as a fresh state (which counts again
    from nothing, to the same totals)."""

    files: Mapping[str, FileMark] = field(default_factory=lambda: {})
    recent: tuple[tuple[str, Tokens], ...] = ()
    totals: Mapping[Bucket, Tokens] = field(default_factory=lambda: {})
    reported_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "files": {
                path: [mark.offset, mark.inode, mark.device, mark.tail]
                for path, mark in self.files.items()
            },
            "recent": [[key, list(tokens.counts())] for key, tokens in self.recent],
            "totals": [
                [model, long_prompt, list(tokens.counts())]
                for (model, long_prompt), tokens in self.totals.items()
            ],
            "reportedUsd": self.reported_usd,
        }

    @classmethod
    def from_dict(cls, data: object) -> MeterState:
        try:
            return _state_of(data)
        except (TypeError, ValueError, KeyError, IndexError):
            return cls()


def _state_of(data: object) -> MeterState:
    found = _object(data)
    if found.get("version") != STATE_VERSION:
        raise ValueError("not a meter state of this version")
    files = {
        str(path): FileMark(_whole(mark[0]), _whole(mark[1]), _whole(mark[2]), _text(mark[3]))
        for path, mark in _object(found["files"]).items()
    }
    recent = tuple((_text(key), _tokens(counts)) for key, counts in _list(found["recent"]))
    totals: dict[Bucket, Tokens] = {}
    for model, long_prompt, counts in _list(found["totals"]):
        if not isinstance(long_prompt, bool):
            raise TypeError("a bucket's long-prompt flag must be true or false")
        totals[(_text(model), long_prompt)] = _tokens(counts)
    reported = found.get("reportedUsd", 0.0)
    if isinstance(reported, bool) or not isinstance(reported, int | float) or reported < 0:
        raise ValueError("reportedUsd must be a non-negative number")
    return MeterState(files, recent[-RECENT_KEYS:], totals, float(reported))


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    return cast(dict[str, Any], value)


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return cast(list[Any], value)


def _whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a non-negative integer")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _tokens(value: object) -> Tokens:
    counts = _list(value)
    if len(counts) != len(Tokens().counts()):
        raise ValueError("expected five counts")
    return Tokens(*(_whole(count) for count in counts))


class Tally:
    """A working copy of a state that one read updates, then freezes."""

    def __init__(self, state: MeterState) -> None:
        self.files = dict(state.files)
        self.recent: OrderedDict[str, Tokens] = OrderedDict(state.recent)
        self.totals = dict(state.totals)
        self.reported_usd = state.reported_usd

    def count(self, key: str, bucket: Bucket, tokens: Tokens) -> None:
        """Count a line of message ``key``: the first line in full; a later one, only
        what its counts hold beyond the largest already counted (each count apart)."""
        counted = self.recent.pop(key, None)
        if counted is None:
            added, largest = tokens, tokens
        else:
            largest = counted.most(tokens)
            added = largest - counted
        self.recent[key] = largest
        while len(self.recent) > RECENT_KEYS:
            self.recent.popitem(last=False)
        if added:
            self.totals[bucket] = self.totals.get(bucket, Tokens()) + added

    def report(self, usd: float) -> None:
        """Note a running cost the agent reported; the largest is kept."""
        self.reported_usd = max(self.reported_usd, usd)

    def frozen(self) -> MeterState:
        return MeterState(
            files=dict(self.files),
            recent=tuple(self.recent.items()),
            totals=dict(self.totals),
            reported_usd=self.reported_usd,
        )
