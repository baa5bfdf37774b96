"""Workspaces against real git, with a local bare repository as the remote."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers.gitrepo import commit_files, git, make_remote, write_files
from the_loop.config.file import Config
from the_loop.dispatch.process import DispatchError
from the_loop.dispatch.workspace import CheckoutStatus, Workspace
from the_loop.ref import WorkItemRef

ISSUE = WorkItemRef.parse("github:octo/app#7")
OTHER_ISSUE = WorkItemRef.parse("github:octo/app#8")
PULL = WorkItemRef.parse("github:octo/app#9")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(
        tmp_path, "app", files={"README.md": "# app\n"}, branches={"feature": {"f.txt": "f\n"}}
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "workspaces"


def _workspace(root: Path, remote: Path, strategy: str = "worktree") -> Workspace:
    return Workspace(root, strategy=strategy, repositories={"octo/app": str(remote)}, timeout=60)


def _head(checkout: Path) -> str:
    return git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip()


def _files_under(root: Path) -> list[str]:
    """Every file below ``root`` except the never-removed lock files."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if not path.is_dir() and path.suffix != ".lock"
    )


# -- the worktree strategy -------------------------------------------------------------


def test_a_worktree_is_made_from_a_shared_clone_on_its_own_branch_at_the_default_branch(
    root: Path, remote: Path
) -> None:
    checkout = _workspace(root, remote).prepare(ISSUE)
    assert checkout.created is True
    assert checkout.strategy == "worktree"
    assert checkout.branch == f"loop/{ISSUE.slug}"
    assert checkout.path == root / ".worktrees" / "github.com" / "octo" / "app" / ISSUE.slug
    assert (checkout.path / "README.md").read_text() == "# app\n"
    assert _head(checkout.path) == f"loop/{ISSUE.slug}"
    assert git(checkout.path, "rev-parse", "HEAD") == git(checkout.path, "rev-parse", "origin/main")
    upstream = git(
        checkout.path, "for-each-ref", "--format=%(upstream)", f"refs/heads/loop/{ISSUE.slug}"
    )
    assert upstream.strip() == ""  # no upstream: a bare `git push` goes nowhere unasked
    shared = root / "github.com" / "octo" / "app"
    assert str(checkout.path) in git(shared, "worktree", "list")


def test_a_worktree_made_again_reuses_its_branch_and_the_commits_on_it(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    first = workspace.prepare(ISSUE)
    commit_files(first.path, {"work.txt": "the agent's work\n"}, "work")
    assert workspace.remove(first.path) is True
    again = workspace.prepare(ISSUE)
    assert (again.created, again.branch) == (True, f"loop/{ISSUE.slug}")
    assert (again.path / "work.txt").read_text() == "the agent's work\n"


@pytest.mark.parametrize("strategy", ["worktree", "clone"])
def test_a_loop_branch_the_remote_already_has_is_checked_out_tracking_it(
    tmp_path: Path, root: Path, strategy: str
) -> None:
    own = f"loop/{ISSUE.slug}"
    remote = make_remote(tmp_path, "app", branches={own: {"pushed.txt": "pushed\n"}})
    checkout = _workspace(root, remote, strategy).prepare(ISSUE)
    assert _head(checkout.path) == own
    assert (checkout.path / "pushed.txt").exists()
    upstream = git(checkout.path, "rev-parse", "--abbrev-ref", f"{own}@{{upstream}}").strip()
    assert upstream == f"origin/{own}"


def test_preparing_twice_reuses_the_checkout_and_its_work(root: Path, remote: Path) -> None:
    workspace = _workspace(root, remote)
    first = workspace.prepare(ISSUE)
    (first.path / "notes.txt").write_text("work in progress\n")
    second = workspace.prepare(ISSUE)
    assert (second.path, second.created) == (first.path, False)
    assert (second.path / "notes.txt").read_text() == "work in progress\n"


def test_a_second_item_fetches_the_shared_clone_and_sees_new_commits(
    tmp_path: Path, root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    workspace.prepare(ISSUE)
    pusher = tmp_path / "pusher"
    git(tmp_path, "clone", "--quiet", str(remote), str(pusher))
    commit_files(pusher, {"new.txt": "new\n"}, "a newer commit")
    git(pusher, "push", "--quiet", "origin", "main")
    checkout = workspace.prepare(OTHER_ISSUE)
    assert (checkout.path / "new.txt").exists()


def test_a_branch_is_checked_out_as_a_local_branch_tracking_origin(
    root: Path, remote: Path
) -> None:
    checkout = _workspace(root, remote).prepare(PULL, branch="feature")
    assert (checkout.path / "f.txt").read_text() == "f\n"
    assert _head(checkout.path) == "feature"
    upstream = git(checkout.path, "rev-parse", "--abbrev-ref", "feature@{upstream}").strip()
    assert upstream == "origin/feature"


def test_a_branch_that_does_not_exist_fails_and_leaves_nothing_behind(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    with pytest.raises(DispatchError, match="branch 'nope' does not exist"):
        workspace.prepare(PULL, branch="nope")
    assert not workspace.checkout_path(PULL).exists()
    assert not workspace.shared_clone_path(PULL).exists()
    assert _files_under(root) == []


def test_a_failed_worktree_keeps_an_existing_shared_clone_without_stale_entries(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    workspace.prepare(ISSUE)
    with pytest.raises(DispatchError):
        workspace.prepare(PULL, branch="nope")
    shared = workspace.shared_clone_path(PULL)
    assert (shared / ".git").is_dir()
    assert not workspace.checkout_path(PULL).exists()
    assert PULL.slug not in git(shared, "worktree", "list")
    assert (workspace.checkout_path(ISSUE) / "README.md").exists()


def test_an_unreachable_remote_fails_and_leaves_nothing_behind(root: Path, tmp_path: Path):
    workspace = Workspace(root, repositories={"octo/app": str(tmp_path / "missing.git")})
    with pytest.raises(DispatchError, match="git clone"):
        workspace.prepare(ISSUE)
    assert _files_under(root) == []
    assert not workspace.shared_clone_path(ISSUE).exists()


def test_removing_a_worktree_returns_true_then_false(root: Path, remote: Path) -> None:
    workspace = _workspace(root, remote)
    checkout = workspace.prepare(ISSUE)
    (checkout.path / "scratch.txt").write_text("uncommitted\n")
    assert workspace.remove(checkout.path) is True
    assert not checkout.path.exists()
    shared = workspace.shared_clone_path(ISSUE)
    assert str(checkout.path) not in git(shared, "worktree", "list")
    assert workspace.remove(checkout.path) is False
    assert workspace.prepare(ISSUE).created is True


def test_a_worktree_deleted_by_hand_is_pruned_and_can_be_made_again(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    checkout = workspace.prepare(ISSUE)
    shutil.rmtree(checkout.path)
    assert workspace.remove(checkout.path) is False
    assert str(checkout.path) not in git(workspace.shared_clone_path(ISSUE), "worktree", "list")
    assert workspace.prepare(ISSUE).created is True


# -- the clone strategy ----------------------------------------------------------------


def test_the_clone_strategy_makes_a_full_clone_per_item(root: Path, remote: Path) -> None:
    workspace = _workspace(root, remote, "clone")
    checkout = workspace.prepare(ISSUE)
    expected = root / ".work-items" / ISSUE.slug / "github.com" / "octo" / "app"
    assert (checkout.path, checkout.created, checkout.strategy) == (expected, True, "clone")
    assert _head(checkout.path) == f"loop/{ISSUE.slug}"
    assert (checkout.path / "README.md").exists()
    assert workspace.prepare(ISSUE).created is False
    assert not workspace.shared_clone_path(ISSUE).exists()


def test_the_clone_strategy_checks_out_a_given_branch(root: Path, remote: Path) -> None:
    checkout = _workspace(root, remote, "clone").prepare(PULL, branch="feature")
    assert _head(checkout.path) == "feature"
    assert (checkout.path / "f.txt").exists()


def test_a_missing_branch_in_the_clone_strategy_leaves_nothing_behind(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote, "clone")
    with pytest.raises(DispatchError, match="nope"):
        workspace.prepare(PULL, branch="nope")
    assert not (root / ".work-items" / PULL.slug).exists()
    assert _files_under(root) == []


def test_removing_a_clone_returns_true_then_false(root: Path, remote: Path) -> None:
    workspace = _workspace(root, remote, "clone")
    checkout = workspace.prepare(ISSUE)
    assert workspace.remove(checkout.path) is True
    assert not (root / ".work-items" / ISSUE.slug).exists()
    assert workspace.remove(checkout.path) is False


# -- paths ------------------------------------------------------------------------------


def test_checkout_paths_locate_both_strategies_from_the_ref_alone(root: Path) -> None:
    workspace = Workspace(root, strategy="clone")
    assert workspace.checkout_paths(ISSUE) == [
        root / ".worktrees" / "github.com" / "octo" / "app" / ISSUE.slug,
        root / ".work-items" / ISSUE.slug / "github.com" / "octo" / "app",
    ]
    assert Workspace.disabled().checkout_paths(ISSUE) == []


def test_paths_outside_the_root_are_refused_and_left_alone(tmp_path: Path, root: Path) -> None:
    workspace = Workspace(root)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    for path in (outside, root / ".." / "precious", root, Path("/")):
        assert workspace.contains(path) is False
        with pytest.raises(DispatchError, match="refusing"):
            workspace.remove(path)
    assert (outside / "keep.txt").exists()


def test_a_path_inside_the_root_that_is_not_a_checkout_is_not_removed(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    workspace.prepare(ISSUE)
    shared = workspace.shared_clone_path(ISSUE)
    assert workspace.contains(shared) is True
    with pytest.raises(DispatchError, match="not a work-item checkout"):
        workspace.remove(shared)
    assert (shared / ".git").is_dir()


def test_a_symbolic_link_out_of_the_root_is_refused(
    tmp_path: Path, root: Path, remote: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".worktrees").mkdir(parents=True)
    (root / ".worktrees" / "github.com").symlink_to(outside)
    workspace = _workspace(root, remote)
    with pytest.raises(DispatchError, match="symbolic link"):
        workspace.prepare(ISSUE)
    victim = outside / "octo" / "app" / ISSUE.slug
    write_files(victim, {"keep.txt": "keep\n"})
    linked = workspace.checkout_path(ISSUE)
    assert workspace.contains(linked) is False
    with pytest.raises(DispatchError, match="symbolic link"):
        workspace.remove(linked)
    assert (victim / "keep.txt").exists()


def test_the_repositories_mapping_or_the_host_names_the_source() -> None:
    mapped = Workspace(Path("/w"), repositories={"octo/app": "/srv/app.git"})
    assert mapped.source_url(ISSUE) == "/srv/app.git"
    assert mapped.source_url(WorkItemRef.parse("github:octo/other#1")) == (
        "https://github.com/octo/other.git"
    )
    enterprise = WorkItemRef.parse("github:ghe.example.com/octo/app#1")
    assert Workspace(Path("/w")).source_url(enterprise) == "https://ghe.example.com/octo/app.git"
    ssh = Workspace(Path("/w"), clone_protocol="ssh", default_host="git.example.org")
    assert ssh.source_url(ISSUE) == "git@git.example.org:octo/app.git"


def test_the_repositories_mapping_is_what_prepare_clones(root: Path, tmp_path: Path) -> None:
    elsewhere = make_remote(tmp_path, "elsewhere", files={"ELSEWHERE.md": "x\n"})
    checkout = Workspace(root, repositories={"octo/app": str(elsewhere)}).prepare(ISSUE)
    assert (checkout.path / "ELSEWHERE.md").exists()


def test_a_disabled_workspace_prepares_and_contains_nothing(tmp_path: Path) -> None:
    workspace = Workspace.disabled()
    assert workspace.enabled is False
    assert workspace.contains(tmp_path) is False
    with pytest.raises(DispatchError, match="disabled"):
        workspace.prepare(ISSUE)


def test_the_workspace_is_built_from_the_routing_config(tmp_path: Path) -> None:
    config = Config(
        {
            "routing": {
                "workspace": {
                    "root": "~/work",
                    "strategy": "clone",
                    "cloneProtocol": "ssh",
                    "defaultHost": "git.example.org",
                    "repositories": {"octo/app": "/srv/app.git"},
                },
                "dispatchTimeoutSeconds": 12,
            }
        }
    )
    workspace = Workspace.from_config(config)
    assert workspace.root == tmp_path / "home" / "work"
    assert (workspace.strategy, workspace.timeout) == ("clone", 12.0)
    assert workspace.source_url(ISSUE) == "/srv/app.git"
    assert Workspace.from_config(Config()).enabled is False


# -- status -----------------------------------------------------------------------------


def test_status_counts_uncommitted_files_and_unpushed_commits(root: Path, remote: Path) -> None:
    workspace = _workspace(root, remote)
    path = workspace.prepare(ISSUE).path
    assert workspace.status(path) == CheckoutStatus(0, 0, f"loop/{ISSUE.slug}")
    write_files(path, {"a.txt": "a\n", "dir/b.txt": "b\n", "README.md": "changed\n"})
    assert workspace.status(path).uncommitted_files == 3
    for name in ("a.txt", "c.txt"):
        write_files(path, {name: f"{name}\n"})
        git(path, "add", name)
        git(path, "commit", "--quiet", "-m", f"add {name}")
    status = workspace.status(path)
    assert (status.uncommitted_files, status.unpushed_commits) == (2, 2)
    assert status.to_dict() == {"uncommittedFiles": 2, "unpushedCommits": 2}
    assert not status.clean


def test_status_counts_every_commit_as_unpushed_when_no_remote_branch_was_ever_fetched(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote, "clone")
    path = workspace.prepare(ISSUE).path
    git(path, "remote", "remove", "origin")
    assert workspace.status(path).unpushed_commits == 1


def test_status_of_a_directory_that_is_no_git_checkout_is_an_error(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    stray = workspace.checkout_path(ISSUE)
    write_files(stray, {"stray.txt": "not a checkout\n"})
    with pytest.raises(DispatchError, match="not a git checkout"):
        workspace.status(stray)


# -- abuse and concurrency -------------------------------------------------------------


@pytest.mark.parametrize("branch", ["--upload-pack=touch x", "../main", "a b", "x:y", "-"])
def test_a_branch_name_that_could_be_an_option_or_a_path_is_refused(
    branch: str, root: Path, remote: Path
) -> None:
    with pytest.raises(DispatchError, match="refusing branch"):
        _workspace(root, remote).prepare(PULL, branch=branch)
    assert not root.exists()


def test_a_stray_directory_where_the_checkout_belongs_is_not_reused(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    stray = workspace.checkout_path(ISSUE)
    write_files(stray, {"stray.txt": "not a checkout\n"})
    with pytest.raises(DispatchError, match="sessions cleanup"):
        workspace.prepare(ISSUE)
    assert (stray / "stray.txt").exists()


def test_two_items_of_one_repository_prepared_at_once_both_succeed(
    root: Path, remote: Path
) -> None:
    workspace = _workspace(root, remote)
    refs = [WorkItemRef.parse(f"github:octo/app#{number}") for number in range(20, 24)]
    with ThreadPoolExecutor(max_workers=len(refs)) as pool:
        checkouts = list(pool.map(workspace.prepare, refs))
    assert all(checkout.created for checkout in checkouts)
    assert all((checkout.path / "README.md").exists() for checkout in checkouts)


def test_git_variables_inherited_from_a_hook_never_aim_the_workspace_at_another_repository(
    tmp_path: Path, root: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bystander = make_remote(tmp_path, "bystander", files={"keep.txt": "keep\n"})
    before = git(bystander, "for-each-ref")
    monkeypatch.setenv("GIT_DIR", str(bystander))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    checkout = _workspace(root, remote).prepare(ISSUE)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert (checkout.path / "README.md").read_text() == "# app\n"
    assert git(bystander, "for-each-ref") == before
    assert git(bystander, "config", "--get", "core.bare").strip() == "true"
