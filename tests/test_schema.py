"""The config schema validator agrees with the jsonschema package on every document."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from the_loop.config.file import SCHEMA_PATH
from the_loop.config.schema import Validator

SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
EXAMPLE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "docs" / "examples" / "cli-config.yaml").read_text()
)
REFERENCE = jsonschema.Draft202012Validator(SCHEMA)
OURS = Validator(SCHEMA)


def paths_of_ours(document: object) -> set[tuple[str | int, ...]]:
    return {violation.path for violation in OURS.violations(document)}


def paths_of_reference(document: object) -> set[tuple[str | int, ...]]:
    errors = REFERENCE.iter_errors(document)  # pyright: ignore[reportArgumentType]
    return {tuple(error.absolute_path) for error in errors}


def leaf_paths(node: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(node, dict):
        found: list[tuple[str | int, ...]] = [path]
        for key, value in node.items():
            found += leaf_paths(value, (*path, key))
        return found
    if isinstance(node, list):
        return [path, *(p for i, v in enumerate(node) for p in leaf_paths(v, (*path, i)))]
    return [path]


def replaced(document: dict[str, Any], path: tuple[str | int, ...], value: object) -> object:
    if not path:
        return value
    changed = copy.deepcopy(document)
    node: Any = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "x", "never", "worktree", "ssh", "https://h", "a/b", "bad name!"]),
    st.lists(st.sampled_from(["a", "{session_id}"]), max_size=2),
    st.dictionaries(st.sampled_from(["root", "extra", "octo/app"]), st.just("v"), max_size=2),
)


def test_the_validator_refuses_keywords_it_does_not_implement() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        Validator({"oneOf": []})


def test_the_example_config_is_valid_for_both() -> None:
    assert paths_of_ours(EXAMPLE) == paths_of_reference(EXAMPLE) == set()


@settings(max_examples=500, deadline=None)
@given(data=st.data(), value=values)
def test_any_single_change_to_the_example_gets_the_same_verdict_and_paths(
    data: st.DataObject, value: object
) -> None:
    path = data.draw(st.sampled_from(leaf_paths(EXAMPLE)))
    document = replaced(EXAMPLE, path, value)
    assert paths_of_ours(document) == paths_of_reference(document)


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(["state", "routing", "tmux", "x"]), value=values)
def test_unknown_and_misplaced_keys_get_the_same_verdict(key: str, value: object) -> None:
    document = {**EXAMPLE, "routing": {**EXAMPLE["routing"], key: value}}
    assert paths_of_ours(document) == paths_of_reference(document)
