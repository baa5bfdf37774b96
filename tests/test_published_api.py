"""The published module API (spec api.md) imports from its old homes and its new ones."""

from __future__ import annotations

import importlib

import pytest

#: (old home, new home, names): every published name must be the same object in both.
MOVES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "the_loop.sessions",
        "the_loop.ref",
        ("WorkItemRef",),
    ),
    (
        "the_loop.sessions",
        "the_loop.sessions.registry",
        ("RegistryError", "SessionRegistry"),
    ),
    ("the_loop.sessions", "the_loop.sessions.session", ("Session",)),
    ("the_loop.workitem", "the_loop.ref", ("WorkItemRef",)),
    ("the_loop.workitem", "the_loop.portable.store", ("WorkItemStore",)),
    (
        "the_loop.workitem",
        "the_loop.portable.format",
        (
            "CONTROL",
            "POLL",
            "GRAPH",
            "CHANNELS",
            "PULL_REQUESTS",
            "SECTIONS",
            "INDEX_FILE",
            "SEALED",
        ),
    ),
    (
        "the_loop.control",
        "the_loop.portable.control",
        (
            "START",
            "STOP",
            "PAUSE",
            "RESUME",
            "EXECUTE",
            "CONTRIBUTE",
            "CLEANUP",
            "DO",
            "COMMANDS",
            "ControlRecord",
            "ControlStore",
        ),
    ),
    ("the_loop.poller", "the_loop.portable.poll", ("PollState", "OwnerLookup")),
    (
        "the_loop.state",
        "the_loop.layout",
        (
            "DEFAULT_STATE_ROOT",
            "StateLayout",
            "LegacyLayout",
            "legacy_layout",
            "layout_from_config",
            "GeneratedPath",
            "GENERATED_PATHS",
        ),
    ),
    (
        "the_loop.state",
        "the_loop.attributes",
        ("Attribute", "ATTRIBUTE_KINDS", "ATTRIBUTES", "ATTRIBUTE_FILES"),
    ),
)


@pytest.mark.parametrize(("old", "new", "names"), MOVES, ids=[f"{o}->{n}" for o, n, _ in MOVES])
def test_every_published_name_is_the_same_object_in_its_old_and_new_home(
    old: str, new: str, names: tuple[str, ...]
) -> None:
    old_module = importlib.import_module(old)
    new_module = importlib.import_module(new)
    for name in names:
        assert getattr(old_module, name) is getattr(new_module, name), name


@pytest.mark.parametrize(
    "module", ["the_loop.state", "the_loop.workitem", "the_loop.control", "the_loop.poller"]
)
def test_each_old_home_says_in_one_line_where_the_code_now_lives(module: str) -> None:
    doc = importlib.import_module(module).__doc__ or ""
    assert doc.startswith("Moved: ")
    assert "\n" not in doc.strip()


#: The published module paths of spec api.md that are homes, not shims: each keeps its
#: names wherever the rooms moved the code behind it (issue 17).
PUBLISHED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the_loop.eventlog", ("EVENT_TYPES", "EventLog", "read_events")),
    (
        "the_loop.reset",
        (
            "WORKSPACE",
            "SESSION",
            "PIECES",
            "ResetOutcome",
            "reset_work_item",
            "work_items_with_state",
        ),
    ),
    ("the_loop.cleanup", ("cleanup_work_item",)),
    ("the_loop.sessions", ("WorkItemRef", "Session", "RegistryError", "SessionRegistry")),
)


@pytest.mark.parametrize(("module", "names"), PUBLISHED, ids=[m for m, _ in PUBLISHED])
def test_every_published_module_path_still_holds_its_names(
    module: str, names: tuple[str, ...]
) -> None:
    found = importlib.import_module(module)
    assert [name for name in names if not hasattr(found, name)] == []


def test_the_event_log_re_exports_its_writer_as_the_same_objects() -> None:
    published = importlib.import_module("the_loop.eventlog")
    writer = importlib.import_module("the_loop.eventlog.log")
    for name in ("EVENT_TYPES", "EventLog", "read_events", "or_no_events", "utc_timestamp"):
        assert getattr(published, name) is getattr(writer, name), name
