"""JSON values measured and copied without recursion (issue 11, point 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from the_loop.fsio import read_bounded_object
from the_loop.records import tree as jsontree
from the_loop.records.tree import MAX_NESTING, copy_json, nesting_exceeds, parse_state_json


def test_the_limit_is_the_documented_one() -> None:
    assert MAX_NESTING == 64


def test_nesting_is_measured_and_copied_without_recursion() -> None:
    value: Any = []
    for _level in range(100_000):  # far past any recursion limit
        value = [value]
    assert nesting_exceeds(value, 100_000)
    assert not nesting_exceeds(value, 100_001)
    copied = copy_json(value)
    assert copied is not value and copied[0][0] is not value[0][0]
    shallow: dict[str, Any] = {"a": [1, {"b": [2]}]}
    again = copy_json(shallow)
    again["a"][1]["b"].append(3)
    assert shallow == {"a": [1, {"b": [2]}]}


def test_a_file_nested_too_deeply_is_unreadable_but_keeps_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"ref": "x", "a": ' + "[" * MAX_NESTING + "]" * MAX_NESTING + "}")
    status, value, problem = read_bounded_object(path)
    assert (status, problem) == ("unreadable", f"it nests deeper than {MAX_NESTING} levels")
    assert isinstance(value, dict) and value["ref"] == "x"


def test_a_file_too_deep_for_the_parser_is_unreadable_without_a_value(tmp_path: Path) -> None:
    path = tmp_path / "deeper.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    status, value, problem = read_bounded_object(path)
    assert (status, value) == ("unreadable", None)
    assert "nested too deeply" in problem


def test_a_file_with_few_brackets_is_not_walked(monkeypatch: Any, tmp_path: Path) -> None:
    path = tmp_path / "flat.json"
    path.write_text('{"ref": "x", "seen": ["a", "b"]}')

    def walked(value: object, limit: int = MAX_NESTING) -> bool:
        raise AssertionError("walked a file that cannot nest that deep")

    monkeypatch.setattr(jsontree, "nesting_exceeds", walked)
    assert read_bounded_object(path)[0] == "ok"


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1}',
        b'{"a": "\\u00e9 \xc3\xa9"}',
        b'{"s": "\xed\xa0\x80"}',
        b"{",
        b"{\x00",
        b"\xef\xbb\xbf{}",
        '{"a": 1}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-16-le"),
        '{"a": 1}'.encode("utf-32"),
        b'["x"]',
        b"{\xff}",
        b"",
    ],
)
def test_a_state_file_parses_as_json_loads_parses_its_bytes(raw: bytes):
    try:
        expected: object = ("ok", json.loads(raw))
    except ValueError:
        expected = "refused"
    value, problem = parse_state_json(raw)
    assert (("ok", value) if not problem else "refused") == expected
