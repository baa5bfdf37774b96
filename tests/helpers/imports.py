"""Read a package's imports with ``ast`` and check them against rooms (docs/architecture.md).

Pure functions over a directory, so the checks can be proved on a throwaway package.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    """One import statement's target, as ``importer`` (a module) sees it."""

    importer: str
    imported: str
    path: Path
    line: int
    type_checking: bool
    in_function: bool

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} imports {self.imported}"


@dataclass(frozen=True)
class Room:
    """One row of the rooms table: its name, the module entries it owns, what it may
    import, and its layer (0 when the table has no layer column)."""

    name: str
    entries: tuple[str, ...]
    may_import: frozenset[str]
    layer: int = 0

    def owns(self, relative: str) -> bool:
        """Whether the module at ``relative`` (e.g. ``sessions/registry.py``) is in this room."""
        return any(
            relative.startswith(entry) if entry.endswith("/") else relative == entry
            for entry in self.entries
        )


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package at ``package_dir``: dotted name -> file."""
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def read_imports(package_dir: Path) -> list[Import]:
    """Every import of the package's own modules, from every module of the package."""
    modules = package_modules(package_dir)
    found: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        reader = _ImportReader(name, path, path.name == "__init__.py", modules)
        reader.visit(tree)
        found.extend(reader.found)
    return found


class _ImportReader(ast.NodeVisitor):
    def __init__(
        self, module: str, path: Path, is_package: bool, modules: Mapping[str, Path]
    ) -> None:
        self.module, self.path, self.is_package, self.modules = module, path, is_package, modules
        self.root = module.split(".")[0]
        self.type_checking = False
        self.in_function = False
        self.found: list[Import] = []

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        outer, self.type_checking = self.type_checking, True
        for child in node.body:
            self.visit(child)
        self.type_checking = outer
        for child in node.orelse:
            self.visit(child)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.in_function = self.in_function, True
        self.generic_visit(node)
        self.in_function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(submodule if submodule in self.modules else base, node.lineno)

    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.module.split(".")
        keep = len(parts) - node.level + (1 if self.is_package else 0)
        return ".".join(parts[:keep] + ([node.module] if node.module else []))

    def _add(self, target: str, line: int) -> None:
        if target != self.root and not target.startswith(self.root + "."):
            return
        while target not in self.modules and "." in target:
            target = target.rsplit(".", 1)[0]
        found = Import(self.module, target, self.path, line, self.type_checking, self.in_function)
        if found not in self.found:  # ``from x import a, b`` is one import of x
            self.found.append(found)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


_ROW = re.compile(r"^\|(?P<cells>.*)\|\s*$")


def read_rooms(document: str, heading: str = "## Rooms and imports") -> list[Room]:
    """The rooms table under ``heading``: ``| room | [layer |] `module`, ... | room, ... |``."""
    lines = document.splitlines()
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        match = _ROW.match(line)
        if match:
            rows.append([cell.strip() for cell in match["cells"].split("|")])
    header, separator, *body = rows
    layered = header == ["room", "layer", "modules", "may import"]
    if not (layered or header == ["room", "modules", "may import"]) or set("".join(separator)) != {
        "-"
    }:
        raise AssertionError(f"the rooms table under {heading!r} lost its header: {header}")
    return [
        Room(
            name=row[0],
            entries=tuple(re.findall(r"`([^`]+)`", row[-2])),
            may_import=frozenset(part.strip() for part in row[-1].split(",")),
            layer=int(row[1]) if layered else 0,
        )
        for row in body
    ]


def room_of(relative: str, rooms: list[Room]) -> list[Room]:
    """The rooms owning the module at ``relative``; a placed module has exactly one."""
    return [room for room in rooms if room.owns(relative)]


def relative_path(module: str, modules: Mapping[str, Path]) -> str:
    """``the_loop.sessions.registry`` -> ``sessions/registry.py`` (package-relative)."""
    path = modules[module]
    package_dir = modules[module.split(".")[0]].parent
    return path.relative_to(package_dir).as_posix()


@dataclass(frozen=True)
class RoomViolation:
    """An import whose importer's room may not import the imported module's room."""

    found: Import
    importer_room: str
    imported_room: str

    def describe(self) -> str:
        return f"{self.found.describe()} ({self.importer_room} may not import {self.imported_room})"


def room_violations(
    imports: list[Import], rooms: list[Room], package_dir: Path
) -> list[RoomViolation]:
    """Every import whose importer's room may not import the imported module's room.

    Modules in no room (or in two) are left to the placement check.
    """
    modules = package_modules(package_dir)
    placed: dict[str, Room] = {}
    for module in modules:
        owners = room_of(relative_path(module, modules), rooms)
        if len(owners) == 1:
            placed[module] = owners[0]
    return [
        RoomViolation(found, placed[found.importer].name, placed[found.imported].name)
        for found in imports
        if found.importer in placed
        and found.imported in placed
        and placed[found.imported].name not in placed[found.importer].may_import
    ]


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """Each set of modules that import each other through imports that run (not TYPE_CHECKING).

    A cycle is reported as its modules, sorted; a module importing itself is one too.
    """
    graph: dict[str, set[str]] = {}
    for found in imports:
        if not found.type_checking:
            graph.setdefault(found.importer, set()).add(found.imported)
            graph.setdefault(found.imported, set())
    return [
        sorted(component)
        for component in _strongly_connected(graph)
        if len(component) > 1 or next(iter(component)) in graph[next(iter(component))]
    ]


def _strongly_connected(graph: Mapping[str, set[str]]) -> Iterator[set[str]]:
    """The strongly connected components: modules that reach each other (a package has
    a few hundred modules, so a reachability walk from each is cheap and plain)."""
    reach = {node: _reachable(graph, node) for node in graph}
    placed: set[str] = set()
    for node in sorted(graph):
        if node not in placed:
            component = {node} | {other for other in reach[node] if node in reach[other]}
            placed |= component
            yield component


def _reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` reaches by one or more imports (itself only through a cycle)."""
    seen: set[str] = set()
    pending = list(graph[start])
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending.extend(graph[node])
    return seen
