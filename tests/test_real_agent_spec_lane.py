"""The spec lane (issue 31) with the real Claude Code: the pinned version ``make agent``
installs, real tmux on a private socket, real git (a local bare repository as the
remote), the loopback fake GitHub and the loopback fake of the Messages API, driven by
the-loop's own ``poll --once`` cycles.

The stand-in agent of the lane's end-to-end tests reads its pastes from stdin; here the
lane's words go into the real agent's pane as a person's comment does, and the model
(scripted by the fake) acts on them through the agent's own Bash tool: it writes the
requirements, commits and pushes them, and runs ``the-loop done requirements`` in its
checkout with the environment the-loop gave it. A person's comment while the gate is open
reaches the model and moves nothing; ``changes`` reaches it once, with who asked and what
to change, and the model's second ``done`` reopens the gate; ``approve`` starts the
design, said in the same live session.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, bash, user_says
from tests.helpers.real_loop import AUTHORIZED, RealLoop, turns_holding, user_turns_with
from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_real_agent_loop import anthropic, github, loop  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow

NUMBER = 15
SPEC_DIR = f"docs/specs/issue-{NUMBER}"
#: The model's Bash runs unasked. Not in auto mode: its safety check never passes through
#: a fake API, and it stops at a dialog of its own (which the loop says, typing nothing).
ALLOWED = ("--permission-mode", "acceptEdits", "--allowedTools", "Bash")
PATH = f"{SPEC_DIR}/requirements.md"
GIT = "git -c user.name=agent -c user.email=agent@example.com"


def write_and_done(text: str, message: str) -> str:
    """The shell command the model sends: the requirements written with ``text`` as their
    last line, committed and pushed, then ``the-loop done requirements`` (the-loop as this
    test runs it: the same interpreter, on the agent's own environment)."""
    return _committed_and_done(f"printf %s {shlex.quote(_requirements(text))} > {PATH}", message)


def revise_and_done(text: str, message: str) -> str:
    """The command that revises them as an agent edits a document: ``text`` added, the
    review comments the-loop appended kept."""
    return _committed_and_done(f"printf '\\n%s\\n' {shlex.quote(text)} >> {PATH}", message)


def _committed_and_done(write: str, message: str) -> str:
    return " && ".join(
        [
            f"mkdir -p {SPEC_DIR}",
            write,
            f"{GIT} add -- {PATH}",
            f"{GIT} commit --quiet -m {shlex.quote(message)} -- {PATH}",
            f"{GIT} push --quiet origin HEAD",
            f"{shlex.quote(sys.executable)} -m the_loop done requirements",
        ]
    )


def _requirements(text: str) -> str:
    return "\n".join(
        [
            "# requirements",
            "",
            "## Problem",
            "",
            "The widget wobbles.",
            "",
            "## Requirements",
            "",
            "It stands still.",
            "",
            "## Acceptance criteria",
            "",
            "A person sets it down and it stays.",
            "",
            text,
            "",
        ]
    )


def gates(real: RealLoop) -> list[str]:
    return [c.body for c in real.notices(NUMBER, "ready for review")]


def lane(real: RealLoop) -> dict[str, Any]:
    path = real.checkout_path(NUMBER) / SPEC_DIR / "work-item-state.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_real_agent_walks_a_gate_sent_back_once_then_approved(
    loop: RealLoop,  # noqa: F811 - the imported fixture
    anthropic: FakeAnthropic,  # noqa: F811 - the imported fixture
) -> None:
    mark = uuid.uuid4().hex[:10]
    loop.setup(args=ALLOWED)
    loop.make_home(trusted=[NUMBER])
    anthropic.script(
        bash(write_and_done("Written in round 1.", "requirements: round 1"), "Write them"),
        when=user_says("the phase now is requirements"),
    )
    anthropic.script(
        bash(revise_and_done(f"Revised: {mark}.", "requirements: round 2"), "Revise them"),
        when=user_says("asked for changes to requirements"),
    )
    loop.issue(NUMBER, "Fix the wobbling widget")
    loop.comment(NUMBER, "the-loop start spec")
    loop.poll_until(lambda: len(gates(loop)) == 1, timeout=90, what="the requirements gate said")
    document = loop.checkout_path(NUMBER) / SPEC_DIR / "requirements.md"
    assert "Written in round 1." in document.read_text(encoding="utf-8")
    assert f"{SPEC_DIR}/requirements.md" in gates(loop)[0]

    # A person's words while the gate is open reach the agent and decide nothing.
    aside = loop.comment(NUMBER, f"I have not approved this yet {mark}; LGTM otherwise")
    loop.poll_until(
        lambda: user_turns_with(anthropic, f"not approved this yet {mark}") == 1,
        timeout=60,
        what="the comment reached the model",
    )
    assert lane(loop)["nodes"]["requirements"]["status"] == "waiting"

    sent_back = loop.comment(NUMBER, f"the-loop changes name the widget's limits {mark}")
    loop.poll_until(lambda: len(gates(loop)) == 2, timeout=90, what="the second round's gate")
    [changes] = turns_holding(anthropic, "asked for changes")
    said = changes.last_user_text()
    assert f"@{AUTHORIZED} asked for changes to requirements" in said
    assert f"name the widget's limits {mark}" in said
    assert f"not approved this yet {mark}" in said, "the gate's comments go back with it"
    text = document.read_text(encoding="utf-8")
    assert f"Revised: {mark}." in text and "## Review comments" in text
    for comment in (aside, sent_back):
        assert text.count(f"#issuecomment-{comment.id})") == 1, comment.id

    loop.comment(NUMBER, "the-loop approve")
    loop.poll_until(
        lambda: user_turns_with(anthropic, "the phase now is design") == 1,
        timeout=60,
        what="the design said in the same session",
    )
    assert lane(loop)["nodes"]["requirements"]["status"] == "pass"
    assert lane(loop)["currentNode"] == "design"
    assert user_turns_with(anthropic, "asked for changes to requirements") == 1, "said once"
    assert user_turns_with(anthropic, "the phase now is requirements") == 1
    assert len(loop.events_named("session.spawned")) == 1, "one session all along"
    assert loop.notices(NUMBER, "blocked on") == [], "no dialog met on the way"
