"""Issue 27 end to end with the real Claude Code (the pinned version ``make agent``
installs), real tmux on a private socket, real git (a local bare repository as the
remote), the loopback fake GitHub and the loopback fake of the Messages API, driven by
the-loop's own ``poll --once`` cycles.

Each test is one scenario of the issue's "Proofs in the repo": the trust dialog (on:
answered, the ticket prompt reaches the model; off: blocked, said once); a permission
prompt with comments arriving during it; a stranger's ``allow`` refused; the API-key
dialog; a dead pane beside a live agent on the same tmux server; a review of about
24,000 characters as one turn; a start that dies at once (and a restart that does:
restarted once, then said once); resume with and without a transcript; a comment after
a manual ``sessions start``.

The agent's HOME is the test's hermetic HOME, onboarded and its key approved unless a
test says otherwise; Claude Code keeps a worktree's trust under its main repository (the
shared clone), so that is the folder a test trusts beforehand.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import (
    FakeAnthropic,
    RecordedRequest,
    bash,
    is_turn,
    running_fake_anthropic,
    user_says,
)
from tests.fake_github import FakeGitHub, serve
from tests.helpers.claude_agent import FAKE_API_KEY, AgentPane
from tests.helpers.real_loop import (
    BOT,
    REPO,
    TOKEN,
    RealLoop,
    Report,
    any_request_holds,
    item_ref,
    offline_agent_environ,
    user_turns_with,
)
from tests.helpers.tmuxsock import wait_until

pytestmark = pytest.mark.slow

TITLE = "Fix the wobbling widget"
OTHER_TITLE = "Polish the squeaky hinge"
#: Claude Code's default permission mode is auto (no prompt): ``default`` prompts.
PROMPTING = ("--permission-mode", "default")
PERMISSION_PROMPT = "Do you want to proceed?"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: BOT})) as fake:
        yield fake


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with running_fake_anthropic() as fake:
        yield fake
        # Offline, always: a request for any other host comes to the fake as a proxy
        # request (CONNECT host:443 or an absolute URL), and none may have come.
        elsewhere = [f"{r.method} {r.path}" for r in fake.requests if not r.path.startswith("/")]
        assert elsewhere == [], f"the agent asked for the internet: {elsewhere}"


@pytest.fixture
def loop(
    tmp_path: Path,
    tmux_socket: str,
    github: FakeGitHub,
    anthropic: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> RealLoop:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    offline_agent_environ(monkeypatch, anthropic.url)
    return RealLoop(tmp_path, tmux_socket, github, anthropic)


# -- helpers ----------------------------------------------------------------------------


def tag() -> str:
    return uuid.uuid4().hex[:10]


def start(loop: RealLoop, number: int, title: str) -> None:
    """The ticket, and an authorized ``start`` on it."""
    loop.issue(number, title)
    loop.comment(number, "the-loop start")


def started_and_idle(loop: RealLoop, number: int, title: str) -> None:
    """Start ``number`` (its checkout trusted beforehand) and wait until its agent took the
    ticket prompt as a turn and ended that turn (its ``Stop`` hook)."""
    start(loop, number, title)
    loop.poll_until(lambda: "Stop" in loop.hook_names(number), what=f"#{number}'s first turn ended")
    assert loop.anthropic.wait_for(user_says(title), timeout=1)


def pane_of(loop: RealLoop, number: int) -> AgentPane:
    return AgentPane(loop.socket, target=f"={loop.target(number)}:")


def cycles(loop: RealLoop, count: int, pause: float = 0.5) -> list[Report]:
    """``count`` poll cycles, ``pause`` seconds apart."""
    reports: list[Report] = []
    for _ in range(count):
        reports.append(loop.poll())
        time.sleep(pause)
    return reports


def wait_past(moment: float) -> None:
    """Wait until the wall clock's second is past ``moment`` (GitHub stamps a comment to
    the second; an answer must be written after the notice it answers)."""
    while int(time.time()) <= moment:
        time.sleep(0.05)


def conversation(fake: FakeAnthropic, holding: str) -> RecordedRequest:
    """The turn request carrying the longest conversation that holds ``holding`` (each
    turn resends the earlier ones)."""
    turns = [r for r in fake.requests if is_turn(r) and holding in json.dumps(r.messages)]
    assert turns, "no turn reached the fake"
    return max(turns, key=lambda r: len(r.messages))


def user_index(request: RecordedRequest, text: str) -> int:
    found = [i for i, t in enumerate(request.user_texts()) if text in t]
    assert len(found) == 1, f"{text!r} in {len(found)} user messages, not one"
    return found[0]


def blocked_on_permission(loop: RealLoop, number: int, command: str) -> None:
    """Poll until the permission prompt for ``command`` is said on the ticket."""
    loop.poll_until(
        lambda: loop.notices(number, "blocked on a permission prompt"),
        what="the permission prompt said on the ticket",
    )
    screen = loop.screen(loop.target(number))
    assert PERMISSION_PROMPT in screen and command in screen, screen


def delivered(loop: RealLoop, number: int, *ids: int | str) -> bool:
    return all(loop.row(number, i).get("state") == "delivered" for i in ids)


# -- 1, 2: the folder-trust dialog ---------------------------------------------------------


def test_trust_on_the_loop_answers_the_trust_dialog_and_the_ticket_reaches_the_model(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    home = loop.make_home()  # the checkout is a new folder: not trusted
    start(loop, 15, TITLE)

    loop.poll_until(
        lambda: loop.events_named("session.trust_answered"),
        what="the trust dialog answered",
    )
    turn = anthropic.wait_for(user_says(TITLE), timeout=20)

    assert "https://github.com/octo/app/issues/15" in turn.last_user_text()
    [answered] = loop.events_named("session.trust_answered")
    assert answered["work_item"] == f"github:{REPO}#15"
    # Claude Code keeps the answer under the worktree's main repository: the shared clone.
    assert list(home.claude_json()["projects"]) == [str(loop.trust_key(15))]
    assert home.claude_json()["projects"][str(loop.trust_key(15))]["hasTrustDialogAccepted"]
    assert turn.headers["x-claude-code-session-id"] == loop.live_session(15).harness_session_id
    cycles(loop, 2)
    assert loop.notices(15) == [], "a dialog the-loop answers is never said on the ticket"
    assert loop.events_named("session.blocked") == []


def test_trust_off_the_agent_is_blocked_said_once_and_a_comment_never_answers_the_dialog(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.setup(trust_checkouts=False)
    loop.make_home()
    start(loop, 15, TITLE)

    loop.poll_until(
        lambda: loop.notices(15, "blocked on a folder-trust dialog"),
        what="the trust dialog said on the ticket",
    )
    words = f"please go ahead {tag()}"
    comment = loop.comment(15, words)
    cycles(loop, 4)

    assert len(loop.notices(15, "blocked on a folder-trust dialog")) == 1
    assert len(loop.notices(15)) == 1, [c.body for c in loop.notices(15)]
    assert len(loop.events_named("session.blocked")) == 1
    assert anthropic.turns() == [], "no turn: the agent never got past the dialog"
    assert not any_request_holds(anthropic, words)
    target = loop.target(15)
    dead, _ = loop.pane(target)
    assert not dead, "the comment's Enter did not choose 'No, exit'"
    screen = loop.screen(target)
    assert "Yes, I trust this folder" in screen and words not in screen
    assert loop.row(15, comment.id)["state"] == "waiting"
    assert loop.events_named("session.trust_answered") == []


# -- 3, 4: a permission prompt ------------------------------------------------------------


def test_comments_during_a_permission_prompt_wait_and_go_in_once_in_order_after_deny(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    proof = f"PROOF-{tag()}"
    loop.setup(args=PROMPTING)
    loop.make_home(trusted=[15])
    anthropic.script(bash(f"touch {proof}", "Make the proof file"), when=user_says(TITLE))
    start(loop, 15, TITLE)
    blocked_on_permission(loop, 15, f"touch {proof}")
    checkout, target = loop.checkout_path(15), loop.target(15)

    mark = tag()
    first = loop.comment(15, f"first words {mark}")
    second = loop.comment(15, f"second words {mark}")
    cycles(loop, 3)

    assert [loop.row(15, c.id)["state"] for c in (first, second)] == ["waiting", "waiting"]
    assert not (checkout / proof).exists(), "no comment's Enter approved the command"
    assert PERMISSION_PROMPT in loop.screen(target)
    assert not any_request_holds(anthropic, mark)
    [notice] = loop.notices(15, "blocked on")
    assert f"```text\nBash: touch {proof}\n" in notice.body, "the command, quoted as untrusted data"
    assert "`the-loop allow`" in notice.body and "`the-loop deny`" in notice.body
    assert len(loop.events_named("session.blocked")) == 1

    wait_past(time.time())  # the notice is older than the answer, by GitHub's clock too
    loop.comment(15, "the-loop deny")
    loop.poll_until(
        lambda: delivered(loop, 15, first.id, second.id),
        what="both comments delivered after the deny",
    )

    assert not (checkout / proof).exists(), "denied: the command never ran"
    [answered] = loop.events_named("session.answered")
    assert (answered["answer"], answered["actor"]) == ("deny", "alice")
    assert loop.notices(15, "denied the agent's permission prompt, as @alice asked")
    assert "denied here by @alice" in loop.notices(15, "was blocked on a permission prompt")[0].body
    assert len(loop.notices(15, "blocked on a permission prompt")) == 1
    request = conversation(anthropic, f"second words {mark}")
    assert user_index(request, f"first words {mark}") < user_index(request, f"second words {mark}")
    assert user_turns_with(anthropic, f"first words {mark}") == 1
    assert user_turns_with(anthropic, f"second words {mark}") == 1
    prompts = [
        str(e.get("prompt", "")) for e in loop.hook_events(15) if e["event"] == "UserPromptSubmit"
    ]
    assert sum(p.count(f"first words {mark}") for p in prompts) == 1
    assert sum(p.count(f"second words {mark}") for p in prompts) == 1


def test_a_strangers_allow_is_refused_and_the_command_does_not_run(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    proof = f"PROOF-{tag()}"
    loop.setup(args=PROMPTING)
    loop.make_home(trusted=[15])
    anthropic.script(bash(f"touch {proof}", "Make the proof file"), when=user_says(TITLE))
    start(loop, 15, TITLE)
    blocked_on_permission(loop, 15, f"touch {proof}")
    checkout, target = loop.checkout_path(15), loop.target(15)

    stranger = loop.comment(15, "the-loop allow", login="mallory")
    reports = cycles(loop, 3)

    refusals = [a for a in loop.actions(reports, "refused") if a["actor"] == "mallory"]
    assert [(a["verb"], a["reason"], a["commentId"]) for a in refusals] == [
        ("allow", "not-authorized", stranger.id)
    ]
    assert [e["login"] for e in loop.events_named("poll.unauthorized")] == ["mallory"]
    assert loop.events_named("session.answered") == []
    assert not (checkout / proof).exists()
    assert PERMISSION_PROMPT in loop.screen(target)

    # The prompt was answerable all along: the authorized login's allow runs it.
    wait_past(time.time())
    loop.comment(15, "the-loop allow")
    loop.poll_until(lambda: (checkout / proof).exists(), what="the allowed command ran")
    assert [e["actor"] for e in loop.events_named("session.answered")] == ["alice"]


# -- 5: the API-key dialog ----------------------------------------------------------------


def test_an_unapproved_api_key_refuses_the_start_until_doctor_fix_approves_it(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    home = loop.make_home(trusted=[15], api_key_approved=False)
    start(loop, 15, TITLE)

    report = loop.poll()

    [command] = loop.actions([report], "command")
    assert (command["verb"], command["outcome"]) == ("start", "failed"), report
    [failure] = [f for f in report["summary"]["failed"] if "#15: start:" in f]
    assert "API key" in failure and "`the-loop doctor`" in failure, failure
    assert len(failure.splitlines()) == 1
    assert loop.session(15) is None, "no session is left waiting at the dialog"
    assert loop.sessions_on_server() == [], "no agent was left running"
    assert loop.events_named("session.spawn_failed")
    assert anthropic.requests == []

    code, out, err = loop.run_cli(["doctor", "--fix"])
    assert code in (0, 1), err
    assert "fixed" in out and "customApiKeyResponses" in out, out
    assert FAKE_API_KEY[-20:] in home.claude_json()["customApiKeyResponses"]["approved"]

    loop.comment(15, "the-loop start")
    loop.poll_until(lambda: anthropic.turns(), what="the ticket's turn after the fix")
    assert anthropic.wait_for(user_says(TITLE), timeout=1)
    assert loop.live_session(15)


# -- 6: a dead pane beside a live agent ----------------------------------------------------


def test_a_dead_pane_gets_no_paste_and_the_server_and_the_other_agent_survive(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.make_home(trusted=[15, 16])
    started_and_idle(loop, 15, TITLE)
    started_and_idle(loop, 16, OTHER_TITLE)
    dead_target, live_target = loop.target(15), loop.target(16)
    pane_of(loop, 15).say("/exit")
    assert wait_until(lambda: loop.pane(dead_target)[0], timeout=15), "the agent exited"

    mark = tag()
    for_dead = loop.comment(15, f"for the exited agent {mark}")
    for_live = loop.comment(16, f"for the live agent {mark}")
    report = loop.poll()

    assert loop.row(15, for_dead.id)["state"] == "waiting", "nothing pasted while it is dead"
    assert [e["work_item"] for e in loop.events_named("session.restarted")] == [f"github:{REPO}#15"]
    kept = [s for s in loop.sessions_on_server() if s.startswith(dead_target + "~")]
    assert len(kept) == 1, loop.sessions_on_server()
    assert loop.pane(kept[0])[0], "the dead pane stays dead"
    assert mark not in loop.screen(kept[0])
    assert report["exit"] == 0

    loop.poll_until(
        lambda: delivered(loop, 16, for_live.id) and delivered(loop, 15, for_dead.id),
        what="both comments delivered",
    )
    assert loop.server_alive()
    assert loop.target(16) == live_target and not loop.pane(live_target)[0]
    live_turn = anthropic.wait_for(user_says(f"for the live agent {mark}"), timeout=1)
    assert user_turns_with(anthropic, f"for the live agent {mark}") == 1
    assert f"for the exited agent {mark}" not in live_turn.last_user_text()
    restarted_turn = anthropic.wait_for(user_says(f"for the exited agent {mark}"), timeout=1)
    assert mark not in loop.screen(kept[0]) and loop.pane(kept[0])[0]
    attempts = loop.row(15, for_dead.id)["attempts"]
    assert restarted_turn.last_user_text().count(f"for the exited agent {mark}") == 1, (
        f"doubled ({attempts} attempts)"
    )
    assert not [s for s in loop.sessions_on_server() if s.startswith(live_target + "~")]


# -- 7: a long review ---------------------------------------------------------------------


def filler(label: str, size: int) -> str:
    """``size`` characters of distinct words, on one line, starting with ``label``."""
    words, index = [label + ":"], 0
    while sum(len(w) + 1 for w in words) < size:
        words.append(f"w{index}")
        index += 1
    return " ".join(words)[:size]


def test_a_review_of_about_24000_characters_reaches_the_agent_whole_as_one_turn(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)
    loop.tick()
    loop.github.add_pull(REPO, 16, title="Fix it", head="loop/github-octo-app-15", login=BOT)
    loop.poll_until(lambda: loop.live_session(15).pull_requests, what="the PR linked")

    mark = tag()
    body = filler(f"review body {mark}", 3300)
    inline = [
        {"path": f"src/mod{n}.py", "line": 10 + n, "body": filler(f"inline {n} {mark}", 3300)}
        for n in range(6)
    ]
    loop.tick()
    review = loop.github.add_review(REPO, 16, login="alice", body=body, comments=inline)
    key = f"review-{review.id}"
    loop.poll_until(lambda: delivered(loop, 15, key), what="the review delivered")

    def turns() -> list[Any]:
        return [r for r in anthropic.requests if is_turn(r) and body in r.last_user_text()]

    # Delivered once its UserPromptSubmit hook saw it; the model's request comes just after.
    assert wait_until(lambda: bool(turns()), timeout=30), "the turn reached the model"
    [turn] = turns()
    text = turn.last_user_text()
    assert "[the-loop] Review by @alice on " in text
    assert f"> {body}" in text
    for n, comment in enumerate(inline):
        assert f"> {comment['body']}" in text, f"inline comment {n} is whole"
        assert f"src/mod{n}.py:{10 + n}" in text
    assert "The review was cut" not in text
    paste = text[text.index("[the-loop] Review by") :]
    assert 23_500 <= len(paste) <= 24_000, len(paste)
    assert user_turns_with(anthropic, body) == 1, "one turn, never split"
    [event] = loop.events_named("poll.review_delivered")
    assert (event["key"], event["attempt"]) == (key, 1)


# -- 8: a start that dies at once ------------------------------------------------------------


def test_an_agent_that_dies_at_once_is_restarted_once_then_said_once(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.setup(args=["--no-such-flag"])
    loop.make_home(trusted=[15])
    start(loop, 15, TITLE)

    report = loop.poll()
    [command] = loop.actions([report], "command")
    pane = pane_of(loop, 15)
    # (Debian's tmux 3.3a may miss the exit's SIGCHLD: exit_status kicks its server.)
    assert wait_until(lambda: pane.exit_status() is not None, timeout=10)
    assert pane.exit_status() == 1, "error: unknown option '--no-such-flag'"
    outcome = command["outcome"]
    [listed] = [s for s in loop.sessions_json() if s["workItem"] == f"github:{REPO}#15"]
    assert listed["agent"]["state"] == "exited", listed["agent"]
    assert listed["agent"]["exitStatus"] == 1, (listed["agent"], loop.describe([report]))

    comment = loop.comment(15, f"are you there {tag()}")
    reports = cycles(loop, 8, pause=0.7)

    assert len(loop.notices(15, "exited again")) == 1, loop.describe(reports)
    assert len(loop.events_named("session.exited_again")) == 1
    assert loop.row(15, comment.id)["state"] == "waiting", "the comment waits for a start"
    assert anthropic.turns() == []
    # The poller's spawn does not wait for the agent to come up: it reports what it did.
    assert outcome in ("started", "failed"), outcome
    restarts = loop.events_named("session.restarted")
    assert len(restarts) == 1, f"restarted {len(restarts)} times:\n" + loop.describe(reports)


def test_a_restart_that_dies_before_its_first_hook_is_not_restarted_again(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)  # its hook log says it started, and ended a turn
    target = loop.target(15)
    pane_of(loop, 15).say("/exit")
    assert wait_until(lambda: loop.pane(target)[0], timeout=15)
    loop.setup(args=["--no-such-flag"])  # from now on it dies at once, before any hook

    comment = loop.comment(15, f"are you there {tag()}")
    # Cycles more than a second apart: each death is in a later second than its restart.
    reports = cycles(loop, 6, pause=1.2)

    restarts = loop.events_named("session.restarted")
    assert len(restarts) == 1, f"restarted {len(restarts)} times:\n" + loop.describe(reports)
    assert len(loop.notices(15, "exited again")) == 1
    assert loop.row(15, comment.id)["state"] == "waiting"
    kept = [s for s in loop.sessions_on_server() if s.startswith(target + "~")]
    assert len(kept) == 1, kept


# -- 9: resume with and without a transcript -------------------------------------------------


def test_a_comment_for_an_exited_agent_resumes_its_conversation(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.make_home(trusted=[15])
    started_and_idle(loop, 15, TITLE)
    session_id = loop.live_session(15).harness_session_id
    target = loop.target(15)
    pane_of(loop, 15).say("/exit")
    assert wait_until(lambda: loop.pane(target)[0], timeout=15)

    words = f"what was the ticket again {tag()}"
    comment = loop.comment(15, words)
    loop.poll_until(lambda: delivered(loop, 15, comment.id), what="the comment delivered")

    turn = anthropic.wait_for(user_says(words), timeout=5)
    assert turn.headers["x-claude-code-session-id"] == session_id, "the same session"
    earlier = turn.user_texts()[:-1]
    assert any(TITLE in t for t in earlier), "the earlier turn is in its messages"
    assert len(loop.events_named("session.restarted")) == 1
    starts = [e for e in loop.hook_events(15) if e["event"] == "SessionStart"]
    assert [e.get("source") for e in starts] == ["startup", "resume"]
    # Once, never doubled: a paste whose Enter the just-resumed agent lost sits in its
    # input box; pasted again, the turn would hold the comment twice.
    attempts = loop.row(15, comment.id)["attempts"]
    assert turn.last_user_text().count(words) == 1, f"doubled ({attempts} attempts)"


def test_an_agent_that_never_had_a_turn_is_restarted_fresh_not_resumed(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.setup(trust_checkouts=False)
    loop.make_home()
    start(loop, 15, TITLE)
    loop.poll_until(
        lambda: loop.notices(15, "blocked on a folder-trust dialog"),
        what="the trust dialog said",
    )
    target = loop.target(15)
    pane = pane_of(loop, 15)
    assert pane.highlighted("No, exit", pane.settle())  # drawn twice: let it settle
    pane.keys("Enter")  # "No, exit": Claude Code exits before any turn
    assert wait_until(lambda: loop.pane(target)[0], timeout=15), loop.describe()
    assert anthropic.turns() == []
    loop.make_home(trusted=[15])  # the folder trusted since, by a person

    words = f"start working please {tag()}"
    comment = loop.comment(15, words)
    loop.poll_until(lambda: delivered(loop, 15, comment.id), what="the comment delivered")

    assert "No conversation found" not in loop.screen(loop.target(15))
    assert loop.notices(15, "exited again") == []
    assert len(loop.events_named("session.restarted")) == 1
    # No transcript to resume: a fresh start, with the ticket's prompt again.
    assert anthropic.wait_for(user_says(TITLE), timeout=1)
    assert anthropic.wait_for(user_says(words), timeout=1)


# -- 10: a comment after a manual start -----------------------------------------------------


def test_a_comment_after_a_manual_sessions_start_reaches_the_agent(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    loop.make_home(trusted=[15])
    loop.issue(15, TITLE)
    code, _, err = loop.run_cli(["sessions", "start", "--work-item", item_ref(15).ref])
    assert code == 0, err
    assert anthropic.wait_for(user_says(TITLE), timeout=20)
    wait_past(time.time())  # GitHub stamps to the second: the comment is after the start

    words = f"a note after the manual start {tag()}"
    comment = loop.comment(15, words)
    loop.poll_until(
        lambda: delivered(loop, 15, comment.id) or any_request_holds(anthropic, words),
        what="the comment delivered",
        timeout=25,
    )
    assert anthropic.wait_for(user_says(words), timeout=10)
    assert delivered(loop, 15, comment.id)


def test_a_manual_sessions_start_answers_the_trust_dialog_of_a_new_checkout(
    loop: RealLoop, anthropic: FakeAnthropic
) -> None:
    """No poller runs: `sessions start` itself answers the folder-trust dialog (with
    trustCheckouts on), and the ticket's prompt reaches the model."""
    loop.make_home()  # the checkout is a new folder: not trusted
    loop.issue(15, TITLE)
    code, _, err = loop.run_cli(["sessions", "start", "--work-item", item_ref(15).ref])
    assert code == 0, err
    assert "trusted its checkout" in err
    assert anthropic.wait_for(user_says(TITLE), timeout=20)
    [answered] = loop.events_named("session.trust_answered")
    assert answered["work_item"] == f"github:{REPO}#15"
