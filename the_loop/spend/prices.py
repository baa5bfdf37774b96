"""The price of each Claude model, from the table the project ships (``prices.json``).

The table is data: dated, its source named, in USD per million tokens, one entry per
model id prefix (input, output, 5-minute and 1-hour cache writes, cache reads, and a
dearer tier for long prompts where the model has one). A model id takes the entry of
its longest prefix that ends where the id's version does (``claude-sonnet-4-5-20250929``
is ``claude-sonnet-4-5``; ``claude-opus-4-7`` is never ``claude-opus-4``). A model no
entry names is priced as the dearest known one, and the caller is told it was unknown.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from the_loop.errors import TheLoopError
from the_loop.spend.figures import Tokens

PRICES_FILE = Path(__file__).with_name("prices.json")
PER_TOKENS = 1_000_000
#: What may follow a prefix in a model id it names: nothing, or a suffix that is not a
#: further version number (a date, ``-v1:0``, ``@20250805``, ``[1m]``).
_NOT_A_VERSION = re.compile(r"(?!-\d{1,2}(?:\D|$))")


@dataclass(frozen=True)
class Rates:
    """One model's prices in USD per million tokens; ``long_prompt`` is the dearer tier a
    request pays on every token once its prompt is over ``long_prompt_above`` tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    long_prompt: Rates | None = None
    long_prompt_above: int = 0

    def for_prompt(self, prompt_tokens: int) -> Rates:
        """The rates a request of ``prompt_tokens`` prompt tokens pays."""
        if self.long_prompt is not None and prompt_tokens > self.long_prompt_above:
            return self.long_prompt
        return self

    def usd(self, tokens: Tokens) -> float:
        """What ``tokens`` cost at these rates (the long-prompt tier is the caller's)."""
        total = (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write_5m * self.cache_write_5m
            + min(tokens.cache_write_1h, tokens.cache_write) * self.cache_write_1h
        )
        return total / PER_TOKENS


class PriceTable:
    """A dated price table: ``rates(model)`` for any model id."""

    def __init__(self, *, date: str, source: str, models: Mapping[str, Rates]) -> None:
        if not models:
            raise TheLoopError("a price table needs at least one model")
        self.date = date
        self.source = source
        self.models = dict(models)
        self._dearest = max(self.models.values(), key=lambda rates: (rates.output, rates.input))
        self._found: dict[str, tuple[Rates, bool]] = {}

    @classmethod
    def load(cls, path: Path | None = None) -> PriceTable:
        """The table the package ships, or the one at ``path``; ``TheLoopError`` if it
        cannot be read or is malformed."""
        where = path or PRICES_FILE
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TheLoopError(f"the price table {where} cannot be read: {error}") from error
        return cls.from_mapping(data, where=str(where))

    @classmethod
    def from_mapping(cls, data: object, *, where: str = "given") -> PriceTable:
        """The table of a mapping shaped as ``prices.json``; ``TheLoopError`` if malformed."""
        try:
            found = _object(data, "the table")
            models = _object(found.get("models"), "models")
            return cls(
                date=str(found.get("date", "")),
                source=str(found.get("source", "")),
                models={str(prefix): _rates(entry, prefix) for prefix, entry in models.items()},
            )
        except (TypeError, ValueError) as error:
            raise TheLoopError(f"the price table ({where}) is malformed: {error}") from error

    def rates(self, model: str) -> tuple[Rates, bool]:
        """The rates of ``model`` and whether the table knows it; an unknown model gets
        the dearest known model's rates (the highest output price)."""
        found = self._found.get(model)
        if found is None:
            prefix = self.prefix_of(model)
            found = (self.models[prefix], True) if prefix else (self._dearest, False)
            self._found[model] = found
        return found

    def prefix_of(self, model: str) -> str:
        """The entry naming ``model``: its longest matching prefix, or ``""``. A cloud's
        id (``us.anthropic.claude-…``, ``anthropic/claude-…``) is read from ``claude-``."""
        start = model.find("claude-")
        if start > 0 and model[start - 1] in "./":
            model = model[start:]
        best = ""
        for prefix in self.models:
            if len(prefix) > len(best) and _names(prefix, model):
                best = prefix
        return best


def _names(prefix: str, model: str) -> bool:
    if not model.startswith(prefix):
        return False
    return _NOT_A_VERSION.match(model, len(prefix)) is not None


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be an object")
    return cast(dict[str, Any], value)


def _rates(entry: object, prefix: str) -> Rates:
    found = _object(entry, f"model {prefix!r}")
    base = _plain_rates(found, prefix)
    long_entry = found.get("longPrompt")
    if long_entry is None:
        return base
    tier = _object(long_entry, f"{prefix}.longPrompt")
    above = tier.get("abovePromptTokens")
    if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
        raise ValueError(f"{prefix}.longPrompt.abovePromptTokens must be a positive integer")
    long_prompt = _plain_rates(tier, f"{prefix}.longPrompt")
    return dataclasses.replace(base, long_prompt=long_prompt, long_prompt_above=above)


def _plain_rates(found: dict[str, Any], where: str) -> Rates:
    return Rates(
        input=_price(found.get("input"), f"{where}.input"),
        output=_price(found.get("output"), f"{where}.output"),
        cache_write_5m=_price(found.get("cacheWrite5m"), f"{where}.cacheWrite5m"),
        cache_write_1h=_price(found.get("cacheWrite1h"), f"{where}.cacheWrite1h"),
        cache_read=_price(found.get("cacheRead"), f"{where}.cacheRead"),
    )


def _price(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{what} must be a non-negative number")
    return number
