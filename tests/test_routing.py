"""Routing a ref to its owner and to the session endpoint that handles it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from the_loop.intake.routing import (
    OWNER_FROM_PORTABLE,
    OWNER_FROM_REGISTRY,
    OWNER_IS_ITSELF,
    POLICY_FROM_DEFAULT,
    POLICY_FROM_GRAPH_SECTION,
    POLICY_FROM_REPOSITORY_FILE,
    Router,
    same_repository,
)
from the_loop.portable.store import WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemState, WorkItemStateFile
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import CLOSED, Session

ITEM = WorkItemRef.parse("github:octo/app#15")
SAME_REPO_PR = WorkItemRef.parse("github:octo/app#16")
OTHER_REPO_PR = WorkItemRef.parse("github:octo/lib#7")


@pytest.fixture
def registry(tmp_path: Path) -> SessionRegistry:
    return SessionRegistry(tmp_path / "local")


@pytest.fixture
def store(tmp_path: Path) -> WorkItemStore:
    return WorkItemStore(tmp_path / "portable")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    path = tmp_path / "checkout"
    path.mkdir()
    return path


def router(registry: SessionRegistry, store: WorkItemStore, default: str = "never") -> Router:
    return Router(registry=registry, store=store, default_session_per_pr=default)


def start_item(registry: SessionRegistry, checkout: Path) -> Session:
    session = Session(ITEM, "claude", "item-session", cwd=str(checkout), tmux_target="loop-item")
    return registry.register(session)


def give_pr_its_own_session(
    registry: SessionRegistry, pr: WorkItemRef, status: str = "active"
) -> None:
    registry.link_pull_request(ITEM, pr)
    endpoint = Session(
        pr, "claude", f"pr-{pr.number}", status=status, tmux_target=f"loop-pr-{pr.number}"
    )
    registry.save_endpoint(ITEM, endpoint)


def freeze_policy(checkout: Path, policy: str) -> None:
    WorkItemStateFile(checkout, ITEM).save(WorkItemState(work_item=ITEM.ref, session_per_pr=policy))


def write_graph_section(store: WorkItemStore, ref: WorkItemRef, section: object) -> None:
    """An older release's record: the store itself never writes ``graph``."""
    path = store.path_for(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ref": ref.ref, "graph": section}), encoding="utf-8")


def test_a_pull_request_in_a_session_record_is_owned_through_the_registry(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    registry.link_pull_request(ITEM, OTHER_REPO_PR)
    assert router(registry, store).owner_of(OTHER_REPO_PR) == (ITEM, OWNER_FROM_REGISTRY)


def test_a_pull_request_in_a_portable_ledger_map_is_owned_without_any_session_record(
    registry: SessionRegistry, store: WorkItemStore
) -> None:
    store.write_pull_request_ledger(ITEM, OTHER_REPO_PR, {"seenComments": []})
    route = router(registry, store).route(OTHER_REPO_PR)
    assert (route.owner, route.owner_source) == (ITEM, OWNER_FROM_PORTABLE)
    assert route.endpoint is None
    assert route.is_pull_request


def test_a_ref_nobody_owns_is_its_own_work_item(
    registry: SessionRegistry, store: WorkItemStore
) -> None:
    route = router(registry, store).route(ITEM)
    assert (route.owner, route.owner_source, route.endpoint) == (ITEM, OWNER_IS_ITSELF, None)
    assert not route.is_pull_request


def test_the_policy_comes_from_the_repository_file_in_the_owners_checkout_first(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "always")
    write_graph_section(store, ITEM, {"sessionPerPr": "never"})
    assert router(registry, store, "cross-repository").policy_for(ITEM) == (
        "always",
        POLICY_FROM_REPOSITORY_FILE,
    )


def test_the_retired_graph_section_decides_when_the_repository_file_does_not(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    write_graph_section(store, ITEM, {"frozenGraph": {"sessionPerPr": "cross-repository"}})
    assert router(registry, store).policy_for(ITEM) == (
        "cross-repository",
        POLICY_FROM_GRAPH_SECTION,
    )


def test_the_default_given_decides_when_nothing_was_frozen(
    registry: SessionRegistry, store: WorkItemStore
) -> None:
    assert router(registry, store, "always").policy_for(ITEM) == ("always", POLICY_FROM_DEFAULT)


def test_an_unknown_default_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="sessionPerPr"):
        Router(
            registry=SessionRegistry(Path("/nonexistent/local")),
            store=WorkItemStore(Path("/nonexistent/portable")),
            default_session_per_pr="sometimes",
        )


def test_an_unreadable_repository_file_is_warned_about_and_skipped(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    state_file = WorkItemStateFile(checkout, ITEM)
    state_file.directory.mkdir(parents=True)
    state_file.path.write_text("{not json", encoding="utf-8")
    warnings: list[str] = []
    routing = Router(registry=registry, store=store, on_warning=warnings.append)
    assert routing.policy_for(ITEM) == ("never", POLICY_FROM_DEFAULT)
    assert len(warnings) == 1 and "state file" in warnings[0]


def test_never_sends_a_pull_request_to_its_owner_even_when_it_has_a_live_session(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "never")
    give_pr_its_own_session(registry, OTHER_REPO_PR)
    route = router(registry, store).route(OTHER_REPO_PR)
    assert route.endpoint is not None and route.endpoint.work_item == ITEM
    assert not route.own_endpoint


def test_always_sends_a_pull_request_to_its_own_live_session(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "always")
    give_pr_its_own_session(registry, SAME_REPO_PR)
    route = router(registry, store).route(SAME_REPO_PR)
    assert route.own_endpoint
    assert route.to_dict()["tmuxTarget"] == "loop-pr-16"


def test_always_falls_back_to_the_owner_when_the_pull_requests_session_is_closed(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "always")
    give_pr_its_own_session(registry, SAME_REPO_PR, status=CLOSED)
    route = router(registry, store).route(SAME_REPO_PR)
    assert route.endpoint is not None and route.endpoint.work_item == ITEM


def test_always_falls_back_to_the_owner_when_the_pull_request_has_no_handles(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "always")
    registry.link_pull_request(ITEM, SAME_REPO_PR)
    route = router(registry, store).route(SAME_REPO_PR)
    assert route.endpoint is not None and route.endpoint.work_item == ITEM


def test_cross_repository_gives_only_a_pull_request_in_another_repository_its_own_session(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "cross-repository")
    give_pr_its_own_session(registry, SAME_REPO_PR)
    give_pr_its_own_session(registry, OTHER_REPO_PR)
    routing = router(registry, store)
    assert routing.route(OTHER_REPO_PR).own_endpoint
    same = routing.route(SAME_REPO_PR)
    assert same.endpoint is not None and same.endpoint.work_item == ITEM


def test_a_pull_request_owned_only_through_the_portable_map_reaches_the_owners_session(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path
) -> None:
    store.write_pull_request_ledger(ITEM, OTHER_REPO_PR, {"seenComments": []})
    start_item(registry, checkout)
    route = router(registry, store).route(OTHER_REPO_PR)
    assert route.owner_source == OWNER_FROM_PORTABLE
    assert route.endpoint is not None and route.endpoint.work_item == ITEM


def test_routing_writes_nothing(
    registry: SessionRegistry, store: WorkItemStore, checkout: Path, tmp_path: Path
) -> None:
    start_item(registry, checkout)
    freeze_policy(checkout, "cross-repository")
    store.write_pull_request_ledger(ITEM, OTHER_REPO_PR, {"seenComments": []})

    def snapshot() -> dict[str, tuple[int, bytes]]:
        return {
            str(path): (path.stat().st_mtime_ns, path.read_bytes())
            for path in sorted(tmp_path.rglob("*"))
            if path.is_file()
        }

    before = snapshot()
    routing = router(registry, store)
    for ref in (ITEM, SAME_REPO_PR, OTHER_REPO_PR, WorkItemRef.parse("github:octo/x#1")):
        routing.route(ref).to_dict()
    assert snapshot() == before


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("github:octo/app#1", "github:Octo/App#2", True),
        ("github:octo/app#1", "github:github.com/octo/app#2", True),
        ("github:octo/app#1", "github:ghe.corp.example/octo/app#2", False),
        ("github:octo/app#1", "github:octo/lib#2", False),
    ],
)
def test_same_repository_compares_provider_host_and_names(one: str, other: str, same: bool) -> None:
    assert same_repository(WorkItemRef.parse(one), WorkItemRef.parse(other)) is same
