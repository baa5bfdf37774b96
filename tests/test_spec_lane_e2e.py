"""The spec lane end to end (issue 31): `the-loop poll --once` against the loopback fake
GitHub, real tmux on a private socket, real git, and a stand-in agent that writes each
phase's document, commits it and runs `the-loop done` in its checkout.

A full walk through both gates: `start spec`; requirements sent back once with
`changes`, then approved; design approved by a pull request's APPROVED review with no
words; tasks and implementation done by the agent. Every authorized comment made while a
gate was open is in the document's review comments exactly once; unrelated comments,
"LGTM" and emoji move nothing; after the walk `git status` shows only the lane's files.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.fake_github import FakeGitHub
from tests.helpers.spec_world import ITEM, REPO, SPEC_DIR, LaneWorld, github, lane_world  # noqa: F401
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile


def test_a_full_walk_through_both_gates(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    world = lane_world
    world.comment("the-loop start spec")
    world.poll_until(lambda: world.status_of("requirements") == "waiting", "requirements done")
    assert wait_until(lambda: "DONE requirements 0" in world.read()), world.read()
    world.poll_until(lambda: len(world.gate_comments()) == 1, "the requirements gate said")
    [gate] = world.gate_comments()
    assert f"{SPEC_DIR}/requirements.md" in gate and "/blob/" in gate

    # While the gate is open: comments of every kind go to the agent and move nothing.
    said = [
        world.comment("I have not approved this yet; the unit tests are missing"),
        world.comment("LGTM, no changes requested"),
        world.comment("👍"),
        world.comment("> the-loop approve\nquoted, so it never commands", login="bob"),
        world.comment("```\nthe-loop approve\n```"),
    ]
    world.comment("the-loop approve", login="mallory")  # not authorized: refused
    world.poll()
    world.poll()
    assert world.status_of("requirements") == "waiting"
    assert world.lane()["currentNode"] == "requirements"

    said.append(world.comment("the-loop changes name the widget's limits"))
    world.poll_until(
        lambda: (
            world.status_of("requirements") == "waiting"
            and "Revised in round 2" in world.document("requirements")
        ),
        "requirements sent back and done again",
    )
    document = world.document("requirements")
    assert "## Review comments" in document
    for comment_id in said:
        assert document.count(f"#issuecomment-{comment_id})") == 1, comment_id
    assert "mallory" not in document
    world.poll_until(lambda: len(world.gate_comments()) == 2, "the second round's gate said")
    assert "(round 2)" in world.gate_comments()[1]

    approval = world.comment("Thanks.\n\nthe-loop approve")
    world.poll_until(lambda: world.status_of("design") == "waiting", "design done")
    assert world.lane()["nodes"]["requirements"]["by"] == "alice"
    document = world.document("requirements")
    assert document.count(f"#issuecomment-{approval})") == 1
    for comment_id in said:
        assert document.count(f"#issuecomment-{comment_id})") == 1, "appended once only"

    # The design's gate is decided by a pull request's own review state, no words needed.
    github.now = datetime.now(UTC)
    github.add_pull(REPO, 16, title="The widget", body="Closes #15", login="the-loop-bot")
    world.poll_until(lambda: len(world.gate_comments()) == 3, "the design gate said")
    world.poll_until(lambda: bool(world.events_named("pr.linked")), "the pull request linked")
    world.poll()  # its reviews read once: what comes now is new, not history
    github.now = datetime.now(UTC) + timedelta(seconds=2)  # GitHub's clock: seconds apart
    github.add_review(REPO, 16, login="bob", state="APPROVED", body="")
    world.poll_until(lambda: world.lane().get("currentNode") == "done", "the lane finished")
    _finished(world)


def _finished(world: LaneWorld) -> None:
    """What a walk through both gates leaves: every phase passed with who passed it, the
    decisions, `check`, `sessions list`, a clean checkout but for the lane's files."""
    lane = world.lane()
    assert [lane["nodes"][p]["status"] for p in ("requirements", "design", "tasks")] == [
        "pass",
        "pass",
        "pass",
    ]
    assert lane["nodes"]["design"]["by"] == "bob"
    outcomes = {p: [d["outcome"] for d in lane["decisions"][p]] for p in lane["decisions"]}
    assert outcomes == {"requirements": ["changes", "approved"], "design": ["approved"]}
    assert wait_until(lambda: "DONE implementation" in world.read())
    for phase in ("requirements", "design", "tasks", "implementation"):
        assert world.read().count(f"DONE {phase} 0") == (2 if phase == "requirements" else 1)

    code, out, err = world.run_cli(["check", "--work-item", ITEM, "--format", "json"])
    assert code == 0, err
    [item] = json.loads(out)["items"]
    assert [(n["node"], n["status"]) for n in item["nodes"]] == [
        ("requirements", "pass"),
        ("design", "pass"),
        ("tasks", "pass"),
        ("implementation", "pass"),
    ]
    code, out, err = world.run_cli(["sessions", "list", "--format", "json"])
    assert json.loads(out)["items"][0]["phase"] == {"phase": "done", "status": ""}

    changed = {line[3:] for line in world.git("status", "--porcelain").splitlines()}
    assert changed <= {f"{SPEC_DIR}/work-item-state.json", f"{SPEC_DIR}/"}, changed
    decided = world.events_named("spec.decided")
    assert [e["outcome"] for e in decided] == ["started", "changes", "approved", "approved"]
    assert len(world.events_named("spec.gate_opened")) == 3


def test_a_fresh_lane_keeps_its_file_where_upstream_looks(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
) -> None:
    world = lane_world
    world.comment("the-loop start spec")
    world.poll_until(lambda: world.status_of("requirements") == "waiting", "requirements done")
    state = WorkItemStateFile(world.checkout, WorkItemRef.parse(ITEM)).load()
    assert state.current_node == "requirements"
    assert (world.checkout / SPEC_DIR / "work-item-state.json").exists()


def test_a_decision_with_no_session_starts_one_that_inherits_the_lane(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
) -> None:
    world = lane_world
    world.comment("the-loop start spec")
    world.poll_until(lambda: len(world.gate_comments()) == 1, "the requirements gate said")
    world.comment("the-loop stop")
    world.poll_until(lambda: world.registry.find_by_work_item(ITEM) is None, "stopped")
    assert world.lane()["currentNode"] == "requirements", "the checkout and its lane are kept"

    world.comment("the-loop approve")
    world.poll_until(lambda: world.status_of("design") == "waiting", "design done afresh")
    prompts = [line for line in world.read().splitlines() if line.startswith("PROMPT ")]
    assert len(prompts) == 2, prompts
    assert wait_until(lambda: "current phase is design (active)" in world.read()), world.read()
    assert f"{SPEC_DIR}/requirements.md" in world.read().split("PROMPT ")[-1]
    decided = world.events_named("spec.decided")
    assert [(e["command"], e["outcome"]) for e in decided] == [
        ("start", "started"),
        ("approve", "approved"),
    ]


def test_decisions_that_change_nothing_are_answered_once_and_move_nothing(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    world = lane_world
    world.comment("a first word")
    world.poll()  # the thread seen: what follows is new, not history
    world.comment("the-loop approve")  # no lane, no session: nothing to approve
    world.poll()
    world.poll()
    replies = [c.body for c in github.comments if "changed nothing" in c.body]
    assert len(replies) == 1 and "has not started" in replies[0], replies
    assert world.registry.find_by_work_item(ITEM) is None, "no session started for it"

    world.comment("the-loop start spec")
    world.poll_until(lambda: world.status_of("requirements") == "waiting", "requirements done")
    world.comment("the-loop start spec")
    world.comment("the-loop approve design")  # not the gate that is open
    world.comment("the-loop skip")  # no phase named
    world.poll()
    world.poll()
    replies = [c.body for c in github.comments if "changed nothing" in c.body]
    assert len(replies) == 4, "\n".join(replies)
    assert "already started" in replies[1]
    assert "design cannot be approved" in replies[2]
    assert "say which phase to skip" in replies[3]
    assert world.lane()["currentNode"] == "requirements"
    assert world.status_of("requirements") == "waiting"


def test_a_review_that_approves_with_a_changes_keyword_in_its_body_approves_once(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    """The review's state decides; the keyword in its body is the same review, not a
    second decision, and the agent is never told to revise a phase that passed."""
    world = lane_world
    world.comment("the-loop start spec")
    github.now = datetime.now(UTC)
    github.add_pull(REPO, 16, title="The widget", body="Closes #15", login="the-loop-bot")
    world.poll_until(lambda: bool(world.events_named("pr.linked")), "the pull request linked")
    world.poll_until(lambda: len(world.gate_comments()) == 1, "the requirements gate said")
    world.poll()
    github.now = datetime.now(UTC) + timedelta(seconds=2)
    github.add_review(REPO, 16, login="bob", state="APPROVED", body="the-loop changes add X")
    world.poll_until(lambda: world.status_of("design") == "waiting", "design done")
    decided = [(e["command"], e["outcome"]) for e in world.events_named("spec.decided")]
    assert decided == [("start", "started"), ("approve", "approved")], decided
    assert "asked for changes" not in world.read()
    assert world.lane()["decisions"]["requirements"][0]["outcome"] == "approved"


def test_a_long_review_comment_reaches_the_agent_and_the_document_cut_with_a_note(
    lane_world: LaneWorld,  # noqa: F811 - the imported fixture
) -> None:
    """A comment made at a gate is cut at the delivery's limit wherever the lane carries
    it, as any comment pasted into a pane is; the whole stays at its link."""
    world = lane_world
    world.comment("the-loop start spec")
    world.poll_until(lambda: len(world.gate_comments()) == 1, "the requirements gate said")
    world.comment("y" * 5000)
    world.comment("the-loop changes shorter, please")
    world.poll_until(lambda: "Revised in round 2" in world.document("requirements"), "revised")
    note = "[the-loop] Cut at 3,500 characters; 1,500 more are at its link."
    assert wait_until(lambda: "Revise docs/specs" in world.read()), world.read()[-500:]
    pasted = world.read().split("asked for changes to requirements")[1]
    assert "y" * 3500 in pasted and "y" * 3501 not in pasted and note in pasted
    document = world.document("requirements")
    assert "y" * 3501 not in document and note in document
