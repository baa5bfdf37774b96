"""The price table: shipped as package data, dated and sourced, every current model
priced, ids matched by their longest prefix that ends where the version does, and an
unknown model priced as the dearest known one and said to be unknown."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

import pytest

from the_loop.errors import TheLoopError
from the_loop.spend.figures import Tokens
from the_loop.spend.prices import PRICES_FILE, PriceTable, Rates

REPO = Path(__file__).resolve().parents[1]


def table(**models: dict[str, object]) -> PriceTable:
    return PriceTable.from_mapping({"date": "2026-12-06", "source": "s", "models": models})


def rates(input_price: float, output: float) -> dict[str, object]:
    return {
        "input": input_price,
        "output": output,
        "cacheWrite5m": input_price * 1.25,
        "cacheWrite1h": input_price * 2,
        "cacheRead": input_price / 10,
    }


def test_the_shipped_table_is_dated_sourced_and_prices_every_current_model() -> None:
    raw = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    shipped = PriceTable.load()

    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", shipped.date)
    assert shipped.source == "https://platform.claude.com/docs/en/about-claude/pricing"
    assert raw["unit"] == "USD per million tokens"
    for model in (
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5",
        "claude-3-5-haiku",
    ):
        assert model in shipped.models, model
    assert shipped.rates("claude-sonnet-4-5-20250929") == (Rates(3, 15, 3.75, 6, 0.3), True)
    assert shipped.rates("claude-opus-4-5-20251101") == (Rates(5, 25, 6.25, 10, 0.5), True)
    assert shipped.rates("claude-haiku-4-5-20251001") == (Rates(1, 5, 1.25, 2, 0.1), True)
    assert shipped.rates("claude-3-5-haiku-20241022") == (Rates(0.8, 4, 1, 1.6, 0.08), True)


def test_the_table_ships_in_the_wheel() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["the_loop"]
    relative = PRICES_FILE.relative_to(REPO / "the_loop").as_posix()

    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)


def test_a_model_id_takes_its_longest_prefix_that_ends_where_its_version_does() -> None:
    prices = table(
        **{
            "claude-opus-4": rates(15, 75),
            "claude-opus-4-5": rates(5, 25),
            "claude-sonnet-4-5": rates(3, 15),
        }
    )

    assert prices.prefix_of("claude-opus-4-5-20251101") == "claude-opus-4-5"
    assert prices.prefix_of("claude-opus-4-20250514") == "claude-opus-4"
    assert prices.prefix_of("claude-opus-4") == "claude-opus-4"
    assert prices.prefix_of("claude-sonnet-4-5[1m]") == "claude-sonnet-4-5"
    assert prices.prefix_of("claude-opus-4-5@20251101") == "claude-opus-4-5"
    assert prices.prefix_of("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5"
    # A later version is another model, not its elder's.
    assert prices.prefix_of("claude-opus-4-7") == ""
    assert prices.prefix_of("claude-opus-4-10-20270101") == ""
    assert prices.prefix_of("claude-sonnet-4") == ""


def test_an_unknown_model_gets_the_dearest_known_rates_and_is_said_unknown() -> None:
    prices = table(
        **{"claude-a": rates(3, 15), "claude-b": rates(15, 75), "claude-c": rates(20, 60)}
    )

    found, known = prices.rates("claude-unheard-of-1")

    assert known is False
    assert found == prices.models["claude-b"]
    assert prices.rates("claude-a-20260101") == (prices.models["claude-a"], True)


def test_the_shipped_tables_dearest_model_is_the_one_unknown_models_pay() -> None:
    shipped = PriceTable.load()
    dearest = max(rates.output for rates in shipped.models.values())

    found, known = shipped.rates("gpt-something")

    assert not known
    assert found.output == dearest


def test_rates_price_each_kind_of_token_and_each_cache_lifetime() -> None:
    sonnet = Rates(3, 15, 3.75, 6, 0.3)
    tokens = Tokens(input=1000, output=200, cache_read=5000, cache_write=1000, cache_write_1h=700)

    assert sonnet.usd(tokens) == pytest.approx(
        (1000 * 3 + 200 * 15 + 5000 * 0.3 + 300 * 3.75 + 700 * 6) / 1_000_000
    )


def test_a_long_prompt_tier_applies_above_its_threshold_only() -> None:
    shipped = PriceTable.load()
    haiku, known = shipped.rates("claude-haiku-5-5")

    assert known
    assert haiku.for_prompt(100_000) is haiku
    assert haiku.for_prompt(100_001) == haiku.long_prompt
    assert haiku.long_prompt is not None and haiku.long_prompt.input == 0.5


@pytest.mark.parametrize(
    "broken",
    [
        [],
        {"models": {}},
        {"models": []},
        {"models": {"claude-x": {"input": 1}}},
        {"models": {"claude-x": {**rates(1, 2), "output": "2"}}},
        {"models": {"claude-x": {**rates(1, 2), "output": -2}}},
        {"models": {"claude-x": {**rates(1, 2), "output": True}}},
        {"models": {"claude-x": {**rates(1, 2), "longPrompt": {**rates(2, 4)}}}},
    ],
)
def test_a_malformed_table_is_refused_with_a_sentence(broken: object) -> None:
    with pytest.raises(TheLoopError, match="price table"):
        PriceTable.from_mapping(broken)


def test_an_unreadable_table_file_is_refused_with_a_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text("{not json", encoding="utf-8")

    with pytest.raises(TheLoopError, match="cannot be read"):
        PriceTable.load(bad)
