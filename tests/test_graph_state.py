"""The repository file ``docs/specs/<id>/work-item-state.json`` (state.md §7)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from the_loop.errors import TheLoopError
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import (
    LEGACY_STATE_FILE,
    SESSION_PER_PR,
    STATE_FILE,
    STATE_KEYS,
    FrozenChoices,
    LinkedPullRequest,
    WorkItemState,
    WorkItemStateFile,
    graph_section_choices,
    resolve_frozen_choices,
    validate_repository,
)

ITEM = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")


def state_file(tmp_path: Path) -> WorkItemStateFile:
    return WorkItemStateFile(tmp_path / "checkout", ITEM)


def write_raw(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def read_raw(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_file_lives_in_docs_specs_under_the_slug_unless_an_id_is_given(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    assert WorkItemStateFile(checkout, ITEM).path == (
        checkout / "docs/specs/github-octo-app-15/work-item-state.json"
    )
    named = WorkItemStateFile(checkout, ITEM, spec_id="attribute-rule")
    assert named.path == checkout / "docs/specs/attribute-rule" / STATE_FILE
    assert named.legacy_path == checkout / "docs/specs/attribute-rule" / LEGACY_STATE_FILE


@pytest.mark.parametrize("spec_id", ["", ".", "..", "../escape", "a/b", "has space"])
def test_a_spec_id_that_is_not_one_path_component_is_refused(tmp_path: Path, spec_id: str) -> None:
    with pytest.raises(ValueError, match="spec id"):
        WorkItemStateFile(tmp_path, ITEM, spec_id=spec_id)


def test_a_missing_file_loads_as_a_fresh_state_for_the_work_item(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    state = store.load()
    assert not store.exists()
    assert state == WorkItemState(work_item="github:octo/app#15")
    assert state.version == 2
    assert store.frozen_choices() is None


def test_a_saved_state_loads_back_equal_with_every_key_in_order(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    state = WorkItemState(
        work_item=ITEM.ref,
        current_node="design",
        nodes={"requirements": {"status": "done"}, "design": {"status": "active"}},
        decisions={"requirements": {"approvedBy": "octocat"}},
        forced=["tasks"],
        completions={"requirements": "2026-11-29T10:00:00Z"},
        skips=["benchmarks"],
        opt_ins=["security-review"],
        surface="cli",
        session_per_pr="cross-repository",
        model="opus",
        effort="high",
        pull_requests=[LinkedPullRequest.from_dict({"ref": PR.ref, "state": "merged"})],
    )
    store.save(state)
    assert store.load() == state
    assert tuple(read_raw(store.path)) == STATE_KEYS
    assert read_raw(store.path)["pullRequests"] == [
        {
            "ref": "github:octo/lib#7",
            "repository": "octo/lib",
            "number": 7,
            "url": "https://github.com/octo/lib/issues/7",
            "stateDir": "",
            "state": "merged",
            "linkedAt": "",
            "linkedBy": "session",
        }
    ]


def test_the_legacy_file_is_read_when_the_current_file_is_absent(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    write_raw(store.legacy_path, {"version": 1, "workItem": ITEM.ref, "currentNode": "tasks"})
    assert store.exists()
    state = store.load()
    assert state.current_node == "tasks"
    assert state.version == 2


def test_a_save_after_a_legacy_read_writes_the_current_name_and_leaves_the_legacy_file(
    tmp_path: Path,
) -> None:
    store = state_file(tmp_path)
    write_raw(store.legacy_path, {"version": 1, "workItem": ITEM.ref, "skips": ["design"]})
    legacy_bytes = store.legacy_path.read_bytes()
    store.update(lambda state: setattr(state, "model", "opus"))
    assert store.legacy_path.read_bytes() == legacy_bytes
    written = read_raw(store.path)
    assert (written["version"], written["skips"], written["model"]) == (2, ["design"], "opus")
    assert sorted(p.name for p in store.directory.iterdir() if not p.name.startswith(".")) == [
        LEGACY_STATE_FILE,
        STATE_FILE,
    ]


def test_the_current_file_wins_over_the_legacy_file(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    write_raw(store.legacy_path, {"workItem": ITEM.ref, "currentNode": "old"})
    write_raw(store.path, {"version": 2, "workItem": ITEM.ref, "currentNode": "new"})
    assert store.load().current_node == "new"


def test_a_legacy_session_block_is_ignored_on_load_and_absent_on_the_next_save(
    tmp_path: Path,
) -> None:
    store = state_file(tmp_path)
    session = {"harness": "claude", "harnessSessionId": "abc", "tmuxTarget": "loop-x"}
    write_raw(store.legacy_path, {"version": 1, "workItem": ITEM.ref, "session": session})
    state = store.load()
    assert "session" not in state.extra
    store.save(state)
    assert "session" not in read_raw(store.path)


def test_keys_from_a_newer_release_are_kept_on_save(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    pr_entry = {"ref": PR.ref, "repository": "octo/lib", "number": 7, "title": "Fix it"}
    future = {
        "version": 3,
        "workItem": ITEM.ref,
        "budget": {"tokens": 9},
        "pullRequests": [pr_entry],
    }
    write_raw(store.path, future)
    store.link_pr(WorkItemRef.parse("github:octo/lib#8"), now=0)
    written = read_raw(store.path)
    assert written["budget"] == {"tokens": 9}
    assert written["version"] == 3
    assert written["pullRequests"][0]["title"] == "Fix it"
    assert [entry["number"] for entry in written["pullRequests"]] == [7, 8]


def test_linking_a_pull_request_records_where_it_lives_and_when(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    enterprise = WorkItemRef.parse("github:ghe.corp.example/octo/lib#3")
    assert store.link_pr(PR, state_dir=".the-loop", now=0) is True
    assert store.link_pr(enterprise, linked_by="event", now=60) is True
    first, second = store.load().pull_requests
    assert (first.repository, first.url, first.state_dir) == ("octo/lib", PR.url, ".the-loop")
    assert (first.state, first.linked_at, first.linked_by) == (
        "open",
        "1970-01-01T00:00:00Z",
        "session",
    )
    assert second.repository == "ghe.corp.example/octo/lib"
    assert second.url == "https://ghe.corp.example/octo/lib/issues/3"
    assert (second.linked_at, second.linked_by) == ("1970-01-01T00:01:00Z", "event")


def test_linking_the_same_pull_request_again_changes_nothing(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    assert store.link_pr(PR, now=0) is True
    before = store.path.read_bytes()
    assert store.link_pr(PR, state_dir="elsewhere", linked_by="event", now=99) is False
    assert store.link_pr(WorkItemRef.parse("github:github.com/octo/lib#7")) is False
    assert store.path.read_bytes() == before


def test_a_bad_linked_by_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    with pytest.raises(ValueError, match="linkedBy"):
        store.link_pr(PR, linked_by="robot")
    assert not store.path.exists()


def test_set_pr_state_changes_that_entry_only(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    other = WorkItemRef.parse("github:octo/lib#8")
    store.link_pr(PR, now=0)
    store.link_pr(other, now=0)
    assert store.set_pr_state("github:octo/lib#7", "merged") is True
    assert [entry.state for entry in store.load().pull_requests] == ["merged", "open"]
    before = store.path.read_bytes()
    assert store.set_pr_state(PR, "merged") is False
    assert store.path.read_bytes() == before


def test_set_pr_state_of_a_pull_request_that_is_not_linked_writes_nothing(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    assert store.set_pr_state(PR, "closed") is False
    assert not store.path.exists()


def test_set_pr_state_refuses_a_state_outside_open_merged_closed(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    store.link_pr(PR, now=0)
    before = store.path.read_bytes()
    with pytest.raises(ValueError, match="pull request state 'reopened'"):
        store.set_pr_state(PR, "reopened")
    assert store.path.read_bytes() == before


def test_a_bad_session_per_pr_is_refused_in_memory_and_on_save(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    with pytest.raises(ValueError, match="sessionPerPr"):
        WorkItemState(work_item=ITEM.ref, session_per_pr="sometimes")
    state = store.load()
    state.session_per_pr = "sometimes"
    with pytest.raises(ValueError, match="sessionPerPr"):
        store.save(state)
    assert not store.path.exists()


@pytest.mark.parametrize("value", SESSION_PER_PR)
def test_every_documented_session_per_pr_is_accepted(tmp_path: Path, value: str) -> None:
    store = state_file(tmp_path)
    store.update(lambda state: setattr(state, "session_per_pr", value))
    assert store.frozen_choices() == FrozenChoices(session_per_pr=value)


@pytest.mark.parametrize(
    "repository",
    [
        "octo",
        "octo/..",
        "./repo",
        "-octo/repo",
        "octo/re po",
        "a/b/c/d",
        "octo/repo#1",
        "/repo",
        "",
    ],
)
def test_a_bad_repository_is_refused(repository: str) -> None:
    with pytest.raises(ValueError, match="invalid repository"):
        validate_repository(repository)
    with pytest.raises(ValueError, match="invalid repository"):
        LinkedPullRequest.from_dict({"ref": PR.ref, "repository": repository})


@pytest.mark.parametrize("repository", ["octo/repo", "ghe.corp.example/octo/repo", "ghe:8443/o/r"])
def test_a_good_repository_is_accepted_unchanged(repository: str) -> None:
    assert validate_repository(repository) == repository


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"ref": PR.ref, "state": "reopened"}, "pull request state"),
        ({"ref": PR.ref, "linkedBy": "robot"}, "linkedBy"),
        ({"ref": PR.ref, "number": 0}, "number"),
        ({"ref": PR.ref, "number": "7"}, "number"),
        ({"ref": PR.ref, "url": 7}, "url"),
        ({"ref": "gh:octo/lib#7"}, "invalid work item"),
        ({}, "invalid work item"),
    ],
)
def test_a_bad_pull_request_entry_is_refused(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        LinkedPullRequest.from_dict(entry)


def test_a_pull_request_entry_missing_keys_takes_defaults_from_its_ref() -> None:
    entry = LinkedPullRequest.from_dict({"ref": "github:github.com/octo/lib#7"})
    assert entry == LinkedPullRequest(
        ref="github:octo/lib#7",
        repository="octo/lib",
        number=7,
        url="https://github.com/octo/lib/issues/7",
    )
    assert LinkedPullRequest.from_dict(entry.to_dict()) == entry


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"pullRequests": {"a": 1}}', "pullRequests"),
        ('{"version": "two"}', "version"),
        ("[" * 100_000, "nested too deep"),
    ],
)
def test_a_corrupt_file_raises_a_sentence_naming_the_file(
    tmp_path: Path, text: str, reason: str
) -> None:
    store = state_file(tmp_path)
    store.legacy_path.parent.mkdir(parents=True)
    store.legacy_path.write_text(text, encoding="utf-8")
    with pytest.raises(TheLoopError, match=reason) as caught:
        store.load()
    assert str(store.legacy_path) in str(caught.value)


def test_update_accepts_a_replacement_state_and_returns_what_it_wrote(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    replacement = WorkItemState(work_item=ITEM.ref, current_node="tasks", effort="low")
    assert store.update(lambda _state: replacement) == replacement
    assert store.load() == replacement


def test_frozen_choices_are_reported_when_any_is_set(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    store.update(lambda state: setattr(state, "effort", "high"))
    assert store.frozen_choices() == FrozenChoices(effort="high")


def _link_many(checkout: str, worker: int, count: int, go: Any) -> None:
    go.wait()
    store = WorkItemStateFile(Path(checkout), ITEM)
    for index in range(count):
        store.link_pr(WorkItemRef.parse(f"github:octo/lib#{worker * 1000 + index + 1}"))


@pytest.mark.slow
def test_concurrent_links_from_several_processes_lose_none(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    checkout = str(tmp_path / "checkout")
    workers = [
        context.Process(target=_link_many, args=(checkout, worker, 25, go)) for worker in range(4)
    ]
    for process in workers:
        process.start()
    go.set()
    for process in workers:
        process.join()
    assert [process.exitcode for process in workers] == [0, 0, 0, 0]
    numbers = sorted(entry.number for entry in state_file(tmp_path).load().pull_requests)
    assert numbers == sorted(w * 1000 + i + 1 for w in range(4) for i in range(25))


DEFAULTS = FrozenChoices(session_per_pr="never", model="haiku", effort="low")


def test_each_frozen_choice_comes_from_the_file_then_the_graph_section_then_the_defaults() -> None:
    from_file = FrozenChoices(model="opus")
    graph = {"sessionPerPr": "always", "model": "sonnet"}
    assert resolve_frozen_choices(from_file, graph, DEFAULTS) == FrozenChoices(
        session_per_pr="always", model="opus", effort="low"
    )


def test_the_file_wins_every_field_it_sets() -> None:
    from_file = FrozenChoices(session_per_pr="cross-repository", model="opus", effort="high")
    graph = {"sessionPerPr": "always", "model": "sonnet", "effort": "medium"}
    assert resolve_frozen_choices(from_file, graph, DEFAULTS) == from_file


def test_with_neither_file_nor_graph_section_the_defaults_decide() -> None:
    assert resolve_frozen_choices(None, None, DEFAULTS) == DEFAULTS
    assert resolve_frozen_choices(FrozenChoices(), {}, DEFAULTS) == DEFAULTS


def test_a_graph_section_nested_under_frozen_graph_is_read() -> None:
    graph = {"frozenGraph": {"sessionPerPr": "always", "effort": "medium"}}
    assert resolve_frozen_choices(None, graph, DEFAULTS) == FrozenChoices(
        session_per_pr="always", model="haiku", effort="medium"
    )


def test_unusable_graph_section_values_count_as_not_decided() -> None:
    graph = {"sessionPerPr": "sometimes", "model": 5, "effort": None}
    assert graph_section_choices(graph) == FrozenChoices()
    assert resolve_frozen_choices(None, graph, DEFAULTS) == DEFAULTS


def test_a_frozen_choice_outside_the_documented_values_is_refused() -> None:
    with pytest.raises(ValueError, match="sessionPerPr"):
        FrozenChoices(session_per_pr="sometimes")


# -- one bad entry never rejects the whole file (issue 11, point 10) ---------------------


def test_an_unusable_pull_request_entry_is_skipped_with_a_warning_and_the_rest_honoured(
    tmp_path: Path,
) -> None:
    warnings: list[str] = []
    store = WorkItemStateFile(tmp_path / "checkout", ITEM, on_warning=warnings.append)
    bad = {"ref": PR.ref, "repository": "../etc"}
    good = {"ref": "github:octo/lib#8"}
    write_raw(store.path, {"sessionPerPr": "always", "pullRequests": [bad, good, "junk"]})
    state = store.load()
    assert [entry.ref for entry in state.pull_requests] == ["github:octo/lib#8"]
    assert store.frozen_choices() == FrozenChoices(session_per_pr="always")
    assert len(warnings) == 4  # two skipped entries, on each of two loads
    assert all(str(store.path) in warning for warning in warnings)
    assert "pullRequests[0]" in warnings[0] and "invalid repository" in warnings[0]
    assert "pullRequests[2]" in warnings[1]


def test_a_skipped_entry_is_written_back_unchanged_where_it_was(tmp_path: Path) -> None:
    store = state_file(tmp_path)
    bad = {"ref": PR.ref, "repository": "../etc", "note": "kept"}
    write_raw(store.path, {"pullRequests": ["junk", {"ref": "github:octo/lib#8"}, bad]})
    assert store.link_pr(WorkItemRef.parse("github:octo/lib#9"))
    written = read_raw(store.path)["pullRequests"]
    assert written[0] == "junk" and written[2] == bad
    assert [entry["ref"] for entry in written[1::2]] == ["github:octo/lib#8", "github:octo/lib#9"]


@pytest.mark.parametrize(("key", "value"), [("sessionPerPr", "sometimes"), ("model", 5)])
def test_an_unusable_frozen_choice_counts_as_not_decided_and_is_kept(
    tmp_path: Path, key: str, value: object
) -> None:
    warnings: list[str] = []
    store = WorkItemStateFile(tmp_path / "checkout", ITEM, on_warning=warnings.append)
    write_raw(store.path, {key: value, "effort": "high", "pullRequests": []})
    assert store.frozen_choices() == FrozenChoices(effort="high")
    assert len(warnings) == 1 and key in warnings[0]
    store.link_pr(PR)
    assert read_raw(store.path)[key] == value


@pytest.mark.parametrize(
    "entry",
    [
        {"ref": PR.ref, "repository": "x" * 100_000},
        {"ref": "github:octo/" + "x" * 100_000 + "#7"},
        {"ref": "github:octo/lib#" + "9" * 100_000},
        {"ref": PR.ref, "number": ["n"] * 100_000},
    ],
)
def test_a_hostile_entry_is_quoted_in_a_bounded_warning(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    warnings: list[str] = []
    store = WorkItemStateFile(tmp_path / "checkout", ITEM, on_warning=warnings.append)
    write_raw(store.path, {"pullRequests": [entry]})
    store.load()
    assert len(warnings) == 1 and len(warnings[0]) < len(str(store.path)) + 600


# -- where upstream puts the file (issue 11, point 12) ------------------------------------


def upstream_path(tmp_path: Path, name: str = STATE_FILE) -> Path:
    return tmp_path / "checkout" / "docs" / "specs" / f"issue-{ITEM.number}" / name


def test_upstreams_location_is_read_and_written_when_the_file_is_there(tmp_path: Path) -> None:
    upstream = upstream_path(tmp_path)
    write_raw(upstream, {"version": 2, "workItem": ITEM.ref, "sessionPerPr": "always"})
    store = state_file(tmp_path)
    assert store.path == upstream
    assert store.frozen_choices() == FrozenChoices(session_per_pr="always")
    assert store.link_pr(PR)
    assert [entry["ref"] for entry in read_raw(upstream)["pullRequests"]] == [PR.ref]
    assert not (tmp_path / "checkout" / "docs" / "specs" / ITEM.slug).exists()


def test_upstreams_location_wins_over_ours_when_both_are_there(tmp_path: Path) -> None:
    write_raw(upstream_path(tmp_path), {"model": "upstream"})
    ours = tmp_path / "checkout" / "docs" / "specs" / ITEM.slug / STATE_FILE
    write_raw(ours, {"model": "ours"})
    assert state_file(tmp_path).frozen_choices() == FrozenChoices(model="upstream")


def test_ours_is_the_fallback_and_the_place_a_new_file_is_written(tmp_path: Path) -> None:
    ours = tmp_path / "checkout" / "docs" / "specs" / ITEM.slug / STATE_FILE
    assert state_file(tmp_path).path == ours
    write_raw(ours, {"model": "ours"})
    assert state_file(tmp_path).frozen_choices() == FrozenChoices(model="ours")


def test_upstreams_file_of_another_work_item_is_left_alone(tmp_path: Path) -> None:
    other = {"workItem": "github:octo/lib#15", "model": "theirs"}
    write_raw(upstream_path(tmp_path), other)
    store = state_file(tmp_path)
    assert store.path == tmp_path / "checkout" / "docs" / "specs" / ITEM.slug / STATE_FILE
    assert store.frozen_choices() is None
    store.update(lambda state: setattr(state, "model", "ours"))
    assert read_raw(upstream_path(tmp_path)) == other


def test_upstreams_legacy_name_is_read_too(tmp_path: Path) -> None:
    write_raw(upstream_path(tmp_path, LEGACY_STATE_FILE), {"effort": "low"})
    assert state_file(tmp_path).frozen_choices() == FrozenChoices(effort="low")
