"""The spend meter: what a Claude Code session has spent, read from its transcripts.

``meter(files, state, prices)`` reads only what was appended to each file since
``state`` (complete lines; a last line still being written waits for the next read),
counts each message once by its message id and request id, taking the largest usage its
lines show, and prices the running totals with the table. A file that shrank, was
replaced or rewritten is read again from its start; the messages counted recently are
not counted again. Files are opened without following a final link; one that is absent,
a link or not a regular file is skipped. The cost of a read follows the bytes appended,
never the files' size.

Turns and hours are not the transcripts' to say: the spend returned has them at 0.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from the_loop.fsio import open_regular
from the_loop.spend.figures import Spend, Tokens
from the_loop.spend.prices import PriceTable
from the_loop.spend.state import Bucket, FileMark, MeterState, Tally
from the_loop.spend.transcripts import line_reported_cost, line_usage, transcript_files

__all__ = [
    "MeterResult",
    "MeterState",
    "PriceTable",
    "Spend",
    "Tokens",
    "meter",
    "price",
    "transcript_files",
]

#: How much of a file one ``pread`` takes.
CHUNK_BYTES = 1 << 20
#: How many bytes before a file's offset vouch that it is still the file that was read
#: (a line of Claude Code's ends with its uuid and timestamp, within these).
TAIL_BYTES = 512


@dataclass(frozen=True)
class MeterResult:
    """One read's outcome: the state to keep, the spend so far (``usd`` and ``tokens``;
    ``turns`` and ``hours`` at 0), the models met that the table does not know (priced as
    its dearest), the bytes read, and the largest running cost Claude Code itself wrote
    into these transcripts (0 when it wrote none)."""

    state: MeterState
    spend: Spend
    unknown_models: tuple[str, ...]
    bytes_read: int
    reported_usd: float


def meter(files: Sequence[Path], state: MeterState, prices: PriceTable) -> MeterResult:
    """Read what was appended to ``files`` since ``state`` and price everything counted."""
    tally = Tally(state)
    bytes_read = sum(_read_file(path, tally, prices) for path in files)
    kept = tally.frozen()
    spend, unknown = price(kept.totals, prices)
    return MeterResult(kept, spend, unknown, bytes_read, kept.reported_usd)


def price(totals: Mapping[Bucket, Tokens], prices: PriceTable) -> tuple[Spend, tuple[str, ...]]:
    """The spend of running totals per model, and the models the table does not know."""
    usd = 0.0
    tokens = Tokens()
    unknown: set[str] = set()
    for (model, long_prompt), counted in totals.items():
        rates, known = prices.rates(model)
        if not known:
            unknown.add(model)
        if long_prompt and rates.long_prompt is not None:
            rates = rates.long_prompt
        usd += rates.usd(counted)
        tokens += counted
    return Spend(usd=usd, tokens=tokens), tuple(sorted(unknown))


def _read_file(path: Path, tally: Tally, prices: PriceTable) -> int:
    """Count the complete lines appended to ``path``; the bytes read."""
    try:
        fd = open_regular(path)
    except OSError:  # absent, a link, not a regular file, unreadable: nothing to count
        return 0
    try:
        info = os.fstat(fd)
        mark = tally.files.get(str(path))
        start, checked = _resume_at(fd, info, mark)
        offset, read = _count_lines(fd, start, info.st_size, tally, prices)
        tally.files[str(path)] = FileMark(offset, info.st_ino, info.st_dev, _tail(fd, offset))
        return checked + read + min(TAIL_BYTES, offset)
    except OSError:
        return 0
    finally:
        os.close(fd)


def _resume_at(fd: int, info: os.stat_result, mark: FileMark | None) -> tuple[int, int]:
    """Where to go on reading (0 for a new, replaced, shrunk or rewritten file), and the
    bytes read to check it."""
    if mark is None or (mark.inode, mark.device) != (info.st_ino, info.st_dev):
        return 0, 0
    if info.st_size < mark.offset:
        return 0, 0
    tail = _tail(fd, mark.offset)
    checked = min(TAIL_BYTES, mark.offset)
    return (mark.offset if tail == mark.tail else 0), checked


def _tail(fd: int, offset: int) -> str:
    start = max(0, offset - TAIL_BYTES)
    data = os.pread(fd, offset - start, start)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _count_lines(
    fd: int, start: int, end: int, tally: Tally, prices: PriceTable
) -> tuple[int, int]:
    """Count every complete line between ``start`` and ``end``; the offset after the
    last one, and the bytes read. A line not yet ended is left for the next read."""
    position = start
    offset = start
    pending: list[bytes] = []
    while position < end:
        chunk = os.pread(fd, min(CHUNK_BYTES, end - position), position)
        if not chunk:
            break
        position += len(chunk)
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending.append(chunk)
            continue
        data = b"".join([*pending, chunk[:cut]]) if pending else chunk[:cut]
        pending = [chunk[cut + 1 :]]
        for line in data.split(b"\n"):
            _count_line(line, tally, prices)
        offset = position - len(pending[0])
    return offset, position - start


def _count_line(line: bytes, tally: Tally, prices: PriceTable) -> None:
    usage = line_usage(line)
    if usage is not None:
        rates, _ = prices.rates(usage.model)
        long_prompt = rates.long_prompt is not None and (
            usage.tokens.prompt > rates.long_prompt_above
        )
        tally.count(usage.key, (usage.model, long_prompt), usage.tokens)
        return
    reported = line_reported_cost(line)
    if reported is not None:
        tally.report(reported)
