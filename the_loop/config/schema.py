"""A small JSON Schema validator for the keywords the CLI config schema uses.

Covers ``type``, ``enum``, ``pattern``, ``minLength``, ``minimum``,
``exclusiveMinimum``, ``maximum``, ``minItems``, ``items``, ``properties``,
``additionalProperties``, ``propertyNames`` and local ``$ref``s — enough for
``schemas/cli-config.schema.json``, and cheap to import (the CLI's start-up is
benchmarked). A test checks it against the ``jsonschema`` package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from the_loop.errors import quoted

Schema = Mapping[str, Any]
SUPPORTED = frozenset(
    {
        "$schema", "$defs", "$ref", "title", "description", "type", "enum", "pattern",
        "minLength", "minimum", "exclusiveMinimum", "maximum", "minItems", "items", "properties",
        "additionalProperties", "propertyNames",
    }
)  # fmt: skip


@dataclass(frozen=True)
class SchemaViolation:
    """One problem: where in the document (key path) and what is wrong."""

    path: tuple[str | int, ...]
    message: str


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "integer" if isinstance(value, int) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _has_type(value: object, expected: str) -> bool:
    actual = _type_name(value)
    return actual == expected or (expected == "number" and actual == "integer")


class Validator:
    """Validates documents against one root schema; unsupported keywords raise ValueError."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._check_supported(schema)

    def _check_supported(self, schema: object) -> None:
        if not isinstance(schema, Mapping):
            return
        node = cast(Schema, schema)
        unknown = set(node) - SUPPORTED
        if unknown:
            raise ValueError(f"unsupported schema keywords: {sorted(unknown)}")
        for key in ("properties", "$defs"):
            for child in cast(Schema, node.get(key, {})).values():
                self._check_supported(child)
        for key in ("items", "additionalProperties", "propertyNames"):
            self._check_supported(node.get(key))

    def violations(self, document: object) -> Iterator[SchemaViolation]:
        """Every violation in document order."""
        yield from self._walk(document, self.schema, ())

    def _resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            pointer = str(schema["$ref"])
            if not pointer.startswith("#/"):
                raise ValueError(f"only local $refs are supported, not {pointer!r}")
            node: Any = self.schema
            for part in pointer[2:].split("/"):
                node = node[part]
            schema = cast(Schema, node)
        return schema

    def _walk(
        self, value: object, schema: Schema, path: tuple[str | int, ...]
    ) -> Iterator[SchemaViolation]:
        schema = self._resolve(schema)
        expected = schema.get("type")
        if isinstance(expected, str) and not _has_type(value, expected):
            yield SchemaViolation(path, f"{quoted(value)} is not of type {expected!r}")
            return
        if "enum" in schema and value not in schema["enum"]:
            yield SchemaViolation(path, f"{quoted(value)} is not one of {list(schema['enum'])!r}")
            return
        if isinstance(value, str):
            yield from _string_violations(value, schema, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield from _number_violations(value, schema, path)
        elif isinstance(value, list):
            yield from self._array_violations(cast(list[object], value), schema, path)
        elif isinstance(value, dict):
            yield from self._object_violations(cast(dict[str, object], value), schema, path)

    def _array_violations(
        self, value: list[object], schema: Schema, path: tuple[str | int, ...]
    ) -> Iterator[SchemaViolation]:
        if len(value) < schema.get("minItems", 0):
            yield SchemaViolation(path, f"{quoted(value)} should be non-empty")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                yield from self._walk(item, cast(Schema, items), (*path, index))

    def _object_violations(
        self, value: dict[str, object], schema: Schema, path: tuple[str | int, ...]
    ) -> Iterator[SchemaViolation]:
        properties = cast(Schema, schema.get("properties", {}))
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        unexpected = [key for key in value if key not in properties and extra is False]
        if unexpected:
            listed = ", ".join(quoted(key) for key in unexpected[:3])
            listed += ", ..." if len(unexpected) > 3 else ""
            verb = "was" if len(unexpected) == 1 else "were"
            message = f"Additional properties are not allowed ({listed} {verb} unexpected)"
            yield SchemaViolation(path, message + _did_you_mean(unexpected[0], properties))
        for key, item in value.items():
            if isinstance(names, Mapping):
                yield from self._walk(key, cast(Schema, names), path)
            if key in properties:
                yield from self._walk(item, cast(Schema, properties[key]), (*path, key))
            elif isinstance(extra, Mapping):
                yield from self._walk(item, cast(Schema, extra), (*path, key))


def _did_you_mean(key: str, known: Mapping[str, object]) -> str:
    """``; did you mean 'x'?`` naming the known key at this level nearest to ``key``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    if not close and key.lower() in {name.lower() for name in known}:
        close = [name for name in known if name.lower() == key.lower()]
    return f"; did you mean {quoted(close[0])}?" if close else ""


def _string_violations(
    value: str, schema: Schema, path: tuple[str | int, ...]
) -> Iterator[SchemaViolation]:
    if len(value) < schema.get("minLength", 0):
        yield SchemaViolation(path, f"{quoted(value)} should be non-empty")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, value):
        described = schema.get("description")
        problem = (
            f"is not {described}" if isinstance(described, str) else f"does not match {pattern!r}"
        )
        yield SchemaViolation(path, f"{quoted(value)} {problem}")


def _number_violations(
    value: float, schema: Schema, path: tuple[str | int, ...]
) -> Iterator[SchemaViolation]:
    minimum = schema.get("minimum")
    if minimum is not None and value < minimum:
        yield SchemaViolation(path, f"{quoted(value)} is less than the minimum of {minimum!r}")
    bound = schema.get("exclusiveMinimum")
    if bound is not None and value <= bound:
        yield SchemaViolation(
            path, f"{quoted(value)} is less than or equal to the minimum of {bound!r}"
        )
    maximum = schema.get("maximum")
    if maximum is not None and value > maximum:
        yield SchemaViolation(path, f"{quoted(value)} is greater than the maximum of {maximum!r}")
