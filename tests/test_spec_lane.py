"""The spec lane's transitions (the_loop/spec/lane.py): pure functions over the repository
file's values, each returning a new state or refusing with the sentence that says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemState, WorkItemStateFile
from the_loop.spec import lane
from the_loop.spec.lane import LaneError, read_lane

ITEM = WorkItemRef.parse("github:octo/app#15")
T0, T1, T2, T3 = (f"2026-03-0{day}T10:00:00Z" for day in range(1, 5))
LINK = "https://github.com/octo/app/issues/15#issuecomment-1"


def fresh() -> WorkItemState:
    return WorkItemState(work_item=ITEM.ref)


def started() -> WorkItemState:
    return lane.start(fresh(), at=T0)


def statuses(state: WorkItemState) -> dict[str, str]:
    return {node.node: node.status for node in read_lane(state).nodes}


def at_design() -> WorkItemState:
    """Requirements done and approved: design active."""
    waiting = lane.done(started(), "requirements", at=T1)
    return lane.approve(waiting, "requirements", by="octocat", at=T2, link=LINK)


def test_start_makes_requirements_active_and_every_other_phase_pending() -> None:
    state = started()
    assert state.current_node == "requirements"
    assert state.nodes == {
        "requirements": {"status": "active", "by": None, "at": T0, "link": None},
        "design": {"status": "pending", "by": None, "at": None, "link": None},
        "tasks": {"status": "pending", "by": None, "at": None, "link": None},
        "implementation": {"status": "pending", "by": None, "at": None, "link": None},
    }


def test_a_transition_never_changes_the_state_it_was_given() -> None:
    before = started()
    snapshot = before.to_dict()
    lane.done(before, "requirements", at=T1)
    assert before.to_dict() == snapshot


def test_start_is_refused_once_the_lane_has_started() -> None:
    with pytest.raises(LaneError, match="already started: it is at requirements \\(active\\)"):
        lane.start(started(), at=T1)


def test_done_on_a_gated_phase_opens_its_gate_and_keeps_the_pointer() -> None:
    state = lane.done(started(), "requirements", at=T1)
    assert state.current_node == "requirements"
    node = read_lane(state).node("requirements")
    assert (node.status, node.by, node.at, node.link) == ("waiting", "agent", T1, None)
    assert read_lane(state).waiting == ("requirements",)


def test_done_on_a_phase_without_a_gate_passes_it_and_starts_the_next() -> None:
    tasks = lane.done(
        lane.approve(
            lane.done(at_design(), "design", at=T2), "design", by="hubot", at=T3, link=LINK
        ),
        "tasks",
        at=T3,
    )
    assert tasks.current_node == "implementation"
    assert statuses(tasks) == {
        "requirements": "pass",
        "design": "pass",
        "tasks": "pass",
        "implementation": "active",
    }
    assert read_lane(tasks).node("tasks").by == "agent"


def test_done_on_the_last_phase_finishes_the_lane_with_a_string_pointer() -> None:
    state = lane.skip(at_design(), "design", by="octocat", at=T2, link=LINK)
    state = lane.done(lane.done(state, "tasks", at=T3), "implementation", at=T3)
    assert state.current_node == "done"
    assert read_lane(state).finished
    assert lane.next_phase(read_lane(state)) is None


@pytest.mark.parametrize(
    ("phase", "said"),
    [
        ("design", "design is not the current phase: the lane is at requirements (active)"),
        ("tasks", "tasks is not the current phase: the lane is at requirements (active)"),
    ],
)
def test_done_on_a_phase_that_is_not_current_is_refused(phase: str, said: str) -> None:
    with pytest.raises(LaneError) as refused:
        lane.done(started(), phase, at=T1)
    assert str(refused.value) == said
    assert refused.value.exit_code == 2


def test_done_twice_is_refused_while_the_gate_waits() -> None:
    waiting = lane.done(started(), "requirements", at=T1)
    with pytest.raises(LaneError, match="already done: its gate waits for a person"):
        lane.done(waiting, "requirements", at=T2)


def test_done_on_a_phase_that_passed_is_refused() -> None:
    with pytest.raises(LaneError, match="requirements has already passed; the lane is at design"):
        lane.done(at_design(), "requirements", at=T3)


def test_done_before_the_lane_started_is_refused() -> None:
    with pytest.raises(LaneError, match="the spec lane has not started"):
        lane.done(fresh(), "requirements", at=T1)


def test_done_on_a_finished_lane_says_it_is_finished() -> None:
    state = fresh()
    state = lane.start(state, at=T0)
    for phase in lane.PHASES:
        state = lane.skip(state, phase, by="octocat", at=T1, link=LINK)
    assert state.current_node == "done"
    with pytest.raises(LaneError, match="the spec lane is finished"):
        lane.done(state, "implementation", at=T2)


def test_an_unknown_phase_is_refused_naming_the_phases() -> None:
    with pytest.raises(LaneError, match="unknown phase 'review': the phases are requirements"):
        lane.done(started(), "review", at=T1)


def test_approve_passes_a_waiting_gate_records_the_decision_and_starts_the_next() -> None:
    state = at_design()
    assert state.current_node == "design"
    passed = read_lane(state).node("requirements")
    assert (passed.status, passed.by, passed.at, passed.link) == ("pass", "octocat", T2, LINK)
    assert read_lane(state).node("design").status == "active"
    assert state.decisions == {
        "requirements": [
            {"outcome": "approved", "by": "octocat", "at": T2, "link": LINK, "opened": T1}
        ]
    }


@pytest.mark.parametrize(
    ("state", "phase", "why"),
    [
        (started, "requirements", "its gate is not open, the agent has not said it is done"),
        (started, "design", "its gate is not open, it has not been reached"),
        (at_design, "requirements", "its gate is not open, it has already passed (by octocat)"),
        (at_design, "tasks", "it has no gate, it has not been reached"),
    ],
)
def test_approve_on_a_phase_not_waiting_is_refused(state: Any, phase: str, why: str) -> None:
    with pytest.raises(LaneError) as refused:
        lane.approve(state(), phase, by="octocat", at=T3, link=LINK)
    assert str(refused.value) == f"{phase} cannot be approved: {why}"


def test_changes_reopen_the_phase_and_record_what_was_asked() -> None:
    waiting = lane.done(started(), "requirements", at=T1)
    state = lane.changes(waiting, "requirements", by="octocat", at=T2, link=LINK, what="add X")
    assert state.current_node == "requirements"
    node = read_lane(state).node("requirements")
    assert (node.status, node.at) == ("active", T2)
    assert state.decisions == {
        "requirements": [
            {
                "outcome": "changes",
                "by": "octocat",
                "at": T2,
                "link": LINK,
                "opened": T1,
                "what": "add X",
            }
        ]
    }
    again = lane.approve(
        lane.done(state, "requirements", at=T3), "requirements", by="hubot", at=T3, link=LINK
    )
    assert [d["outcome"] for d in again.decisions["requirements"]] == ["changes", "approved"]


def test_changes_on_a_phase_not_waiting_is_refused() -> None:
    with pytest.raises(LaneError, match="requirements cannot be sent back: its gate is not open"):
        lane.changes(started(), "requirements", by="octocat", at=T1, link=LINK, what="x")


def test_skip_of_the_current_phase_records_who_and_moves_on() -> None:
    state = lane.skip(at_design(), "design", by="octocat", at=T3, link=LINK)
    assert state.current_node == "tasks"
    node = read_lane(state).node("design")
    assert (node.status, node.by, node.at, node.link) == ("skipped", "octocat", T3, LINK)
    assert state.skips == {
        "design": {"via": "comment", "by": "octocat", "reason": "", "at": T3, "link": LINK}
    }


def test_skip_of_a_waiting_gate_moves_on_without_a_decision() -> None:
    waiting = lane.done(started(), "requirements", at=T1)
    state = lane.skip(waiting, "requirements", by="octocat", at=T2, link=LINK)
    assert state.current_node == "design"
    assert state.decisions == {}


def test_skip_of_a_later_phase_keeps_the_pointer_and_is_passed_over_later() -> None:
    state = lane.skip(started(), "design", by="octocat", at=T1, link=LINK)
    assert state.current_node == "requirements"
    state = lane.done(state, "requirements", at=T2)
    state = lane.approve(state, "requirements", by="octocat", at=T3, link=LINK)
    assert state.current_node == "tasks"
    assert statuses(state)["design"] == "skipped"


@pytest.mark.parametrize(("phase", "already"), [("requirements", "has already passed")])
def test_skip_of_a_passed_phase_is_refused(phase: str, already: str) -> None:
    with pytest.raises(LaneError, match=f"{phase} {already}: only a phase not yet passed"):
        lane.skip(at_design(), phase, by="octocat", at=T3, link=LINK)


def test_skip_of_a_skipped_phase_is_refused() -> None:
    state = lane.skip(started(), "tasks", by="octocat", at=T1, link=LINK)
    with pytest.raises(LaneError, match="tasks was already skipped"):
        lane.skip(state, "tasks", by="octocat", at=T2, link=LINK)


def test_a_person_transition_needs_who_made_it() -> None:
    waiting = lane.done(started(), "requirements", at=T1)
    with pytest.raises(LaneError, match="needs its by"):
        lane.approve(waiting, "requirements", by=" ", at=T2, link=LINK)


def test_a_full_walk_with_a_skip_ends_done_with_every_decision_and_skip_recorded() -> None:
    state = lane.start(fresh(), at=T0)
    state = lane.done(state, "requirements", at=T1)
    state = lane.changes(state, "requirements", by="octocat", at=T1, link=LINK, what="more")
    state = lane.done(state, "requirements", at=T2)
    state = lane.approve(state, "requirements", by="octocat", at=T2, link=LINK)
    state = lane.skip(state, "design", by="hubot", at=T2, link=LINK + "2")
    state = lane.done(state, "tasks", at=T3)
    state = lane.done(state, "implementation", at=T3)
    assert state.current_node == "done"
    assert statuses(state) == {
        "requirements": "pass",
        "design": "skipped",
        "tasks": "pass",
        "implementation": "pass",
    }
    assert [d["outcome"] for d in state.decisions["requirements"]] == ["changes", "approved"]
    assert state.skips == {
        "design": {"via": "comment", "by": "hubot", "reason": "", "at": T2, "link": LINK + "2"}
    }


def test_other_nodes_decisions_and_skips_in_the_file_are_kept() -> None:
    state = WorkItemState(
        work_item=ITEM.ref,
        nodes={"upstream-node": {"status": "done"}},
        decisions={"upstream-node": {"approvedBy": "x"}},
        skips=[{"node": "upstream-node"}],
    )
    state = lane.skip(lane.start(state, at=T0), "design", by="octocat", at=T1, link=LINK)
    assert list(state.nodes) == [*lane.PHASES, "upstream-node"]
    assert state.nodes["upstream-node"] == {"status": "done"}
    assert state.decisions == {"upstream-node": {"approvedBy": "x"}}
    assert state.skips["upstream-node"] == {}  # an earlier list entry, kept as upstream's shape
    assert state.skips["design"]["by"] == "octocat"


@pytest.mark.parametrize(
    ("nodes", "said"),
    [
        ({"design": {"status": "in_progress"}}, "node design has the status 'in_progress'"),
        ({"design": 7}, "node design is not an object"),
        ({"design": {"status": "pass", "by": 1}}, "node design has a by that is not text"),
        (["requirements"], "nodes is not an object"),
    ],
)
def test_lane_values_the_lane_does_not_know_are_refused_not_guessed(nodes: Any, said: str) -> None:
    with pytest.raises(LaneError, match=said):
        read_lane(WorkItemState(work_item=ITEM.ref, nodes=nodes))


def test_a_status_written_as_a_bare_string_is_read() -> None:
    state = WorkItemState(work_item=ITEM.ref, current_node="design", nodes={"design": "active"})
    assert read_lane(state).node("design").status == "active"
    assert read_lane(state).started


def test_the_state_file_after_a_walk_is_read_back_with_a_string_pointer(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    store.update(lambda state: lane.start(state, at=T0))
    store.update(lambda state: lane.done(state, "requirements", at=T1))
    store.update(lambda state: lane.approve(state, "requirements", by="o", at=T2, link=LINK))
    store.update(lambda state: lane.skip(state, "design", by="o", at=T2, link=LINK))
    store.update(lambda state: lane.done(state, "tasks", at=T3))
    loaded = store.load()
    assert loaded.current_node == "implementation"
    assert isinstance(loaded.current_node, str)
    assert loaded.problems == []
    assert statuses(loaded)["implementation"] == "active"


def test_a_refused_transition_inside_update_writes_nothing(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    store.update(lambda state: lane.start(state, at=T0))
    before = store.path.read_bytes()
    with pytest.raises(LaneError):
        store.update(lambda state: lane.done(state, "design", at=T1))
    assert store.path.read_bytes() == before
