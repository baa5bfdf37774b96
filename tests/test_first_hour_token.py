"""Polling without a token refuses before any request, and a token GitHub refuses says
where it was read and what it needs (issue 18, item 15), against the loopback fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.world import World

TOKEN = "ghp_first-hour-token"
REPO = "octo/app"
ACCESS = "read access to the repositories' issues, and write access to issues to post notices"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: "the-loop-bot"})) as fake:
        fake.add_issue(REPO, 15, title="Fix it", body="It wobbles.", labels=("the-loop",))
        yield fake


def poll_world(tmp_path: Path, github: FakeGitHub, **integration: str) -> World:
    return World(
        tmp_path,
        {
            "routing": {"authorizedUsers": ["alice"]},
            "polling": {"repositories": [REPO], "labels": ["the-loop"]},
            "integrations": {"github": {"apiUrl": github.url, **integration}},
        },
    )


def no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "LOOP_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_polling_without_a_token_refuses_before_any_request_and_touches_nothing(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_token(monkeypatch)
    world = poll_world(tmp_path, github)
    code, out, err = world.run_cli(["poll", "--once"])
    assert code == 2 and out == ""
    assert github.requests == []
    assert not world.layout.root.exists()
    assert "no GitHub token" in err
    assert "$GITHUB_TOKEN and $GH_TOKEN" in err
    assert ACCESS in err


def test_without_the_named_token_variable_the_refusal_names_that_variable(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_token(monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # not read: tokenEnv names another
    world = poll_world(tmp_path, github, tokenEnv="LOOP_BOT_TOKEN")
    code, _, err = world.run_cli(["poll", "--once"])
    assert code == 2 and github.requests == []
    assert "$LOOP_BOT_TOKEN (integrations.github.tokenEnv)" in err and "$GH_TOKEN" not in err


def test_a_token_github_refuses_says_where_it_was_read_and_what_it_needs(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_token(monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_revoked")
    world = poll_world(tmp_path, github)
    code, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1, err
    [failure] = json.loads(out)["summary"]["failed"]
    assert "answered 401" in failure
    assert "GitHub refused the token" in failure
    assert "$GITHUB_TOKEN and $GH_TOKEN" in failure and ACCESS in failure
    assert "ghp_revoked" not in out + err


def test_a_403_that_is_not_a_rate_limit_says_the_same(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_token(monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    refused = json.dumps({"message": "Resource not accessible by personal access token"})
    github.fail_repository(REPO, count=5, status=403, body=refused.encode())
    world = poll_world(tmp_path, github)
    code, out, _ = world.run_cli(["poll", "--once", "--format", "json"])
    assert code == 1
    [failure] = json.loads(out)["summary"]["failed"]
    assert "answered 403" in failure and "GitHub refused the token" in failure


def test_a_rate_limit_403_is_not_called_a_refused_token(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_token(monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    github.set_budget(TOKEN, remaining=0)
    world = poll_world(tmp_path, github)
    _, out, err = world.run_cli(["poll", "--once", "--format", "json"])
    assert "refused the token" not in out + err
