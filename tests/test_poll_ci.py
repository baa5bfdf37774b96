"""Issue 19, CI failures: a check that fails on the head of a live session's pull request
reaches the agent once, with the end of its log; a re-run adds nothing, a new failing head
is a new paste; three failing pushes in a row stop the pastes and post one comment; a
green push starts the count again; a paused session holds the note; a session that is
not live gets none; the log's redirect is followed without the token; an idle head costs
one conditional request a cycle (real tmux, real git, the loopback fake).
"""

from __future__ import annotations

import json
from typing import Any

from tests.fake_github import FakeGitHub
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_poll_e2e import ITEM, REPO, PollWorld, github, world  # noqa: F401 - fixtures
from the_loop.intake.events import AGENT_COMMENT_MARKER

BRANCH = "loop/github-octo-app-15"
PR = "github:octo/app#40"
CHECK = "test (3.11)"
STEPS = [
    {"name": "Set up job", "conclusion": "success"},
    {"name": "Run pytest", "conclusion": "failure"},
    {"name": "Upload coverage", "conclusion": "skipped"},
]


def log_of(lines: int, last: str = "FAILED tests/test_widget.py::test_steady") -> str:
    """An Actions log: timestamps, the failing step's group, ``lines`` lines, its error."""
    stamp = "2026-12-01T09:00:00.0000000Z"
    body = [f"{stamp} ##[group]Set up job", f"{stamp} setting up", f"{stamp} ##[endgroup]"]
    body += [f"{stamp} ##[group]Run pytest", f"{stamp} ##[endgroup]"]
    body += [f"{stamp} \x1b[31mline {n:03d} of the run\x1b[0m" for n in range(1, lines + 1)]
    body += [f"{stamp} {last}", f"{stamp} ##[error]Process completed with exit code 1."]
    body += [f"{stamp} Post job cleanup.", f"{stamp} Cleaning up orphan processes"]
    return "\n".join(body) + "\n"


def linked(poll_world: PollWorld, fake: FakeGitHub) -> str:
    """A live session on #15 and its pull request #40 linked by branch; the head's SHA."""
    fake.add_comment(REPO, 15, "the-loop start", login="alice")
    assert poll_world.poll()["commands"] == 1
    assert wait_until(lambda: "PROMPT" in poll_world.read())
    pull = fake.add_pull(REPO, 40, title="Fix the widget", head=BRANCH, login="the-loop-bot")
    poll_world.poll()
    record = poll_world.registry.find_by_work_item(ITEM)
    assert record is not None and [e.work_item.ref for e in record.pull_requests] == [PR]
    return pull.head_sha


def fail(fake: FakeGitHub, sha: str, name: str = CHECK, log: str = "") -> int:
    """A GitHub Actions job that failed at ``Run pytest``, as the check run ``name``."""
    job = fake.add_job(REPO, name=name, steps=STEPS, log=log or log_of(3), head_sha=sha)
    fake.add_check_run(REPO, sha, name=name, conclusion="failure", job_id=job.id)
    return job.id


def push(fake: FakeGitHub, *, green: bool = False, failing: bool = False) -> str:
    """A new head on #40, with a green check or a failing one on it."""
    fake.advance(10)
    sha = fake.push(REPO, 40)
    if green:
        fake.add_check_run(REPO, sha, name=CHECK, conclusion="success")
    if failing:
        fail(fake, sha)
    return sha


def pasted(poll_world: PollWorld) -> int:
    """How many CI pastes reached the agent."""
    return poll_world.read().count("[the-loop] Check ")


def escalations(fake: FakeGitHub) -> list[str]:
    return [c.body for c in fake.comments if "the-loop:ci-escalation" in c.body]


def settle(poll_world: PollWorld, expected: int) -> None:
    assert wait_until(lambda: pasted(poll_world) >= expected), poll_world.read()
    assert pasted(poll_world) == expected, poll_world.read()


def test_a_failing_check_arrives_once_with_the_end_of_its_step_log(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = linked(world, github)
    job_id = fail(github, sha, log=log_of(400))
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 0, err
    assert f"{ITEM}: delivered the failure of check {CHECK} from @github-actions" in out, out
    settle(world, 1)
    read = world.read()
    assert f'[the-loop] Check "{CHECK}" failed (failure) on {PR} at commit {sha[:12]}:' in read
    run_id = github.jobs[job_id].run_id
    assert f"https://github.com/octo/app/actions/runs/{run_id}/job/{job_id}" in read
    assert "[the-loop] The first failed step: Run pytest" in read
    assert "> FAILED tests/test_widget.py::test_steady" in read
    assert "> ##[error]Process completed with exit code 1." in read
    assert "line 400 of the run" in read and "line 001 of the run" not in read
    assert "\x1b" not in read and "2026-12-01T09:00:00" not in read and "Post job" not in read
    quoted = [line for line in read.splitlines() if line.startswith("> ")]
    assert 0 < len(quoted) <= 150 and len("\n".join(quoted)) <= 3500 + 2 * len(quoted)
    assert "[the-loop] The log was cut to its last 150 lines" in read
    [event] = world.events_named("poll.ci_failure_delivered")
    assert event["work_item"] == ITEM and event["key"].startswith(f"ci-{sha[:12]}-test-3.11-")

    github.add_check_run(REPO, sha, name=CHECK, conclusion="failure")  # a re-run, red again
    github.add_check_run(REPO, sha, name=CHECK, conclusion="success")  # a flap
    github.add_check_run(REPO, sha, name=CHECK, conclusion="failure")
    for _ in range(3):
        assert world.poll()["ci_failures"] == 0
    assert pasted(world) == 1 and len(world.events_named("poll.ci_failure_delivered")) == 1
    assert len(github.logged("GET", f"/_logs/{job_id}")) == 1, "the log is fetched once"

    push(github, failing=True)
    assert world.poll()["ci_failures"] == 1, "a new head that fails is a new paste"
    settle(world, 2)


def test_the_log_redirect_is_followed_without_the_token(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = linked(world, github)
    job_id = fail(github, sha)
    world.poll()
    settle(world, 1)
    [asked] = github.logged("GET", f"/repos/{REPO}/actions/jobs/{job_id}/logs")
    [blob] = github.logged("GET", f"/_logs/{job_id}")
    assert asked.status == 302 and asked.headers["authorization"].startswith("Bearer ")
    assert blob.status == 200 and "authorization" not in blob.headers
    assert all("authorization" not in r.headers for r in github.logged(path=f"/_logs/{job_id}"))


def test_a_log_that_cannot_be_fetched_still_delivers_the_paste_saying_so(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = linked(world, github)
    job = github.add_job(REPO, name=CHECK, steps=STEPS, log="boom\n", head_sha=sha)
    github.fail_next(f"/_logs/{job.id}", status=503)
    github.add_check_run(REPO, sha, name=CHECK, conclusion="timed_out", job_id=job.id)
    world.poll()
    settle(world, 1)
    read = world.read()
    assert f'Check "{CHECK}" failed (timed_out)' in read and "Run pytest" in read
    assert "[the-loop] No log here: its log could not be fetched" in read and "boom" not in read


def test_a_failing_commit_status_is_a_paste_too(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    sha = push(github)
    github.add_status(
        REPO, sha, context="ci/jenkins", state="error", target_url="https://ci.example/1"
    )
    world.poll()
    assert wait_until(lambda: "ci/jenkins" in world.read())
    read = world.read()
    assert f'[the-loop] Status "ci/jenkins" failed (error) on {PR}' in read
    assert "https://ci.example/1" in read


def test_three_failing_pushes_stop_the_pastes_and_post_one_comment_a_green_push_resets(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    fail(github, linked(world, github))
    world.poll()
    for _ in range(2):
        push(github, failing=True)
        world.poll()
    settle(world, 3)
    [comment] = escalations(github)
    assert AGENT_COMMENT_MARKER in comment and "CI failed on 3 pushes in a row to " + PR in comment
    assert f"`{CHECK}`" in comment and "https://github.com/octo/app/actions/runs/" in comment
    [event] = world.events_named("ci.escalated")
    assert (event["level"], event["pull_request"], event["failing_pushes"]) == ("warning", PR, 3)
    ledger = world.store.pull_request_ledger(ITEM, PR)
    assert ledger is not None and len(ledger["ci"]["failing"]) == 3

    push(github, failing=True)
    code, out, _ = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 0 and json.loads(out)["summary"]["ci_failures"] == 0
    world.poll()
    assert pasted(world) == 3 and len(escalations(github)) == 1
    [recorded] = world.events_named("poll.ci_failure_recorded")
    assert recorded["reason"] == "budget"
    assert "CI failed on 3 pushes" not in world.read(), "the-loop's own comment is not pasted"

    push(github, green=True)
    world.poll()
    ledger = world.store.pull_request_ledger(ITEM, PR)
    assert ledger is not None and "ci" not in ledger, "a green head starts the count again"
    push(github, failing=True)
    world.poll()
    settle(world, 4)
    assert len(escalations(github)) == 1


def test_the_escalation_is_a_line_of_poll_once(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    document: dict[str, Any] = json.loads(world.config_path.read_text(encoding="utf-8"))
    document["polling"]["ci"] = {"maxFailingPushes": 1}
    world.configure(document)
    sha = linked(world, github)
    fail(github, sha)
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 0, err
    line = f"{ITEM}: CI of {PR} failed on 1 pushes in a row ({CHECK}): its failures are no"
    assert line in out, out
    assert len(escalations(github)) == 1


def test_a_paused_session_holds_the_note_until_it_resumes(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    github.add_comment(REPO, 15, "the-loop pause", login="alice")
    world.poll()
    push(github, failing=True)
    report = world.poll()
    assert (report["ci_failures"], report["held"]) == (1, 1)
    world.poll()
    assert pasted(world) == 0
    github.add_comment(REPO, 15, "the-loop resume", login="alice")
    world.poll()
    settle(world, 1)


def test_a_session_that_is_not_live_gets_nothing_and_its_pull_request_is_no_longer_read(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    linked(world, github)
    push(github, failing=True)
    github.add_comment(REPO, 15, "the-loop stop", login="alice")
    assert world.poll()["ci_failures"] == 0
    assert not world.live()
    [recorded] = world.events_named("poll.ci_failure_recorded")
    assert (recorded["reason"], recorded["pull_request"]) == ("not-live", PR)
    before = len(github.requests)
    push(github, failing=True)
    world.poll()
    asked = [r.path for r in github.requests[before:] if "/commits/" in r.path]
    assert asked == [] and pasted(world) == 0
    assert world.events_named("poll.ci_failure_delivered") == []


def test_an_idle_watched_head_costs_one_conditional_request_a_cycle(
    world: PollWorld,  # noqa: F811 - the imported fixture
    github: FakeGitHub,  # noqa: F811 - the imported fixture
) -> None:
    sha = linked(world, github)
    github.add_check_run(REPO, sha, name=CHECK, conclusion="success")
    github.add_status(REPO, sha, context="ci/jenkins", state="success")
    world.poll()
    world.poll()  # each answer read once since it changed
    for _ in range(4):
        before = len(github.requests)
        report = world.poll()
        cycle = github.requests[before:]
        ci = [r for r in cycle if "/commits/" in r.path]
        assert len(ci) == 1 and ci[0].status == 304, [(r.path, r.status) for r in ci]
        assert report["requests"] == report["not_modified"], [(r.path, r.status) for r in cycle]
    heads = json.loads((world.layout.local_dir / "poll-heads.json").read_text(encoding="utf-8"))
    assert heads["heads"][PR]["sha"] == sha
