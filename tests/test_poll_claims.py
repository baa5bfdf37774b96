"""Machines sharing a repository agree through the ticket: a start is claimed with one
marked comment, the lowest claim wins, the winner spawns and a loser deletes its own
claim and records who holds the item (`poll --once` of two or three state roots against
the loopback fake, a tmux server each, real git)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_github import FakeComment, FakeGitHub, serve
from tests.helpers.gitrepo import make_remote
from tests.helpers.machines import BOT, REPO, TOKEN, Machine, claims_on
from tests.helpers.tmuxsock import private_tmux_socket, wait_until
from the_loop.intake.claims import claim_body
from the_loop.sessions.machine import MACHINE_FILE, machine_id


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(tokens={TOKEN: BOT})) as fake:
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


def id_of(machine: Machine) -> str:
    """The machine's id, made the first time it is asked (as its first claim would)."""
    local, locks = machine.layout.local_dir, machine.layout.local_locks_dir
    return machine_id(local / MACHINE_FILE, locks / "machine.lock")


def known(machines: list[Machine], github: FakeGitHub) -> None:
    """Each machine has met item 15 (its thread baselined) and moved its cursor."""
    github.add_comment(REPO, 15, "hello", login="alice")
    for machine in machines:
        machine.poll()
    github.advance(5)


def test_the_first_machine_to_claim_spawns_and_the_other_records_it_as_held_elsewhere(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    laptop.poll()
    assert laptop.live(15)
    [claim] = claims_on(github, 15)
    assert claim.body.startswith("the-loop: starting an agent on laptop")
    assert f"start={start.id} " in claim.body
    report = buildbox.poll()
    assert not buildbox.live(15), "the second machine spawned a second agent"
    assert claims_on(github, 15) == [claim], "the machine that saw the winner posted a claim"
    [lost] = buildbox.events_named("claim.lost")
    assert (lost["name"], lost["start"], lost["comment_id"]) == ("laptop", start.id, claim.id)
    control = buildbox.store.section(f"github:{REPO}#15", "control") or {}
    assert control["heldBy"]["name"] == "laptop"
    assert report["commands"] == 1
    code, out, _ = buildbox.run_cli(["sessions", "list", "--format", "json"])
    [row] = json.loads(out)["items"]
    assert code == 0 and (row["workItem"], row["status"]) == (f"github:{REPO}#15", "held-elsewhere")
    assert row["heldBy"]["name"] == "laptop"
    code, out, _ = buildbox.run_cli(["sessions", "list"])
    assert "held by laptop" in out
    code, out, _ = laptop.run_cli(["sessions", "list", "--format", "json"])
    assert [r["status"] for r in json.loads(out)["items"]] == ["active"]


def test_two_machines_in_one_round_each_post_and_the_lowest_claim_wins(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, _ = machines
    known(machines, github)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    # Another machine's claim lands between the laptop's read of its batch and its own
    # POST: the laptop sees it only in the thread it reads after posting.
    racing: list[FakeComment] = []

    def other_machine_first(_repository: str, number: int, _body: str) -> None:
        if not racing:
            racing.append(
                github.add_comment(
                    REPO,
                    number,
                    "the-loop: starting an agent on buildbox\n\n<!-- the-loop:agent-comment -->\n"
                    f"<!-- the-loop:claim start={start.id} machine={'b' * 32} nonce={'1' * 16} -->",
                    login=BOT,
                )
            )

    github.before_create = other_machine_first
    laptop.poll()
    first = racing[0]
    assert not laptop.live(15)
    assert claims_on(github, 15) == [first], "the loser did not delete its own claim"
    assert [c.body.splitlines()[0] for c in github.deleted] == [
        "the-loop: starting an agent on laptop"
    ]


def test_a_forged_or_edited_claim_never_decides_a_round(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, _ = machines
    known(machines, github)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    forged = (
        "the-loop: starting an agent on elsewhere\n\n<!-- the-loop:agent-comment -->\n"
        f"<!-- the-loop:claim start={start.id} machine={'c' * 32} nonce={'2' * 16} -->"
    )
    github.add_comment(REPO, 15, forged, login="mallory")
    edited = github.add_comment(REPO, 15, forged, login=BOT)
    github.advance(1)
    github.edit_comment(edited.id, forged + "\n")
    laptop.poll()
    assert laptop.live(15), "a forged or edited claim kept the start from its machine"
    assert not laptop.events_named("claim.lost")


def test_a_start_on_a_named_machine_is_claimed_by_that_machine_only(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")  # the buildbox is seen
    buildbox.poll()
    laptop.poll()
    assert buildbox.live(15) and not laptop.live(15)
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop stop", login="alice")
    for machine in machines:
        machine.poll()
    assert not buildbox.live(15)
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start on laptop", login="alice")
    buildbox.poll()  # knows the laptop? not yet: it has never seen it claim
    laptop.poll()
    assert wait_until(lambda: laptop.live(15))
    assert not buildbox.live(15)


def test_a_start_on_an_unknown_machine_gets_one_notice_and_starts_nothing(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start on nowhere", login="alice")
    laptop.poll()
    buildbox.poll()
    assert not laptop.live(15) and not buildbox.live(15)
    with github.lock:
        notices = [c for c in github.comments if "the-loop:no-machine " in c.body]
    assert len(notices) == 1
    assert "no machine named nowhere" in notices[0].body
    _, out, _ = laptop.run_cli(["events", "--format", "json"])
    assert "claim.unknown_machine" in out
    assert "laptop" in notices[0].body


def test_after_a_stop_a_new_start_lets_another_machine_claim(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    laptop.poll()
    buildbox.poll()
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop stop", login="alice")
    laptop.poll()
    buildbox.poll()
    assert not laptop.live(15)
    control = buildbox.store.section(f"github:{REPO}#15", "control") or {}
    assert "heldBy" not in control
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    buildbox.poll()  # the laptop is gone for good: it never polls again
    assert buildbox.live(15)


def test_comments_on_an_item_held_elsewhere_reach_no_pane_here(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    laptop.poll()
    buildbox.poll()
    github.advance(5)
    github.add_comment(REPO, 15, "please also fix the wheel", login="alice")
    assert laptop.poll()["delivered"] == 1
    assert buildbox.poll()["delivered"] == 0
    assert wait_until(lambda: "fix the wheel" in laptop.read())
    assert "fix the wheel" not in buildbox.read()


def test_claim_never_is_todays_behaviour_no_claim_comment(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with private_tmux_socket() as socket:
        alone = Machine(
            tmp_path / "alone",
            name="alone",
            socket=socket,
            github=github,
            remote=None,
            claim="never",
        )
        github.add_comment(REPO, 15, "hello", login="alice")
        alone.poll()
        github.advance(5)
        github.add_comment(REPO, 15, "the-loop start", login="alice")
        alone.poll()
        assert alone.live(15)
        assert claims_on(github, 15) == []
        assert not github.logged("GET", "/user")


def test_a_lower_claim_shown_late_takes_the_item_and_the_early_winner_yields(
    machines: list[Machine], github: FakeGitHub
) -> None:
    """GitHub shows the buildbox's claim (the lower id) only after the laptop has read
    the thread and spawned: the laptop's next cycle reads it, deletes its own claim and
    holds the item as the buildbox's, with a warning."""
    laptop, buildbox = machines
    known(machines, github)
    start = github.add_comment(REPO, 15, "the-loop start", login="alice")
    lagging: list[FakeComment] = []

    def buildbox_first_but_not_yet_visible(_repository: str, number: int, _body: str) -> None:
        if not lagging:
            body = claim_body(
                name="buildbox", start=start.id, machine=id_of(buildbox), nonce="3" * 16
            )
            lagging.append(github.add_comment(REPO, number, body, login=BOT))
            github.hidden.add(lagging[0].id)

    github.before_create = buildbox_first_but_not_yet_visible
    laptop.poll()
    assert laptop.live(15), "the laptop saw only its own claim: it took the start"
    github.before_create = None
    github.hidden.clear()
    github.advance(5)
    laptop.poll()
    [contested] = laptop.events_named("claim.contested")
    assert (contested["name"], contested["comment_id"]) == ("buildbox", lagging[0].id)
    assert claims_on(github, 15) == lagging, "the laptop kept its own claim"
    control = laptop.store.section(f"github:{REPO}#15", "control") or {}
    assert control["heldBy"]["name"] == "buildbox"
    assert not laptop.live(15), "two agents on one item: the laptop's was not ended"
    assert (laptop.home / "workspaces").exists() and any((laptop.home / "workspaces").rglob(".git"))
    github.add_comment(REPO, 15, "a note for the agent", login="alice")
    assert laptop.poll()["delivered"] == 0


def test_a_start_on_another_machine_moves_a_running_item_there_and_ends_it_here(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    buildbox.poll()  # the buildbox claims first: the laptop learns its name
    laptop.poll()
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop stop", login="alice")
    buildbox.poll()
    laptop.poll()
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    laptop.poll()
    buildbox.poll()
    assert laptop.live(15) and not buildbox.live(15)
    github.advance(5)
    github.add_comment(REPO, 15, "the-loop start on buildbox", login="alice")
    code, out, err = laptop.run_cli(["poll", "--once"])
    assert code == 0, err
    assert "held by buildbox: this machine's session ended, checkouts kept" in out, out
    assert "ran `start` for @alice" in out and ": held by buildbox" in out, out
    assert not laptop.live(15)
    buildbox.poll()
    assert buildbox.live(15)


def test_an_idle_cycle_after_a_round_posts_nothing_and_writes_no_claim_or_record(
    machines: list[Machine], github: FakeGitHub
) -> None:
    laptop, buildbox = machines
    known(machines, github)
    github.add_comment(REPO, 15, "the-loop start", login="alice")
    laptop.poll()
    buildbox.poll()
    for machine in machines:
        machine.poll()  # the round's own claim read back once as a comment

    def files(machine: Machine) -> dict[str, int]:
        roots = (machine.layout.portable_dir, machine.layout.local_dir / "claims.json")
        found = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))]
        return {str(p): p.stat().st_mtime_ns for p in found if p.is_file()}

    before = {m.name: files(m) for m in machines}
    asked = len(github.requests)
    for machine in machines:
        machine.poll()
    assert {m.name: files(m) for m in machines} == before
    idle = github.requests[asked:]
    assert [r for r in idle if r.method != "GET" or r.path == "/user"] == []
    assert all(r.status == 304 for r in idle), [(r.path, r.status) for r in idle]
