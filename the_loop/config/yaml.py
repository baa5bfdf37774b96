"""YAML for the CLI config, bounded: nesting depth, alias expansion and construction.

A config is a small hand-written document, so a document nested deeper than
:data:`MAX_DEPTH`, one whose aliases expand past :data:`MAX_EXPANDED_NODES` values
(a "billion laughs"), or one with a recursive alias is refused before anything
expands it (decision 007). So is a key given twice in one mapping, at its line: the
loader would keep the last and drop the first silently (one :class:`RepeatedKeys` names
them all). Every refusal is one :class:`YamlRefused`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_DEPTH = 64
MAX_EXPANDED_NODES = 10_000


class YamlRefused(ValueError):
    """The text is not YAML the config accepts; the message says why.

    ``line`` and ``column`` (1-based) say where, when the parser knows.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class RepeatedKeys(YamlRefused):
    """Keys given twice in one mapping: the first in document order says why and where;
    ``each`` holds every one, in document order."""

    def __init__(self, each: list[YamlRefused]) -> None:
        super().__init__(str(each[0]), each[0].line, each[0].column)
        self.each = tuple(each)


def _refusal(error: yaml.YAMLError) -> YamlRefused:
    """The parser's error as one refusal at its mark: the problem, then its context."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return YamlRefused(f"not valid YAML: {error}")
    mark = error.problem_mark or error.context_mark
    words = [part for part in (error.problem, error.context) if part]
    if error.problem and error.context:
        words = [error.problem, f"({error.context})"]
    problem = " ".join(words) or "not valid YAML"
    if mark is None:
        return YamlRefused(f"not valid YAML: {problem}")
    return YamlRefused(f"not valid YAML: {problem}", mark.line + 1, mark.column + 1)


class _DepthBoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing collections nested deeper than :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlRefused(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)  # pyright: ignore[reportUnknownMemberType]
        finally:
            self._depth -= 1


def parse_yaml(text: str) -> Any:
    """The document in ``text`` (None when empty), or :class:`YamlRefused`."""
    loader = _DepthBoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expansion(node)
        check_duplicate_keys(node)
        return loader.construct_document(node)  # pyright: ignore[reportUnknownMemberType]
    except yaml.YAMLError as error:
        raise _refusal(error) from error
    except (ValueError, OverflowError, TypeError) as error:
        if isinstance(error, YamlRefused):
            raise
        raise YamlRefused(f"a value YAML cannot construct: {error}") from error
    finally:
        loader.dispose()


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]  # pyright: ignore[reportUnknownVariableType]
    return []


def check_expansion(root: Node) -> None:
    """Refuse a node graph whose aliases recurse or expand past the budget.

    Walks each distinct node once (no recursion): a node's expanded size is one
    plus its children's, so shared aliases are counted as often as they expand.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_EXPANDED_NODES:
                raise YamlRefused(
                    f"aliases expand the document past {MAX_EXPANDED_NODES} values; "
                    "write the values out instead"
                )
        elif key in open_nodes:
            raise YamlRefused("a recursive alias (a value that contains itself)")
        elif key not in sizes:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


_MERGE_TAG = "tag:yaml.org,2002:merge"


def check_duplicate_keys(root: Node) -> None:
    """Refuse mappings that hold one key twice (:class:`RepeatedKeys`), each at the second
    one's line and column.

    Keys compare by their resolved tag and text (``1`` and ``"1"`` differ); ``<<``
    merges are left to the loader. Each distinct node is visited once.
    """
    seen: set[int] = set()
    stack: list[Node] = [root]
    repeated: list[YamlRefused] = []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            repeated.extend(_repeated_keys(node))
        stack.extend(_children(node))
    if repeated:
        raise RepeatedKeys(sorted(repeated, key=lambda each: (each.line or 0, each.column or 0)))


def _repeated_keys(mapping: MappingNode) -> Iterator[YamlRefused]:
    first: dict[tuple[str, str], int] = {}
    for key, _ in mapping.value:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(key, ScalarNode) or key.tag == _MERGE_TAG:
            continue
        text = str(key.value)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        line = key.start_mark.line + 1
        earlier = first.get((key.tag, text))
        first.setdefault((key.tag, text), line)
        if earlier is not None:
            yield YamlRefused(
                f"the key {text!r} is given twice in one mapping (first at line {earlier}): "
                "YAML would keep only the last; merge the two into one",
                line,
                key.start_mark.column + 1,
            )
