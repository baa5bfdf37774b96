"""Issue 12, refs: one item, one session, however GitHub's owner and repository are
capitalised or the URL is copied — through ``main([...])`` with real tmux and real git
(a local bare repository as the remote)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.gitrepo import git, make_remote
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.test_sessions_integration import NO_TICKET_WARNING, TARGET, Loop

ITEM = "github:octo/app#15"
LEGACY_REF = "github:Octo/App#15"
LEGACY_NAME = "github-Octo-App-15.json"
COPIED_URL = "https://github.com/Octo/App/issues/15#issuecomment-1"


@pytest.fixture
def loop(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> Loop:
    world = Loop(tmp_path, tmux_socket)
    world.configure_routing()
    return world


def _start(loop: Loop, ref: str) -> None:
    code, _, err = loop.output("sessions", "start", "--work-item", ref)
    assert (code, err) == (0, NO_TICKET_WARNING)  # named by its canonical ref
    assert wait_until(lambda: "ready" in loop.tmux().capture(TARGET))


def _record_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("github-*.json"))


def test_a_second_start_by_another_spelling_meets_the_first_session_and_clones_nothing(
    loop: Loop,
) -> None:
    # The mapping is spelled as on GitHub's page; the refs lowercase it too.
    loop.configure_routing(workspace={"repositories": {"Octo/App": str(loop.remote_repository())}})
    _start(loop, "github:octo/app#15")
    code, out, err = loop.output("sessions", "start", "--work-item", COPIED_URL)
    assert (code, err) == (0, "")
    assert out.startswith(f"{ITEM}: already running: command session ")
    [listed] = loop.listing()
    assert listed["workItem"] == ITEM
    assert _record_files(loop.state / "local") == ["github-octo-app-15.json"]
    assert not (loop.workspace / "github.com" / "Octo").exists()


@pytest.mark.parametrize(
    "spelling", ["https://GitHub.com/Octo/App/issues/15", "Octo/App#15", "GitHub:octo/app#15"]
)
def test_a_start_by_a_capitalised_spelling_uses_the_lowercase_ref_everywhere(
    loop: Loop, spelling: str
) -> None:
    _start(loop, spelling)
    assert loop.worktree.is_dir()  # .../github.com/octo/app/github-octo-app-15
    [listed] = loop.listing()
    assert (listed["workItem"], listed["tmuxTarget"]) == (ITEM, TARGET)
    assert loop.portable()["ref"] == ITEM


def _as_older_release_wrote_it(directory: Path) -> None:
    """Rename the item's record in ``directory`` to its mixed-case name, the ref inside
    as typed, as a release before lowercase refs wrote it."""
    canonical = directory / "github-octo-app-15.json"
    text = canonical.read_text(encoding="utf-8").replace(ITEM, LEGACY_REF)
    (directory / LEGACY_NAME).write_text(text.replace("/octo/app/", "/Octo/App/"), "utf-8")
    canonical.unlink()


def test_an_item_an_older_release_recorded_mixed_case_is_listed_stopped_and_reset_by_any_spelling(
    loop: Loop,
) -> None:
    _start(loop, ITEM)
    for directory in (loop.state / "local", loop.state / "portable"):
        _as_older_release_wrote_it(directory)
    (loop.state / "portable" / "index.json").unlink()  # rebuilt from the records
    [listed] = loop.listing()
    assert (listed["workItem"], listed["status"]) == (ITEM, "active")

    code, out, err = loop.output("sessions", "start", "--work-item", "Octo/App#15")
    assert (code, err) == (0, "")
    assert out.startswith(f"{ITEM}: already running: command session ")

    code, out, err = loop.output("sessions", "stop", "--work-item", COPIED_URL)
    assert (code, err) == (0, "")
    assert f"{ITEM}: removed the checkout {loop.worktree} (clean)\n" in out
    for directory in (loop.state / "local", loop.state / "portable"):
        assert _record_files(directory) == [LEGACY_NAME]  # written back, never doubled
    assert json.loads((loop.state / "local" / LEGACY_NAME).read_text())["workItem"] == ITEM
    assert loop.listing()[0]["status"] == "closed"

    code, out, err = loop.output("sessions", "reset", "--work-item", "github:OCTO/app#15")
    assert (code, err) == (0, "")
    for directory in (loop.state / "local", loop.state / "portable"):
        assert _record_files(directory) == []
    assert loop.listing() == []


def test_a_checkout_an_older_release_made_mixed_case_is_found_kept_with_its_work_and_removed(
    loop: Loop,
) -> None:
    loop.configure_routing(workspace={"strategy": "clone"})
    _start(loop, ITEM)
    made = loop.workspace / ".work-items" / "github-octo-app-15" / "github.com" / "octo" / "app"
    legacy = loop.workspace / ".work-items" / "github-Octo-App-15" / "github.com" / "Octo" / "App"
    items = loop.workspace / ".work-items"
    (items / "github-octo-app-15").rename(items / "github-Octo-App-15")
    (legacy.parent.parent / "octo").rename(legacy.parent)
    (legacy.parent / "app").rename(legacy)
    record = loop.state / "local" / "github-octo-app-15.json"
    record.write_text(record.read_text(encoding="utf-8").replace(str(made), str(legacy)), "utf-8")
    (legacy / "new.txt").write_text("the agent's work\n", encoding="utf-8")

    code, out, err = loop.output("sessions", "stop", "--work-item", COPIED_URL)
    assert (code, err) == (0, "")
    assert out.endswith(
        f"{ITEM}: kept the checkout {legacy}: 1 uncommitted file — `--force` removes it\n"
    )
    assert (legacy / "new.txt").read_text(encoding="utf-8") == "the agent's work\n"
    assert not made.exists()

    code, out, err = loop.output("sessions", "cleanup", "--work-item", "Octo/App#15", "--force")
    assert (code, err) == (0, "")
    assert f"removed the checkout {legacy} — 1 uncommitted file was discarded (--force)" in out
    assert not legacy.exists()


def test_a_branch_an_older_release_named_mixed_case_is_reused_by_the_next_start(
    loop: Loop,
) -> None:
    _start(loop, ITEM)
    assert loop.output("sessions", "stop", "--work-item", ITEM)[0] == 0
    assert not loop.worktree.exists()  # clean: removed; its branch stays in the shared clone
    shared = loop.workspace / "github.com" / "octo" / "app"
    git(shared, "branch", "-m", "loop/github-octo-app-15", "loop/github-Octo-App-15")
    before = git(shared, "rev-parse", "loop/github-Octo-App-15").strip()

    _start(loop, "Octo/App#15")
    head = git(loop.worktree, "rev-parse", "--abbrev-ref", "HEAD").strip()
    assert head == "loop/github-Octo-App-15"
    assert git(loop.worktree, "rev-parse", "HEAD").strip() == before
    branches = git(shared, "for-each-ref", "--format=%(refname:short)", "refs/heads/loop")
    assert branches.split() == ["loop/github-Octo-App-15"]  # no second branch made


def test_a_clone_checks_out_the_remote_branch_an_older_release_pushed_mixed_case(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    world = Loop(tmp_path, tmux_socket)
    world.remote = make_remote(
        tmp_path, "app", branches={"loop/github-Octo-App-15": {"work.txt": "pushed\n"}}
    )
    world.configure_routing(workspace={"strategy": "clone"})
    _start(world, "https://github.com/Octo/App/pull/15")
    items = world.workspace / ".work-items"
    checkout = items / "github-octo-app-15" / "github.com" / "octo" / "app"
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == "loop/github-Octo-App-15"
    assert (checkout / "work.txt").read_text(encoding="utf-8") == "pushed\n"
