"""What an agent spent, as plain values: its tokens and its spend.

``Tokens`` counts what the model read and wrote; ``Spend`` adds the dollars, the turns
and the working hours. Both are frozen, add up (a work item's spend is the sum of its
sessions'), and read back leniently from the JSON they write: a missing or malformed
figure reads as 0, so a damaged record never stops a listing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast


@dataclass(frozen=True)
class Tokens:
    """Token counts: ``cache_write`` is every cache write, 5-minute and 1-hour;
    ``cache_write_1h`` is the 1-hour part of it, kept for pricing only (it is left out of
    ``to_dict`` and of equality, and reads back as 0)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = field(default=0, compare=False)

    @property
    def cache_write_5m(self) -> int:
        """The 5-minute part of the cache writes."""
        return max(0, self.cache_write - self.cache_write_1h)

    @property
    def prompt(self) -> int:
        """Every token of the prompt: fresh input, cache reads and cache writes."""
        return self.input + self.cache_read + self.cache_write

    def counts(self) -> tuple[int, int, int, int, int]:
        """The five counts in field order, the split included."""
        return (self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h)

    def __bool__(self) -> bool:
        return any(self.counts())

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(*(a + b for a, b in zip(self.counts(), other.counts(), strict=True)))

    def __sub__(self, other: Tokens) -> Tokens:
        """Field by field, never below 0."""
        return Tokens(*(max(0, a - b) for a, b in zip(self.counts(), other.counts(), strict=True)))

    def most(self, other: Tokens) -> Tokens:
        """The larger of each count of the two."""
        return Tokens(*(max(a, b) for a, b in zip(self.counts(), other.counts(), strict=True)))

    def to_dict(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }

    @classmethod
    def from_dict(cls, data: object) -> Tokens:
        """The tokens of a ``to_dict`` object; what is missing or malformed reads as 0."""
        found = _mapping(data)
        return cls(
            input=count_or_zero(found.get("input")),
            output=count_or_zero(found.get("output")),
            cache_read=count_or_zero(found.get("cacheRead")),
            cache_write=count_or_zero(found.get("cacheWrite")),
        )


@dataclass(frozen=True)
class Spend:
    """What a session or a work item has spent: dollars, prompts taken, hours working."""

    usd: float = 0.0
    turns: int = 0
    hours: float = 0.0
    tokens: Tokens = field(default_factory=Tokens)

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            usd=self.usd + other.usd,
            turns=self.turns + other.turns,
            hours=self.hours + other.hours,
            tokens=self.tokens + other.tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"usd", "turns", "hours", "tokens": {"input", "output", "cacheRead",
        "cacheWrite"}}``; dollars to a millionth, hours to a ten-thousandth."""
        return {
            "usd": round(self.usd, 6),
            "turns": self.turns,
            "hours": round(self.hours, 4),
            "tokens": self.tokens.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: object) -> Spend:
        """The spend of a ``to_dict`` object; what is missing or malformed reads as 0."""
        found = _mapping(data)
        return cls(
            usd=_amount(found.get("usd")),
            turns=count_or_zero(found.get("turns")),
            hours=_amount(found.get("hours")),
            tokens=Tokens.from_dict(found.get("tokens")),
        )


def _mapping(data: object) -> Mapping[str, object]:
    if isinstance(data, Mapping):
        return cast(Mapping[str, object], data)
    return {}


def count_or_zero(value: object) -> int:
    """A non-negative whole count, or 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def _amount(value: object) -> float:
    """A non-negative finite number, or 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else 0.0
