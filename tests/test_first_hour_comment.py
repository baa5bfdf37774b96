"""The comment a keyword command posts says in words what happened and who asked, with the
marker, and the poller never reads it as a command (issue 18, item 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.polling import comment
from tests.test_github_comments import TOKEN, FakeGitHub, held, write_config
from tests.test_github_comments import github as github
from the_loop.commands.common import current_user
from the_loop.intake.comments import CommentPolicy, ItemView, Reason, SessionState, classify_comment
from the_loop.intake.keywords import KeywordGrammar
from the_loop.intake.people import AuthorizedUsers

ITEM = "github:octo/app#15"


@pytest.mark.parametrize(("verb", "said"), [("pause", "Paused"), ("stop", "Stopped")])
def test_the_posted_comment_says_what_happened_and_who_asked_and_commands_nothing(
    github: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    said: str,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = held(write_config(tmp_path, github.url))
    code, out, _ = world.run_cli(["sessions", verb, "--work-item", ITEM, "--comment"])
    assert code == 0
    assert out.splitlines()[-1] == f"{ITEM}: said so on the ticket: https://github.example/c/1"
    [request] = github.requests
    body: str = request.body["body"]
    words = body.splitlines()[0]
    assert words.startswith(f"{said} the agent session for this ticket")
    assert f"as {current_user()} asked" in words
    assert body.split() != [verb] and not body.startswith(verb)
    # What the poller reads back: the marker settles it as the-loop's own, and even
    # without the marker no line of it is a keyword line.
    assert not KeywordGrammar().scan(body).is_keyword
    policy = CommentPolicy(AuthorizedUsers.of([current_user(), "alice"]))
    active = ItemView(watched=True, session=SessionState.ACTIVE)
    posted = comment(body=body, login="alice")
    assert classify_comment(posted, active, policy).reason is Reason.OWN_MARKER
