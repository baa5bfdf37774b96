"""``the-loop done <phase>`` and ``the-loop check``, end to end: a real git checkout in
tmp_path, a session registered on it, the CLI run through the test world."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import git
from tests.helpers.world import World
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.spec import lane

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER = WorkItemRef.parse("github:octo/lib#7")
SPEC = "docs/specs/github-octo-app-15"
LINK = "https://github.com/octo/app/issues/15#issuecomment-9"
ARTIFACTS = {
    "requirements": "## Problem\n\nslow\n\n## Requirements\n\nfast\n\n"
    "## Acceptance criteria\n\nok\n",
    "design": "## Design\n\nd\n\n## Testing plan\n\nt\n",
    "tasks": "## Tasks\n\n- [ ] one\n",
}


class Checkout:
    """A git checkout with a live session registered on it and the lane started."""

    def __init__(self, world: World, path: Path, ref: WorkItemRef = ITEM) -> None:
        self.world, self.path, self.ref = world, path, ref
        path.mkdir(parents=True)
        git(path, "init", "--quiet")
        (path / "README.md").write_text("app\n", encoding="utf-8")
        self.commit("README.md", "start")
        register = ["sessions", "register", "--work-item", ref.ref, "--harness", "command"]
        code, _, err = world.run_cli([*register, "--harness-session-id", "s-1", "--cwd", str(path)])
        assert code == 0, err
        self.state_file = WorkItemStateFile(path, ref)
        self.state_file.update(lambda state: lane.start(state, at="2026-03-01T10:00:00Z"))

    def commit(self, name: str, message: str = "artifact") -> None:
        git(self.path, "add", name)
        git(self.path, "commit", "--quiet", "-m", message)

    def write(self, phase: str, text: str | None = None, *, commit: bool = True) -> str:
        name = f"{SPEC}/{phase}.md"
        (self.path / name).write_text(ARTIFACTS[phase] if text is None else text, "utf-8")
        if commit:
            self.commit(name)
        return name

    def nodes(self) -> dict[str, Any]:
        return json.loads(self.state_file.path.read_text(encoding="utf-8"))["nodes"]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "home")


@pytest.fixture
def checkout(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    made = Checkout(world, tmp_path / "work" / "app")
    monkeypatch.chdir(made.path)
    return made


def events(world: World) -> list[dict[str, Any]]:
    log = world.layout.event_log
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def phase_done_events(world: World) -> list[dict[str, Any]]:
    return [event for event in events(world) if event["event"] == "spec.phase_done"]


def test_done_records_a_gated_phase_as_waiting_and_says_a_person_decides(
    world: World, checkout: Checkout
) -> None:
    checkout.write("requirements")
    code, out, err = world.run_cli(["done", "requirements"])
    assert (code, err) == (0, "")
    assert out == (
        f"{ITEM.ref}: requirements is done and its gate is open: a person decides whether it "
        "passes or needs changes; the next phase starts once it passes\n"
    )
    nodes = checkout.nodes()
    assert nodes["requirements"]["status"] == "waiting"
    assert nodes["requirements"]["by"] == "agent"
    assert [nodes[phase]["status"] for phase in ("design", "tasks")] == ["pending", "pending"]
    [event] = phase_done_events(world)
    assert (event["work_item"], event["phase"], event["status"]) == (
        ITEM.ref,
        "requirements",
        "waiting",
    )
    assert (event["current_node"], event["artifact"]) == ("requirements", f"{SPEC}/requirements.md")


def test_done_on_a_phase_without_a_gate_starts_the_next_and_json_says_so(
    world: World, checkout: Checkout
) -> None:
    checkout.state_file.update(lambda s: lane.skip(s, "requirements", by="o", at="t", link=LINK))
    checkout.state_file.update(lambda s: lane.skip(s, "design", by="o", at="t", link=LINK))
    checkout.write("tasks")
    code, out, _ = world.run_cli(["done", "tasks", "--format", "json"])
    assert code == 0
    document = json.loads(out)
    assert (document["command"], document["ok"]) == ("done", True)
    assert document["items"] == [
        {
            "workItem": ITEM.ref,
            "phase": "tasks",
            "status": "pass",
            "currentNode": "implementation",
            "artifact": f"{SPEC}/tasks.md",
            "next": "implementation",
        }
    ]
    code, out, _ = world.run_cli(["done", "implementation"])
    assert (code, out) == (
        0,
        f"{ITEM.ref}: implementation is done, and the spec lane is finished\n",
    )
    assert checkout.state_file.load().current_node == "done"


def test_done_works_from_a_subdirectory_of_the_checkout(
    world: World, checkout: Checkout, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout.write("requirements")
    (checkout.path / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(checkout.path / "src" / "deep")
    assert world.run_cli(["done", "requirements"])[0] == 0
    assert checkout.nodes()["requirements"]["status"] == "waiting"


def refused(world: World, checkout: Checkout, argv: list[str]) -> str:
    """Run ``argv``; assert exit 2, nothing on stdout, one line on stderr, nothing changed."""
    before = checkout.state_file.path.read_bytes()
    code, out, err = world.run_cli(argv)
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert checkout.state_file.path.read_bytes() == before
    assert phase_done_events(world) == []
    return err.removeprefix("error: ").rstrip("\n")


def test_done_on_a_phase_that_is_not_current_is_refused(world: World, checkout: Checkout) -> None:
    checkout.write("design")
    said = refused(world, checkout, ["done", "design"])
    assert said == "design is not the current phase: the lane is at requirements (active)"


def test_done_without_the_artifact_is_refused_naming_the_file(
    world: World, checkout: Checkout
) -> None:
    said = refused(world, checkout, ["done", "requirements"])
    assert said == (
        f"requirements is not done: {SPEC}/requirements.md is missing: write it, with the "
        "sections ## Problem, ## Requirements and ## Acceptance criteria, and commit it"
    )


def test_done_with_sections_missing_names_each(world: World, checkout: Checkout) -> None:
    checkout.write("requirements", "## Requirements\n\n```\n## Problem\n```\n")
    said = refused(world, checkout, ["done", "requirements"])
    assert said == (
        f"requirements is not done: {SPEC}/requirements.md lacks the sections ## Problem and "
        "## Acceptance criteria"
    )


def test_done_with_the_artifact_not_committed_is_refused(world: World, checkout: Checkout) -> None:
    checkout.write("requirements", commit=False)
    said = refused(world, checkout, ["done", "requirements"])
    assert said == (
        f"requirements is not done: {SPEC}/requirements.md is not committed (git does not track "
        "it); commit it on the work item's branch first"
    )
    git(checkout.path, "add", f"{SPEC}/requirements.md")
    said = refused(world, checkout, ["done", "requirements"])
    assert "(it has changes that are not committed)" in said


def test_done_with_the_artifact_changed_after_its_commit_is_refused(
    world: World, checkout: Checkout
) -> None:
    name = checkout.write("requirements")
    (checkout.path / name).write_text(ARTIFACTS["requirements"] + "more\n", encoding="utf-8")
    assert "(it has changes that are not committed)" in refused(
        world, checkout, ["done", "requirements"]
    )


def refused_again(world: World, checkout: Checkout) -> str:
    """``done requirements`` after an earlier one: refused as :func:`refused` says, and no
    event more."""
    before = len(phase_done_events(world))
    code, out, err = world.run_cli(["done", "requirements"])
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert len(phase_done_events(world)) == before
    return err.removeprefix("error: ").rstrip("\n")


def test_done_after_changes_is_refused_when_the_document_lost_its_review_comments(
    world: World, checkout: Checkout
) -> None:
    """An agent that rewrites a sent-back document from scratch drops the review comments
    the-loop appended and committed there: its ``done`` is refused until they are back.
    A decision whose review comments were never committed there (their append is still
    owed) is not held against the document."""
    from the_loop.spec.words import ReviewEntry, entry_mark, with_review_comments

    checkout.write("requirements")
    assert world.run_cli(["done", "requirements"])[0] == 0
    checkout.state_file.update(
        lambda s: lane.changes(s, "requirements", by="alice", at="t", link=LINK, what="more")
    )
    entry = ReviewEntry("alice", "2026-03-01T11:00:00Z", LINK, "the-loop changes more", "changes")
    reviewed = with_review_comments(ARTIFACTS["requirements"], [entry])
    assert reviewed is not None and entry_mark(LINK) in reviewed
    checkout.write("requirements", reviewed)  # the-loop's append, committed
    checkout.write("requirements", ARTIFACTS["requirements"] + "\nRewritten.\n")  # dropped
    said = refused_again(world, checkout)
    assert said == (
        f"requirements is not done: {SPEC}/requirements.md no longer holds one of the review "
        "comments the-loop appended to it: keep its `## Review comments` section as the-loop "
        "wrote it (it is in the branch's history) and commit"
    )
    checkout.write("requirements", reviewed + "\nRevised.\n")  # kept: the usual revision
    assert world.run_cli(["done", "requirements"])[0] == 0
    second = LINK + "0"
    checkout.state_file.update(
        lambda s: lane.changes(s, "requirements", by="alice", at="u", link=second, what="")
    )
    checkout.write("requirements", reviewed + "\nRevised again.\n")
    code, _, err = world.run_cli(["done", "requirements"])
    assert code == 0, f"its append not yet committed: not held against it ({err})"


def test_done_twice_is_refused_while_the_gate_waits(world: World, checkout: Checkout) -> None:
    checkout.write("requirements")
    assert world.run_cli(["done", "requirements"])[0] == 0
    before = checkout.state_file.path.read_bytes()
    code, _, err = world.run_cli(["done", "requirements"])
    assert code == 2 and "already done: its gate waits for a person" in err
    assert checkout.state_file.path.read_bytes() == before


def test_done_outside_any_sessions_checkout_is_refused(
    world: World, checkout: Checkout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    said = refused(world, checkout, ["done", "requirements"])
    assert said.startswith(f"{elsewhere.resolve()} is in no live session's checkout on this")


def test_done_in_a_checkout_whose_session_is_closed_is_refused(
    world: World, checkout: Checkout
) -> None:
    assert world.run_cli(["sessions", "close", "--work-item", ITEM.ref])[0] == 0
    assert "is in no live session's checkout" in refused(world, checkout, ["done", "requirements"])


def test_done_before_the_lane_started_is_refused(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bare-checkout"
    path.mkdir()
    register = ["sessions", "register", "--work-item", OTHER.ref, "--harness", "command"]
    world.run_cli([*register, "--harness-session-id", "s-2", "--cwd", str(path)])
    monkeypatch.chdir(path)
    code, out, err = world.run_cli(["done", "requirements"])
    assert (code, out) == (2, "")
    assert err == (
        f"error: the spec lane has not started for {OTHER.ref}: its checkout {path} holds no "
        "repository file for it\n"
    )
    assert not (path / "docs").exists()


def test_an_unknown_phase_is_a_usage_error(world: World, checkout: Checkout) -> None:
    code, _, err = world.run_cli(["done", "review"])
    assert code == 2 and "invalid choice: 'review'" in err


def test_check_lists_each_lane_in_order_and_a_waiting_gate_keeps_ok_true(
    world: World, checkout: Checkout
) -> None:
    checkout.write("requirements")
    assert world.run_cli(["done", "requirements"])[0] == 0
    code, out, err = world.run_cli(["check", "--format", "json"])
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert (document["command"], document["ok"], document["errors"]) == ("check", True, [])
    assert document["summary"] == {"workItems": 1, "waiting": 1, "unreadable": 0}
    [item] = document["items"]
    assert item["workItem"] == ITEM.ref
    assert item["currentNode"] == "requirements"
    assert item["waiting"] == ["requirements"]
    assert item["checkout"] == str(checkout.path)
    assert [(node["node"], node["status"], node["by"]) for node in item["nodes"]] == [
        ("requirements", "waiting", "agent"),
        ("design", "pending", None),
        ("tasks", "pending", None),
        ("implementation", "pending", None),
    ]
    assert all(list(node) == ["node", "status", "by", "at", "link"] for node in item["nodes"])


def test_check_says_who_approved_and_who_skipped(world: World, checkout: Checkout) -> None:
    checkout.state_file.update(lambda s: lane.done(s, "requirements", at="t1"))
    checkout.state_file.update(
        lambda s: lane.approve(s, "requirements", by="octocat", at="t2", link=LINK)
    )
    checkout.state_file.update(lambda s: lane.skip(s, "design", by="hubot", at="t3", link=LINK))
    code, out, err = world.run_cli(["check", "--work-item", ITEM.ref])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{ITEM.ref}: tasks (active)  ({checkout.path})"
    rows = [line.split() for line in lines[2:6]]
    assert rows == [
        ["requirements", "pass", "octocat", "t2", LINK],
        ["design", "skipped", "hubot", "t3", LINK],
        ["tasks", "active", "-", "t3", "-"],
        ["implementation", "pending", "-", "-", "-"],
    ]
    assert lines[-1] == "1 work item; none waits on a person"


def test_check_lists_only_the_checkouts_holding_a_repository_file(
    world: World, checkout: Checkout, tmp_path: Path
) -> None:
    other = tmp_path / "plain"
    other.mkdir()
    register = ["sessions", "register", "--work-item", OTHER.ref, "--harness", "command"]
    world.run_cli([*register, "--harness-session-id", "s-2", "--cwd", str(other)])
    code, out, _ = world.run_cli(["check", "--format", "json"])
    assert code == 0
    assert [item["workItem"] for item in json.loads(out)["items"]] == [ITEM.ref]
    code, _, err = world.run_cli(["check", "--work-item", OTHER.ref])
    assert code == 1
    assert err == f"error: {OTHER.ref} has no repository file in its session's checkout {other}\n"


def test_check_of_an_item_without_a_session_fails(world: World) -> None:
    code, out, err = world.run_cli(["check", "--work-item", ITEM.ref, "--format", "json"])
    assert code == 1
    assert json.loads(out)["ok"] is False
    assert "has no session record on this machine" in err


def test_check_with_nothing_to_report_says_so(world: World) -> None:
    code, out, _ = world.run_cli(["check"])
    assert (code, out) == (
        0,
        "no session's checkout on this machine holds its work item's repository file\n",
    )


def test_check_reports_an_unreadable_lane_and_fails(world: World, checkout: Checkout) -> None:
    document = json.loads(checkout.state_file.path.read_text(encoding="utf-8"))
    document["nodes"]["design"] = {"status": "in_progress"}
    checkout.state_file.path.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = world.run_cli(["check", "--format", "json"])
    assert code == 1
    parsed = json.loads(out)
    assert parsed["ok"] is False
    [item] = parsed["items"]
    assert "node design has the status 'in_progress'" in item["problem"]
    assert item["nodes"] == []
    assert parsed["errors"] == [f"{ITEM.ref}: {item['problem']}"]
    assert err.startswith(f"error: {ITEM.ref}: ")


def test_check_reads_no_git(world: World, checkout: Checkout) -> None:
    """The recorded state only: a checkout whose git directory is gone reads the same."""
    checkout.state_file.update(lambda s: lane.done(s, "requirements", at="t1"))
    (checkout.path / ".git").rename(checkout.path / ".git-away")
    code, out, _ = world.run_cli(["check", "--format", "json"])
    assert code == 0
    assert json.loads(out)["items"][0]["nodes"][0]["status"] == "waiting"


def test_checks_nodes_are_the_nodes_the_local_api_serves(world: World, checkout: Checkout) -> None:
    from the_loop.api.process_nodes import nodes_stamp

    checkout.state_file.update(lambda s: lane.done(s, "requirements", at="t1"))
    checkout.state_file.update(lambda s: lane.skip(s, "tasks", by="hubot", at="t2", link=LINK))
    code, out, _ = world.run_cli(["check", "--format", "json"])
    assert code == 0
    _stamp, read_nodes = nodes_stamp(str(checkout.path), ITEM)
    assert json.loads(out)["items"][0]["nodes"] == read_nodes()
