"""Claims with a GitHub App's installation token, end to end (`poll --once` of two state
roots against the loopback fake, a tmux server each, real git): GitHub refuses such a
token ``GET /user``, so each machine learns its login as the author of its own first
claim, keeps it in ``local/claims.json``, and the lowest claim still decides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.gitrepo import make_remote
from tests.helpers.machines import REPO, TOKEN, Machine, claims_on
from tests.helpers.tmuxsock import private_tmux_socket

APP = "the-loop-app[bot]"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: APP}, app_tokens={TOKEN})) as fake:
        fake.add_issue(REPO, 15, title="Fix the wobbling widget", labels=("the-loop",))
        yield fake


@pytest.fixture
def machines(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[Machine]]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    remote = make_remote(tmp_path, "app")
    with private_tmux_socket() as one, private_tmux_socket() as two:
        yield [
            Machine(tmp_path / "laptop", name="laptop", socket=one, github=github, remote=remote),
            Machine(
                tmp_path / "buildbox", name="buildbox", socket=two, github=github, remote=remote
            ),
        ]


def test_an_app_token_claims_learns_its_login_from_its_claim_and_the_first_claim_wins(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    github.add_comment(REPO, 15, "hello", login="alice")
    for machine in machines:
        machine.poll()
    github.advance(5)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")

    report = laptop.poll()
    assert report["failed"] == [], "an App's token refused GET /user failed the poll"
    assert laptop.live(15)
    [refused] = github.logged("GET", "/user")
    assert refused.status == 403
    [claim] = claims_on(github, 15)
    assert (claim.login, claim.user_type) == (APP, "Bot")
    assert f"start={start.id} " in claim.body
    book = json.loads((laptop.layout.local_dir / "claims.json").read_text(encoding="utf-8"))
    assert list(book["logins"].values()) == [APP], "the login learned is kept"
    assert TOKEN not in json.dumps(book), "the book never holds the token"

    report = buildbox.poll()
    assert report["failed"] == []
    assert not buildbox.live(15), "the second machine spawned a second agent"
    assert claims_on(github, 15) == [claim], "the loser's own claim is deleted"
    [lost] = buildbox.events_named("claim.lost")
    assert (lost["name"], lost["comment_id"]) == ("laptop", claim.id)

    github.advance(5)
    github.add_comment(REPO, 15, "please also fix the wheel", login="alice")
    assert laptop.poll()["delivered"] == 1, "the winner's next cycle knows its login"
    assert buildbox.poll()["delivered"] == 0
