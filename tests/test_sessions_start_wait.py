"""`sessions start` waits briefly for the agent to come up (``routing.tmux.startWaitSeconds``):
one that exits at once is exit 1, with its status and its pane's last lines, never
`started`. Real tmux on a private socket, real git; the agents are small bash scripts."""

from __future__ import annotations

import json
import re

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_sessions_integration import AGENT, ITEM, TARGET, Loop, _controls, loop  # noqa: F401

#: An agent that says why it cannot go on, then exits at once, as `claude --resume` of a
#: conversation it cannot find does (0.3 s after its start). It lingers a moment after its
#: words: tmux can lose what a process writes in the very instant its pty closes.
FAILING = [
    "bash",
    "-c",
    'echo "agent $1: No conversation found"; sleep 0.2; exit 3',
    "agent",
    "{session_id}",
]
WAIT = {"startWaitSeconds": 1.5}
#: How the error says the status: tmux 3.3a (Debian 12's) sometimes never records the
#: status of a pane that died as its pty closed, and the line then says so.
STATUS = r"exited \((status {}|tmux did not say its status)\)"


def error_lines(err: str) -> list[str]:
    """The error's lines (the warnings before it left out)."""
    lines = err.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("error: ")) :]


def test_an_agent_that_exits_at_once_fails_the_start_with_its_status_and_last_lines(
    loop: Loop,  # noqa: F811 - the imported fixture
) -> None:
    loop.configure_routing(harnesses={"command": {"argv": FAILING}}, tmux=WAIT)
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert (code, out) == (1, "")
    [session_id] = [e["session_id"] for e in loop.events_named("session.spawned")]
    first, *rest = error_lines(err)
    assert re.fullmatch(
        f"error: {re.escape(ITEM)}: the command agent {STATUS.format(3)} within 1.5 s of its "
        f"start; its session is closed, its checkout {re.escape(str(loop.worktree))} kept; "
        "start it again once the cause is fixed; its last lines:",
        first,
    ), first
    assert rest == [f"  agent {session_id}: No conversation found"]


def test_the_session_of_an_agent_that_exited_at_once_is_closed_its_checkout_and_start_kept(
    loop: Loop,  # noqa: F811 - the imported fixture
) -> None:
    loop.configure_routing(harnesses={"command": {"argv": FAILING}}, tmux=WAIT)
    assert loop.run("sessions", "start", "--work-item", ITEM) == 1
    assert loop.registry.find_by_work_item(ITEM) is None
    [closed] = loop.events_named("session.closed")
    assert re.fullmatch(f"the agent {STATUS.format(3)} at its start", closed["reason"])
    assert loop.worktree.is_dir(), "the checkout is kept"
    assert _controls(loop) == ["start"], "the start stays on record: the item stays armed"
    assert loop.tmux().liveness(TARGET) == "dead", "its pane is kept, as a close keeps it"

    loop.configure_routing(harnesses={"command": {"argv": AGENT}}, tmux=WAIT)
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert code == 0, err
    assert f"{ITEM}: started command session" in out
    assert f"{ITEM}: kept the previous transcript as tmux session {TARGET}~" in out


def test_an_agent_that_stays_up_is_started_after_the_wait(
    loop: Loop,  # noqa: F811 - the imported fixture
) -> None:
    loop.configure_routing(tmux=WAIT)
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM, "--format", "json")
    assert code == 0, err
    [item] = json.loads(out)["items"]
    assert (item["outcome"], item["session"]["status"]) == ("started", "active")
    assert loop.tmux().liveness(TARGET) == "live"
    assert loop.events_named("session.closed") == []


def test_a_restarted_agent_that_exits_at_once_fails_the_start_and_leaves_the_session_as_it_was(
    loop: Loop,  # noqa: F811 - the imported fixture
) -> None:
    failing_resume = [
        "bash",
        "-c",
        'echo "cannot resume $1"; sleep 0.2; exit 4',
        "-",
        "{session_id}",
    ]
    command = {"argv": AGENT, "resumeArgv": failing_resume}
    loop.configure_routing(harnesses={"command": command}, tmux=WAIT)
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    session_id = loop.listing()[0]["harnessSessionId"]
    loop.tmux().terminate_harness(TARGET, grace_seconds=5)
    code, out, err = loop.output("sessions", "start", "--work-item", ITEM)
    assert (code, out) == (1, "")
    first, *rest = error_lines(err)
    assert re.fullmatch(
        f"error: {re.escape(ITEM)}: the command agent {STATUS.format(4)} within 1.5 s of its "
        "restart; its session is left as is; start it again once the cause is fixed; its last "
        "lines:",
        first,
    ), first
    assert rest == [f"  cannot resume {session_id}"]
    [row] = loop.listing()
    assert (row["status"], row["harnessSessionId"]) == ("active", session_id)
    assert loop.events_named("session.closed") == []


def test_a_wait_of_zero_says_started_without_looking(
    loop: Loop,  # noqa: F811 - the imported fixture
) -> None:
    loop.configure_routing(harnesses={"command": {"argv": FAILING}}, tmux={"startWaitSeconds": 0})
    assert loop.run("sessions", "start", "--work-item", ITEM) == 0
    assert loop.registry.find_by_work_item(ITEM) is not None
