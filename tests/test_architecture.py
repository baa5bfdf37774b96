"""The package keeps the rooms of docs/architecture.md: every module placed, no import
against the table, no import cycle. The rules are read from the doc itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import the_loop
from tests.helpers.imports import (
    Room,
    RoomViolation,
    import_cycles,
    package_modules,
    read_imports,
    read_rooms,
    relative_path,
    room_of,
    room_violations,
)

PACKAGE = Path(the_loop.__file__).resolve().parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def rooms_of_the_doc():
    return read_rooms(ARCHITECTURE.read_text(encoding="utf-8"))


def allowed(rooms_by_name: dict[str, frozenset[str]], importer: str, imported: str) -> bool:
    return imported in rooms_by_name[importer]


def described(violations: list[RoomViolation]) -> str:
    return "\n".join(violation.describe() for violation in violations)


def test_every_module_of_the_package_lives_in_exactly_one_room_of_the_doc() -> None:
    rooms = rooms_of_the_doc()
    modules = package_modules(PACKAGE)
    misplaced = {
        relative: [room.name for room in owners]
        for relative in (relative_path(module, modules) for module in modules)
        if len(owners := room_of(relative, rooms)) != 1
    }
    assert not misplaced, f"place each module in one row of {ARCHITECTURE.name}: {misplaced}"


def test_every_module_the_doc_places_in_a_room_exists() -> None:
    modules = package_modules(PACKAGE)
    relatives = [relative_path(module, modules) for module in modules]
    stale = [
        f"{room.name}: {entry}"
        for room in rooms_of_the_doc()
        for entry in room.entries
        if not any(Room(room.name, (entry,), frozenset()).owns(path) for path in relatives)
    ]
    assert stale == [], f"{ARCHITECTURE.name} names modules the package does not have"


def test_every_room_the_doc_lets_a_room_import_is_a_room_of_the_doc() -> None:
    rooms = rooms_of_the_doc()
    names = {room.name for room in rooms}
    unknown = {room.name: sorted(room.may_import - names) for room in rooms}
    assert {name: bad for name, bad in unknown.items() if bad} == {}
    assert len(names) == len(rooms), "a room is named twice"


def test_the_doc_keeps_the_layer_rules_of_issue_10() -> None:
    """The doc may gain rooms, but never lets the domain reach up, a store reach the
    domain, or anything but the entry reach the commands, and the local API, the
    commands' other front end (issue 30: its reads are the commands' own handlers)."""
    rooms = {room.name: room.may_import for room in rooms_of_the_doc()}
    assert not allowed(rooms, "domain", "commands") and not allowed(rooms, "domain", "dispatch")
    for store in ("machine store", "operator store", "repository file"):
        assert not allowed(rooms, store, "domain"), store
    reaching_commands = {name for name, may in rooms.items() if "commands" in may}
    assert reaching_commands == {"entry", "commands", "api"}


def test_no_import_runs_against_the_rooms_of_the_doc() -> None:
    violations = room_violations(read_imports(PACKAGE), rooms_of_the_doc(), PACKAGE)
    assert not violations, (
        f"imports against the rooms of {ARCHITECTURE.name}:\n{described(violations)}"
    )


def test_no_modules_of_the_package_import_each_other() -> None:
    cycles = [" <-> ".join(cycle) for cycle in import_cycles(read_imports(PACKAGE))]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


#: The root keeps the entry, the shared vocabulary and the shims (issue 17).
ROOT_MODULES_AT_MOST = 12
#: A command module reads argv and config, builds through a factory and renders.
COMMAND_MODULE_LINES_AT_MOST = 300


def test_no_room_may_import_a_room_of_a_higher_layer() -> None:
    rooms = rooms_of_the_doc()
    layers = {room.name: room.layer for room in rooms}
    upward = {
        room.name: sorted(name for name in room.may_import if layers[name] > room.layer)
        for room in rooms
    }
    assert {name: up for name, up in upward.items() if up} == {}


def test_the_intake_imports_no_reader_and_no_adapter_and_the_reader_feeds_it() -> None:
    """A second reader needs no change to the intake: it reaches nothing above it."""
    rooms = {room.name: room.may_import for room in rooms_of_the_doc()}
    for above in ("poll reader", "adapters", "dispatch", "github", "commands"):
        assert not allowed(rooms, "intake", above), above
    assert allowed(rooms, "poll reader", "intake")
    for above in ("adapters", "dispatch", "github", "commands"):
        assert not allowed(rooms, "poll reader", above), above
    imports = read_imports(PACKAGE)
    assert any(
        i.importer.startswith("the_loop.polling.") and i.imported.startswith("the_loop.intake.")
        for i in imports
    ), "the poll reader feeds the intake"


def test_the_package_root_holds_at_most_twelve_modules() -> None:
    shims = next(room for room in rooms_of_the_doc() if room.name == "shims")
    at_root = sorted(path.name for path in PACKAGE.glob("*.py"))
    shim_packages = sorted(entry for entry in shims.entries if entry.endswith("/"))
    assert len(at_root) + len(shim_packages) <= ROOT_MODULES_AT_MOST, at_root + shim_packages


def test_no_module_under_commands_is_over_three_hundred_lines() -> None:
    commands = PACKAGE / "commands"
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in commands.rglob("*.py")
    }
    large = {name: lines for name, lines in sizes.items() if lines > COMMAND_MODULE_LINES_AT_MOST}
    assert large == {}


# -- the checks themselves, on a throwaway package --------------------------------------

ROOMS = """\
## Rooms and imports

| room | modules | may import |
|---|---|---|
| core | `__init__.py`, `base.py` | core |
| domain | `verbs.py` | core, domain |
| adapters | `tools/` | core, adapters |
"""


def make_package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    return package


def test_an_import_against_the_rooms_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    package = make_package(
        tmp_path,
        {
            "base.py": "",
            "verbs.py": "import pkg.base\ndef run():\n    from pkg.tools.tmux import spawn, kill\n",
            "tools/__init__.py": "",
            "tools/tmux.py": "from .. import base\n",
        },
    )
    [violation] = room_violations(read_imports(package), read_rooms(ROOMS), package)
    assert violation.describe() == (
        f"{package / 'verbs.py'}:3: pkg.verbs imports pkg.tools.tmux"
        " (domain may not import adapters)"
    )
    assert violation.found.in_function and not violation.found.type_checking


def test_a_type_checking_import_counts_for_the_rooms_but_not_for_cycles(tmp_path: Path) -> None:
    package = make_package(
        tmp_path,
        {
            "base.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg import verbs\n",
            "verbs.py": "from pkg.base import thing\n",
        },
    )
    imports = read_imports(package)
    [violation] = room_violations(imports, read_rooms(ROOMS), package)
    found = violation.found
    assert (found.importer, found.imported, found.type_checking) == (
        "pkg.base",
        "pkg.verbs",
        True,
    )
    assert import_cycles(imports) == []


@pytest.mark.parametrize("where", ["module level", "function level"])
def test_two_modules_importing_each_other_are_a_cycle(tmp_path: Path, where: str) -> None:
    back = "import pkg.verbs\n" if where == "module level" else "def f():\n    import pkg.verbs\n"
    package = make_package(tmp_path, {"base.py": back, "verbs.py": "from . import base\n"})
    assert import_cycles(read_imports(package)) == [["pkg.base", "pkg.verbs"]]


def test_a_module_in_no_room_is_found(tmp_path: Path) -> None:
    package = make_package(tmp_path, {"base.py": "", "stray.py": ""})
    modules = package_modules(package)
    unplaced = [m for m in modules if not room_of(relative_path(m, modules), read_rooms(ROOMS))]
    assert unplaced == ["pkg.stray"]


LAYERED_ROOMS = """\
## Rooms and imports

| room | layer | modules | may import |
|---|---|---|---|
| core | 0 | `__init__.py`, `base.py` | core |
| domain | 1 | `verbs.py` | core, domain |
| adapters | 2 | `tools/` | core, adapters |
"""


def test_a_layer_column_is_read_when_the_table_has_one() -> None:
    layered, plain = read_rooms(LAYERED_ROOMS), read_rooms(ROOMS)
    assert [(room.name, room.layer) for room in layered] == [
        ("core", 0),
        ("domain", 1),
        ("adapters", 2),
    ]
    assert [(r.entries, r.may_import) for r in layered] == [
        (r.entries, r.may_import) for r in plain
    ]


def test_the_intake_reads_top_down_no_helper_names_intake_py() -> None:
    """Issue 27: ``intake.py`` calls its helpers; they see the intake and a round through
    ``context.py``'s views, never by importing ``intake.py`` (not even for a type)."""
    room = PACKAGE / "intake"
    naming = sorted(
        path.name
        for path in room.glob("*.py")
        if path.name not in ("intake.py", "__init__.py")
        and "the_loop.intake.intake" in path.read_text(encoding="utf-8")
    )
    assert naming == []
