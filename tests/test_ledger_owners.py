"""Which ledger a pull request's comments use is found from one read of the store's
pull requests per poll state (the index, when it lists the records), never from a scan
of every record per comment: a busy cycle costs what changed, not the store's size."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop.portable.poll import PollState
from the_loop.portable.store import WorkItemStore

OWNER, PR = "github:octo/app#15", "github:octo/app#99"


def store_with(tmp_path: Path, items: int) -> WorkItemStore:
    store = WorkItemStore(tmp_path / "portable", locks_dir=tmp_path / "locks")
    for number in range(1, items + 1):
        store.write_section(f"github:octo/app#{number}", "control", {"command": "start"})
    store.write_pull_request_ledger(OWNER, PR, {"seenComments": ["7"]})
    return store


def test_a_pull_requests_ledger_is_found_with_its_owner(tmp_path: Path) -> None:
    state = PollState(store_with(tmp_path, 20))
    assert state.seen_comments(PR) == ["7"]
    state.resolve_comment(PR, "8")
    assert state.seen_comments(PR) == ["7", "8"]
    assert state.store.pull_request_ledger(OWNER, PR) is not None


def test_the_index_and_the_records_say_the_same_owners(tmp_path: Path) -> None:
    store = store_with(tmp_path, 5)
    assert store.index_trusted()
    from_index = store.pull_request_owners()
    (store.locks_dir / "index.stamp").unlink()  # the index no longer trusted: every record
    assert not store.index_trusted()
    assert store.pull_request_owners() == from_index == {PR: OWNER}


def test_many_comments_read_the_owners_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_with(tmp_path, 50)
    asked: list[int] = []
    real = store.pull_request_owners

    def counted() -> dict[str, str]:
        asked.append(1)
        return real()

    monkeypatch.setattr(store, "pull_request_owners", counted)
    scans: list[int] = []
    monkeypatch.setattr(store, "owner_of", lambda _ref: scans.append(1))  # the old way
    state = PollState(store)
    for number in range(1, 51):
        state.resolve_comment(f"github:octo/app#{number}", "1")
    state.resolve_comment(PR, "9")
    assert (len(asked), scans) == (1, [])
    assert "9" in state.seen_comments(PR)


def test_a_pull_request_two_items_hold_has_the_same_owner_either_way(tmp_path: Path) -> None:
    store = store_with(tmp_path, 3)
    store.write_pull_request_ledger("github:octo/app#20", PR, {"seenComments": []})
    assert store.index_trusted()
    from_index = store.pull_request_owners()
    (store.locks_dir / "index.stamp").unlink()
    assert store.pull_request_owners() == from_index == {PR: OWNER}  # the first, by ref
    assert store.owner_of(PR) == OWNER
