"""Git checkouts for work items, only ever created or removed inside one root.

Worktree strategy: a shared clone at ``<root>/<host>/<owner>/<repo>`` and a
worktree per item at ``<root>/.worktrees/<host>/<owner>/<repo>/<slug>``.
Clone strategy: a full clone at ``<root>/.work-items/<slug>/<host>/<owner>/<repo>``.
Either way the checkout is on its own branch, ``loop/<slug>`` (``--branch`` aside), so
the agent's commits are reachable by name. Work on one repository is serialised by a
lock under ``<root>/.locks`` (its owner and repository lowercase).

Refs are lowercase, but a release before them kept the owner's and repository's case
(``.worktrees/github.com/Octo/App/github-Octo-App-15``): a path that is not there is
looked for below the root as spelled on disk, so such a checkout and its shared clone
are still found, reused and removed (the first match in name order when several differ
only in case). New paths are lowercase.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Generator, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from the_loop.config.defaults import default_str
from the_loop.config.state_root import against_config_directory
from the_loop.dispatch.process import (
    DEFAULT_TIMEOUT_SECONDS,
    TIMEOUT_KEY,
    DispatchError,
    Relay,
    Runner,
    run,
    trim,
)
from the_loop.fsio import locked

#: ``routing.workspace.gitBinary``: the git executable.
GIT_BINARY_KEY = "routing.workspace.gitBinary"

if TYPE_CHECKING:
    import subprocess

    from the_loop.config.file import Config
    from the_loop.ref import WorkItemRef

Strategy = Literal["worktree", "clone"]
STRATEGIES: tuple[Strategy, ...] = ("worktree", "clone")
WORKTREES_DIR = ".worktrees"
WORK_ITEMS_DIR = ".work-items"
LOCKS_DIR = ".locks"
#: The branch a work item's checkout is on when no ``--branch`` was asked for.
BRANCH_PREFIX = "loop/"
_COMPONENT = re.compile(r"[A-Za-z0-9._~:-]+\Z")
_REMOTE_SOURCE = re.compile(r"[^/]*:")
_BRANCH_REFUSED = re.compile(r"[\s\x00-\x1f\x7f~^:?*\[\\]|\.\.|@\{|^-|^/|/$|\.lock$")
#: Never ask for credentials on a terminal: a clone that needs them fails instead.
#: Variables that point git at another repository (``git rev-parse --local-env-vars``):
#: inherited from a hook or a rebase's ``exec``, they would aim every command elsewhere.
_REPOSITORY_VARIABLES = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)
_GIT_ENV: dict[str, str | None] = {
    "GIT_TERMINAL_PROMPT": "0",
    **dict.fromkeys(_REPOSITORY_VARIABLES),
}


@dataclass(frozen=True)
class Checkout:
    """A prepared checkout; ``created`` is False when an existing one was reused.

    ``branch`` is the branch a created checkout was put on ("" for a reused one).
    """

    path: Path
    created: bool
    strategy: str
    branch: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "created": self.created,
            "strategy": self.strategy,
            "branch": self.branch,
        }


@dataclass(frozen=True)
class CheckoutStatus:
    """What removing a checkout would lose; ``branch`` is the branch checked out ("" when
    HEAD is detached)."""

    uncommitted_files: int
    unpushed_commits: int
    branch: str = ""

    @property
    def clean(self) -> bool:
        return self.uncommitted_files == 0 and self.unpushed_commits == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "uncommittedFiles": self.uncommitted_files,
            "unpushedCommits": self.unpushed_commits,
        }


def workspace_root(config: Config) -> Path | None:
    """``routing.workspace.root``, ``~``-expanded, a relative one against the config file's
    directory; None when unset (workspaces disabled)."""
    root = config.get_str("routing.workspace.root")
    return against_config_directory(config, Path(root).expanduser()) if root else None


def is_local_path(source: str) -> bool:
    """Whether git reads clone ``source`` as a local path: not ``scheme://…`` nor
    scp-like ``[user@]host:path`` (a colon before any slash)."""
    return _REMOTE_SOURCE.match(source) is None


def configured_sources(config: Config) -> dict[str, str]:
    """``routing.workspace.repositories`` with this machine's clone sources laid over it
    (:attr:`Config.clone_sources`: for a repository in both, whatever the case of its
    name, this machine's), a relative local path resolved against the config file's
    directory (``~`` is expanded when it is used)."""
    machine = {name.lower() for name in config.clone_sources}
    tracked = config.get_str_map("routing.workspace.repositories")
    sources = {
        **{name: source for name, source in tracked.items() if name.lower() not in machine},
        **config.clone_sources,
    }
    return {
        name: str(against_config_directory(config, Path(source)))
        if is_local_path(source) and not source.startswith("~")
        else source
        for name, source in sources.items()
    }


class Workspace:
    """Prepares, inspects and removes work-item checkouts under ``root``.

    ``root=None`` means workspaces are disabled: nothing is prepared, located
    or removed. Every path is checked to resolve inside ``root`` with no symlink
    on the way; anything else raises :class:`DispatchError`. With ``progress``, the
    clones and fetches run with ``--progress`` and git's stderr goes to it as it comes.
    """

    def __init__(
        self,
        root: Path | None,
        *,
        strategy: str = default_str("routing.workspace.strategy"),
        git_binary: str = default_str(GIT_BINARY_KEY),
        clone_protocol: str = default_str("routing.workspace.cloneProtocol"),
        default_host: str = default_str("routing.workspace.defaultHost"),
        repositories: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        run: Runner = run,
        progress: Relay | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown workspace strategy {strategy!r}: use worktree or clone")
        if clone_protocol not in ("https", "ssh"):
            raise ValueError(f"unknown clone protocol {clone_protocol!r}: use https or ssh")
        self.root = None if root is None else Path(os.path.abspath(root))
        self.strategy = strategy
        self.git_binary = git_binary
        self.clone_protocol = clone_protocol
        self.default_host = _component(default_host, "default host")
        # Owner and repository names ignore case on GitHub, as refs do: keys are lowercase.
        self.repositories = {name.lower(): url for name, url in (repositories or {}).items()}
        self.timeout = timeout
        self._run = run
        self._progress = progress

    @classmethod
    def disabled(cls) -> Workspace:
        """A workspace that prepares nothing (``routing.workspace.root`` empty)."""
        return cls(None)

    @classmethod
    def from_config(cls, config: Config, *, progress: Relay | None = None) -> Workspace:
        """The workspace of ``routing.workspace.*`` (relative paths against the config
        file's directory; root empty: disabled); ``progress`` receives git's progress of a
        clone or fetch."""
        return cls(
            workspace_root(config),
            strategy=config.get_str("routing.workspace.strategy"),
            git_binary=config.get_str(GIT_BINARY_KEY) or default_str(GIT_BINARY_KEY),
            clone_protocol=config.get_str("routing.workspace.cloneProtocol"),
            default_host=config.get_str("routing.workspace.defaultHost"),
            repositories=configured_sources(config),
            timeout=config.get_float(TIMEOUT_KEY),
            progress=progress,
        )

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def source_url(self, ref: WorkItemRef) -> str:
        """Where ``ref``'s repository is cloned from: the mapping, else the host's URL."""
        mapped = self.repositories.get(ref.repository)
        if mapped:
            return os.path.expanduser(mapped) if mapped.startswith("~") else mapped
        host = self._host(ref)
        if self.clone_protocol == "ssh":
            return f"git@{host}:{ref.owner}/{ref.repo}.git"
        return f"https://{host}/{ref.owner}/{ref.repo}.git"

    def checkout_path(self, ref: WorkItemRef, strategy: str | None = None) -> Path:
        """Where ``ref``'s checkout lives under ``strategy`` (default: the configured one)."""
        root = self._require_root()
        host, owner, repo, slug = self._components(ref)
        if (strategy or self.strategy) == "clone":
            return self._as_on_disk(root / WORK_ITEMS_DIR / slug / host / owner / repo)
        return self._as_on_disk(root / WORKTREES_DIR / host / owner / repo / slug)

    def checkout_paths(self, ref: WorkItemRef) -> list[Path]:
        """Where ``ref``'s checkout(s) would be under either strategy; empty when disabled."""
        if not self.enabled:
            return []
        return [self.checkout_path(ref, strategy) for strategy in STRATEGIES]

    def shared_clone_path(self, ref: WorkItemRef) -> Path:
        """The worktree strategy's shared clone of ``ref``'s repository."""
        host, owner, repo, _ = self._components(ref)
        return self._as_on_disk(self._require_root() / host / owner / repo)

    def contains(self, path: Path) -> bool:
        """True when ``path`` lies strictly inside ``root``, no symlink on the way."""
        if self.root is None:
            return False
        try:
            self._checked(path)
        except DispatchError:
            return False
        return True

    def prepare(self, ref: WorkItemRef, *, branch: str | None = None) -> Checkout:
        """Create ``ref``'s checkout on ``branch`` (a local branch tracking ``origin/<branch>``)
        or on ``loop/<slug>``: the local branch when the shared clone has one, else tracking
        ``origin/loop/<slug>`` when the remote has it, else new from the default branch.
        An existing checkout is reused as it is.

        On failure the checkout and a shared clone this call made are removed (empty
        directories shared with other repositories may stay), then ``DispatchError``
        is raised (a missing branch included).
        """
        if branch is not None and _BRANCH_REFUSED.search(branch):
            raise DispatchError(f"refusing branch name {branch!r}")
        path = self._checked(self.checkout_path(ref))
        with locked(self._scope(path)[0]):
            if path.exists() or path.is_symlink():
                if not (path / ".git").exists():
                    raise DispatchError(
                        f"{path} exists but is not a git checkout; "
                        f"run `the-loop sessions cleanup --force --work-item '{ref.ref}'` first"
                    )
                return Checkout(path, created=False, strategy=self.strategy)
            if self.strategy == "clone":
                chosen = self._clone_checkout(ref, path, branch)
            else:
                chosen = self._worktree_checkout(ref, path, branch)
        return Checkout(path, created=True, strategy=self.strategy, branch=chosen)

    def branch_for(self, ref: WorkItemRef) -> str:
        """``loop/<slug>``: the branch of ``ref``'s checkout when no ``--branch`` is given."""
        return BRANCH_PREFIX + _component(ref.slug, "slug")

    def keeps_branches(self, path: Path) -> bool:
        """True when removing the checkout at ``path`` leaves its branch behind (a worktree:
        the branch lives in the shared clone); False for a clone, which goes whole."""
        return self._shared_clone_of(self._checked(path)) is not None

    def remove(self, path: Path) -> bool:
        """Remove the checkout at ``path``; True exactly when one was there and is now gone.

        A worktree is removed through git (``worktree remove --force``, the
        directory if still there, ``worktree prune``); a clone folder is deleted.
        A path that is already gone is False. ``OSError`` propagates.
        """
        path = self._checked(path)
        with locked(self._scope(path)[0]):
            shared = self._shared_clone_of(path)
            existed = path.exists() or path.is_symlink()
            if existed and shared is not None and (shared / ".git").exists():
                self._git(shared, "worktree", "remove", "--force", str(path), check=False)
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)
            if shared is not None and (shared / ".git").exists():
                self._git(shared, "worktree", "prune", check=False)
            self._remove_empty_parents(path)
        return existed and not (path.exists() or path.is_symlink())

    def status(self, path: Path) -> CheckoutStatus:
        """Uncommitted files (tracked changes and untracked files, not ignored ones) and
        commits on HEAD that no remote-tracking branch holds (with no remote-tracking branch
        at all, every commit). ``DispatchError`` when ``path`` is no git checkout."""
        path = self._checked(path)
        if not (path / ".git").exists():
            raise DispatchError(f"{path} is not a git checkout")
        porcelain = self._git(path, "status", "--porcelain", "--untracked-files=all").stdout
        uncommitted = sum(1 for line in porcelain.splitlines() if line.strip())
        unpushed = 0
        if self._git(path, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0:
            count = self._git(path, "rev-list", "--count", "HEAD", "--not", "--remotes").stdout
            unpushed = int(count.strip())
        head = self._git(path, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        branch = head.stdout.strip() if head.returncode == 0 else ""
        return CheckoutStatus(uncommitted, unpushed, branch)

    def uncommitted(self, checkout: Path, file: Path) -> str | None:
        """Why ``file`` in the git checkout ``checkout`` is not as committed (git does not
        track it, or it has changes not committed), or None when it is. ``checkout`` may
        lie outside ``root``; ``DispatchError`` when git cannot read it."""
        path = f":(literal){os.path.relpath(file, checkout)}"
        tracked = self._git(checkout, "ls-files", "--error-unmatch", "--", path, check=False)
        if tracked.returncode == 1:
            return "git does not track it"
        if tracked.returncode != 0:
            raise DispatchError(
                f"{checkout} is no git checkout git can read: {trim(tracked.stderr)}"
            )
        changed = self._git(checkout, "status", "--porcelain", "--", path).stdout
        return "it has changes that are not committed" if changed.strip() else None

    def unpushed(self, checkout: Path, file: Path) -> str | None:
        """Why the commit that last changed ``file`` is not on the remote as the checkout
        knows it (no branch of any remote holds it), or None when it is there, or the
        checkout has no remote to push to."""
        if not self._git(checkout, "remote").stdout.strip():
            return None
        path = f":(literal){os.path.relpath(file, checkout)}"
        commit = self._git(checkout, "log", "-1", "--format=%H", "--", path).stdout.strip()
        if not commit:
            return "no commit holds it"
        held = self._git(checkout, "branch", "--remotes", "--contains", commit).stdout
        return None if held.strip() else f"its commit {commit[:12]} is on no branch of the remote"

    def ever_held(self, checkout: Path, file: Path, text: str) -> bool:
        """Whether a commit on the checkout's branch ever added or removed ``text`` in
        ``file`` (``git log -S``): whether it was ever committed there. False when git
        cannot say (no checkout, no commit yet): what asks next says why."""
        path = f":(literal){os.path.relpath(file, checkout)}"
        found = self._git(
            checkout, "log", "-1", "--format=%H", f"-S{text}", "--", path, check=False
        )
        return found.returncode == 0 and bool(found.stdout.strip())

    def commit_file(
        self, checkout: Path, file: Path, message: str, *, withheld: Iterable[str] = ()
    ) -> bool:
        """Commit ``file`` alone (added when git does not track it yet) on the checkout's
        branch with ``message``; False, with nothing committed, when it is already as
        committed. The checkout's own identity when it has one, else ``the-loop``'s.

        The checkout is an agent's: git runs there with no hook and no fsmonitor (the
        agent may have written either) and without the variables named in ``withheld``
        (the-loop's secrets). ``DispatchError`` when git refuses."""
        path = f":(literal){os.path.relpath(file, checkout)}"
        changed = self._untrusted_git(checkout, withheld, "status", "--porcelain", "--", path)
        if not changed.stdout.strip():
            return False
        named = self._untrusted_git(checkout, withheld, "config", "user.email", check=False)
        identity = (
            []
            if named.stdout.strip()
            else ["-c", "user.name=the-loop", "-c", "user.email=the-loop@localhost"]
        )
        self._untrusted_git(checkout, withheld, "add", "--", path)
        commit = ["commit", "--quiet", "--no-verify", "-m", message, "--", path]
        self._untrusted_git(checkout, withheld, *identity, *commit)
        return True

    def last_commit(self, checkout: Path, file: Path, *, withheld: Iterable[str] = ()) -> str:
        """The commit that last changed ``file`` on the checkout's branch (``""``: none);
        git run as :meth:`commit_file` runs it."""
        path = f":(literal){os.path.relpath(file, checkout)}"
        found = self._untrusted_git(
            checkout, withheld, "log", "-1", "--format=%H", "--", path, check=False
        )
        return found.stdout.strip() if found.returncode == 0 else ""

    def _untrusted_git(
        self, checkout: Path, withheld: Iterable[str], *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``git`` in a checkout an agent writes to: its hooks and fsmonitor off (a hook
        there is the agent's code), the-loop's secrets out of the environment."""
        argv = [
            self.git_binary,
            "-C",
            str(checkout),
            *("-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false"),
            *args,
        ]
        env = {**_GIT_ENV, **dict.fromkeys(withheld)}
        return self._run(argv, timeout=self.timeout, env=env, check=check)

    # -- preparing -----------------------------------------------------------------

    def _clone_checkout(self, ref: WorkItemRef, path: Path, branch: str | None) -> str:
        """Clone into ``path`` on ``branch``, or on ``loop/<slug>`` (the remote's, tracked,
        when it has one, in the spelling an earlier release gave it); the branch."""
        branch_args = ["--branch", branch] if branch else []
        with self._undo_on_failure(path):
            url = self.source_url(ref)
            self._fetching(None, "clone", *branch_args, "--", url, str(path))
            if branch:
                return branch
            own = self.branch_for(ref)
            if not self._has_commit(path, f"origin/{own}"):
                own = self._branch_as_spelled(path, own, "refs/remotes/origin/") or own
            remote = ["--track", f"origin/{own}"] if self._has_commit(path, f"origin/{own}") else []
            self._git(path, "checkout", "--quiet", "-b", own, *remote)
            return own

    def _branch_as_spelled(self, repository: Path, own: str, namespace: str) -> str | None:
        """The first branch under ``namespace`` (``refs/heads/``, ``refs/remotes/origin/``)
        named ``own`` but for case: ``loop/github-Octo-App-15``, as a release before
        lowercase refs named it; None when there is none."""
        listed = self._git(
            repository, "for-each-ref", "--format=%(refname)", f"{namespace}{BRANCH_PREFIX}"
        )
        names = sorted(line[len(namespace) :] for line in listed.stdout.splitlines())
        return next((name for name in names if name.lower() == own and name != own), None)

    def _worktree_checkout(self, ref: WorkItemRef, path: Path, branch: str | None) -> str:
        shared = self._checked(self.shared_clone_path(ref))
        url = self.source_url(ref)
        with self._undo_on_failure(shared):
            if (shared / ".git").exists():
                self._fetching(shared, "fetch", "--prune", "origin")
            elif shared.exists():
                raise DispatchError(f"{shared} exists but is not a git clone; remove it first")
            else:
                self._fetching(None, "clone", "--no-checkout", "--", url, str(shared))
            args = self._worktree_args(ref, shared, url, path, branch)
            with self._undo_on_failure(path, prune=shared):
                self._git(shared, "worktree", "add", *args)
        return branch or _branch_of(args)

    def _worktree_args(
        self, ref: WorkItemRef, shared: Path, url: str, path: Path, branch: str | None
    ) -> list[str]:
        """``git worktree add`` arguments: ``branch``, or ``loop/<slug>`` reused or made."""
        if branch:
            return ["--track", "-B", branch, str(path), self._start_point(shared, url, branch)]
        own = self.branch_for(ref)
        local, remote = f"refs/heads/{own}", f"refs/remotes/origin/{own}"
        if not (self._has_ref(shared, local) or self._has_ref(shared, remote)):
            # A release before lowercase refs named it after the ref as typed.
            spelled = self._branch_as_spelled(shared, own, "refs/heads/")
            own = spelled or self._branch_as_spelled(shared, own, "refs/remotes/origin/") or own
        if self._has_ref(shared, f"refs/heads/{own}"):
            self._git(shared, "worktree", "prune")  # a worktree deleted by hand holds it
            return [str(path), own]
        if self._has_commit(shared, f"origin/{own}"):
            return ["--track", "-b", own, str(path), f"origin/{own}"]
        return ["--no-track", "-b", own, str(path), self._start_point(shared, url, None)]

    def _start_point(self, shared: Path, url: str, branch: str | None) -> str:
        """``origin/<branch>``, or the remote's default branch (``origin/HEAD``)."""
        if branch:
            start = f"origin/{branch}"
            if not self._has_commit(shared, start):
                raise DispatchError(f"branch {branch!r} does not exist in {url}")
            return start
        if not self._has_commit(shared, "origin/HEAD"):
            self._git(shared, "remote", "set-head", "origin", "--auto")
        return "origin/HEAD"

    def _has_commit(self, repository: Path, name: str) -> bool:
        """True when the remote-tracking ref ``refs/remotes/<name>`` names a commit."""
        return self._has_ref(repository, f"refs/remotes/{name}")

    def _has_ref(self, repository: Path, ref: str) -> bool:
        found = self._git(
            repository, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False
        )
        return found.returncode == 0

    @contextmanager
    def _undo_on_failure(self, path: Path, *, prune: Path | None = None) -> Generator[None]:
        """When the block raises, remove ``path`` if it was made there, then its empty parents."""
        existed = path.exists() or path.is_symlink()
        try:
            yield
        except BaseException:
            if not existed:
                if path.exists():
                    shutil.rmtree(path)
                if prune is not None:
                    self._git(prune, "worktree", "prune", check=False)
                self._remove_empty_parents(path)
            raise

    # -- paths and locks -------------------------------------------------------------

    def _require_root(self) -> Path:
        if self.root is None:
            raise DispatchError("workspaces are disabled: set routing.workspace.root")
        return self.root

    def _real_root(self) -> Path:
        return Path(os.path.realpath(self._require_root()))

    def _host(self, ref: WorkItemRef) -> str:
        return ref.host or self.default_host

    def _components(self, ref: WorkItemRef) -> tuple[str, str, str, str]:
        host = _component(self._host(ref), "host")
        return (
            host,
            _component(ref.owner, "owner"),
            _component(ref.repo, "repository"),
            _component(ref.slug, "slug"),
        )

    def _checked(self, path: Path) -> Path:
        """``path`` made absolute; ``DispatchError`` unless it lies inside ``root``, no symlinks."""
        root = self._require_root()
        absolute = Path(os.path.abspath(path))
        if absolute == root or not absolute.is_relative_to(root):
            raise DispatchError(f"refusing {path}: it is not inside the workspace root {root}")
        expected = self._real_root().joinpath(*absolute.relative_to(root).parts)
        if Path(os.path.realpath(absolute)) != expected:
            raise DispatchError(f"refusing {path}: a symbolic link leads out of place")
        return absolute

    def _scope(self, path: Path) -> tuple[Path, Path]:
        """``(lock file, top directory)`` for a checkout path; ``DispatchError`` for any other."""
        root = self._require_root()
        parts = path.relative_to(root).parts
        if len(parts) == 5 and parts[0] == WORKTREES_DIR:
            return self._lock_file(*parts[1:4]), root.joinpath(*parts[:4])
        if len(parts) == 5 and parts[0] == WORK_ITEMS_DIR:
            return root / LOCKS_DIR / WORK_ITEMS_DIR / f"{parts[1]}.lock", root.joinpath(*parts[:2])
        raise DispatchError(f"refusing {path}: it is not a work-item checkout")

    def _lock_file(self, host: str, owner: str, repo: str) -> Path:
        # Lowercase: one lock per repository, however an older release spelled its paths.
        names = (host.lower(), owner.lower(), f"{repo.lower()}.lock")
        return self._require_root().joinpath(LOCKS_DIR, *names)

    def _shared_clone_of(self, path: Path) -> Path | None:
        parts = path.relative_to(self._require_root()).parts
        if parts[0] != WORKTREES_DIR:
            return None
        return self._as_on_disk(self._require_root().joinpath(*parts[1:4]))

    def _as_on_disk(self, path: Path) -> Path:
        """``path`` (below the root) when it exists or nothing differing from it only in case
        does; else that one, as spelled on disk (made by a release before lowercase refs)."""
        if os.path.lexists(path):
            return path
        current = self._require_root()
        for part in path.relative_to(current).parts:
            if not os.path.lexists(current / part):
                wanted = part.lower()
                try:
                    names = sorted(name for name in os.listdir(current) if name.lower() == wanted)
                except OSError:
                    return path
                if not names:
                    return path
                part = names[0]
            current = current / part
        return current

    def _remove_empty_parents(self, path: Path) -> None:
        """Remove empty directories above ``path`` up to its lock scope's top directory."""
        try:
            _, top = self._scope(path)
        except DispatchError:
            return  # a shared clone: its parents are shared by other repositories
        current = path.parent
        while current.is_relative_to(top):
            try:
                current.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                return
            current = current.parent

    def _git(
        self, repository: Path | None, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        location = ["-C", str(repository)] if repository is not None else []
        argv = [self.git_binary, *location, *args]
        return self._run(argv, timeout=self.timeout, env=_GIT_ENV, check=check)

    def _fetching(self, repository: Path | None, command: str, *args: str) -> None:
        """``git <command> <args>`` that talks to the remote (a clone, a fetch): with
        ``progress``, run with ``--progress`` and its stderr relayed as it comes."""
        if self._progress is None:
            self._git(repository, command, *args)
            return
        location = ["-C", str(repository)] if repository is not None else []
        argv = [self.git_binary, *location, command, "--progress", *args]
        self._run(argv, timeout=self.timeout, env=_GIT_ENV, relay=self._progress)


def _branch_of(worktree_args: list[str]) -> str:
    """The branch a ``git worktree add`` of :meth:`Workspace._worktree_args` checks out."""
    if "-b" in worktree_args:
        return worktree_args[worktree_args.index("-b") + 1]
    return worktree_args[-1]


def _component(value: str, kind: str) -> str:
    """``value`` when it is one safe path component; ``ValueError`` otherwise."""
    if not _COMPONENT.match(value) or value in (".", "..") or value.startswith("-"):
        raise ValueError(f"refusing {kind} {value!r} as a workspace path component")
    return value
