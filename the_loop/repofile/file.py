"""The repository file: ``docs/specs/<id>/work-item-state.json`` in the item's checkout.

``<id>`` is upstream's ``issue-<n>`` when a file for the item is there, else the slug.

It travels with the branch and holds pointers (where the work is), human decisions
(``sessionPerPr``, ``model``, ``effort``, skips, ...) and the pull requests delivering
the item (``state.md`` §7); its values are in :mod:`the_loop.repofile.values`. The
legacy name ``graph-state.json`` is read when the current file is absent and never
written; a legacy ``session`` block is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from the_loop import fsio
from the_loop.errors import TheLoopError, quoted
from the_loop.eventlog.log import utc_timestamp
from the_loop.ref import WorkItemRef
from the_loop.repofile.values import (
    LEGACY_FROZEN_GRAPH_KEY,
    LEGACY_STATE_FILE,
    LINKED_BY,
    PR_STATES,
    RETIRED_KEYS,
    SESSION_PER_PR,
    SPEC_ID,
    SPECS_DIR,
    STATE_FILE,
    STATE_KEYS,
    STATE_VERSION,
    FrozenChoices,
    LinkedPullRequest,
    WorkItemState,
    check_choice,
    graph_section_choices,
    read_problem,
    resolve_frozen_choices,
    validate_repository,
)

__all__ = [
    "LEGACY_FROZEN_GRAPH_KEY",
    "LEGACY_STATE_FILE",
    "LINKED_BY",
    "PR_STATES",
    "RETIRED_KEYS",
    "SESSION_PER_PR",
    "SPECS_DIR",
    "SPEC_ID",
    "STATE_FILE",
    "STATE_KEYS",
    "STATE_VERSION",
    "FrozenChoices",
    "LinkedPullRequest",
    "WorkItemState",
    "WorkItemStateFile",
    "check_choice",
    "graph_section_choices",
    "read_problem",
    "resolve_frozen_choices",
    "upstream_spec_id",
    "validate_repository",
]


def _lock_path(checkout: Path, spec_id: str, beside: Path) -> Path:
    """Where the repository file's lock goes: the checkout's git directory (``.git/``,
    or the one a worktree's ``.git`` file names), outside the work tree; ``beside``
    when the checkout has none a lock can be kept in."""
    dot_git = checkout / ".git"
    try:
        if dot_git.is_dir() and not dot_git.is_symlink():
            git_dir = dot_git
        elif dot_git.is_file() and not dot_git.is_symlink():
            said = (fsio.read_bytes(dot_git) or b"")[:4096].decode("utf-8", "replace").strip()
            if not said.startswith("gitdir:"):
                return beside
            git_dir = Path(said.removeprefix("gitdir:").strip())
            git_dir = git_dir if git_dir.is_absolute() else checkout / git_dir
            if not git_dir.is_dir():
                return beside
        else:
            return beside
    except OSError:
        return beside
    return git_dir / "the-loop" / f"{spec_id}.work-item-state.lock"


def upstream_spec_id(work_item: WorkItemRef) -> str:
    """The directory name upstream (the-loopy-one 20.10.2) uses: ``issue-<n>``."""
    return f"issue-{work_item.number}"


def _spec_id_for(checkout: Path, work_item: WorkItemRef) -> str:
    """Upstream's ``issue-<n>`` when it holds a file for ``work_item``, else the slug (or
    the slug as an earlier release spelled it, in mixed case, when only that one is there)."""
    upstream = checkout / SPECS_DIR / upstream_spec_id(work_item)
    for name in (STATE_FILE, LEGACY_STATE_FILE):
        if (upstream / name).is_file():
            return upstream.name if _may_be_for(upstream / name, work_item) else work_item.slug
    return _slug_as_spelled(checkout / SPECS_DIR, work_item)


def _slug_as_spelled(specs: Path, work_item: WorkItemRef) -> str:
    """``work_item``'s slug; when no directory has that name, the first one (in name
    order) that differs from it only in case and holds a file for this item."""
    slug = work_item.slug
    if (specs / slug).exists():
        return slug
    try:
        names = sorted(name for name in os.listdir(specs) if name.lower() == slug and name != slug)
    except OSError:
        return slug
    for name in names:
        files = [specs / name / file for file in (STATE_FILE, LEGACY_STATE_FILE)]
        held = [path for path in files if path.is_file()]
        if held and _may_be_for(held[0], work_item):
            return name
    return slug


def _may_be_for(path: Path, work_item: WorkItemRef) -> bool:
    """False only when the file readably names another work item in ``workItem``."""
    try:
        named = fsio.read_json(path).get("workItem")
    except (OSError, ValueError, AttributeError, RecursionError):
        return True  # unreadable: adopt it, so load reports it instead of bypassing it
    if not isinstance(named, str) or not named:
        return True
    try:
        return WorkItemRef.parse(named) == work_item
    except ValueError:
        return False


class WorkItemStateFile:
    """The repository file of one work item in ``checkout``.

    Where: ``docs/specs/<spec_id>/`` when an id is given; otherwise upstream's
    ``docs/specs/issue-<n>/`` when a file for this item is there (read and written
    there), else ours, ``docs/specs/<slug>/`` (also where a new file goes). Every
    change runs read → modify → write under a lock in the checkout's git directory
    (``.git/the-loop/<spec id>.work-item-state.lock``, so ``git status`` shows only the
    file), or beside the file in a directory that is no git checkout; writes are atomic
    and durable; an ``OSError`` propagates. The legacy ``graph-state.json`` is never
    written.
    """

    def __init__(
        self,
        checkout: Path,
        work_item: WorkItemRef,
        *,
        spec_id: str | None = None,
        on_warning: Callable[[str], None] | None = None,
    ):
        chosen = _spec_id_for(checkout, work_item) if spec_id is None else spec_id
        if not SPEC_ID.match(chosen) or chosen in (".", ".."):
            raise ValueError(f"invalid spec id {quoted(chosen)}: must be one path component")
        self.checkout = checkout
        self.work_item = work_item
        self.spec_id = chosen
        self.directory = checkout / SPECS_DIR / chosen
        self.path = self.directory / STATE_FILE
        self.legacy_path = self.directory / LEGACY_STATE_FILE
        self.lock_path = _lock_path(checkout, chosen, self.directory / f".{STATE_FILE}.lock")
        self._on_warning = on_warning

    def exists(self) -> bool:
        """True when the current or the legacy file is there (``load`` reads one of them)."""
        return self.path.is_file() or self.legacy_path.is_file()

    def load(self) -> WorkItemState:
        """The current file, else the legacy file, else a fresh state for the work item.

        A file that is not JSON or holds the wrong shape raises :class:`TheLoopError`;
        each unusable entry or choice in it is skipped and reported to ``on_warning``.
        """
        for path in (self.path, self.legacy_path):
            try:
                data = fsio.read_json(path)
            except FileNotFoundError:
                continue
            except (ValueError, RecursionError) as error:
                raise self._corrupt(path, f"it is not JSON ({read_problem(error)})") from error
            if not isinstance(data, dict):
                raise self._corrupt(path, "it does not hold a JSON object")
            try:
                state = WorkItemState.from_dict(data, work_item=self.work_item.ref)  # pyright: ignore[reportUnknownArgumentType]
            except ValueError as error:
                raise self._corrupt(path, str(error)) from error
            for problem in state.problems:
                self._warn(f"the work item state file {path}: {problem}")
            return state
        return WorkItemState(work_item=self.work_item.ref)

    def save(self, state: WorkItemState) -> None:
        """Write ``state`` to the current file (never the legacy one), under the lock."""
        document = state.to_dict()
        with fsio.locked(self.lock_path):
            fsio.write_json(self.path, document)

    def update(self, change: Callable[[WorkItemState], WorkItemState | None]) -> WorkItemState:
        """Locked read → ``change`` (mutates, or returns a replacement) → write; the new state."""
        with fsio.locked(self.lock_path):
            state = self.load()
            result = change(state)
            new_state = state if result is None else result
            fsio.write_json(self.path, new_state.to_dict())
        return new_state

    def link_pr(
        self,
        pr: WorkItemRef,
        *,
        state_dir: str = "",
        linked_by: str = "session",
        now: float | None = None,
    ) -> bool:
        """Link ``pr`` as an open pull request; False (nothing written) when already linked."""
        entry = LinkedPullRequest(
            ref=pr.ref,
            repository=pr.path,
            number=pr.number,
            url=pr.url,
            state_dir=state_dir,
            linked_at=utc_timestamp(now),
            linked_by=linked_by,
        )
        with fsio.locked(self.lock_path):
            state = self.load()
            if state.pull_request(pr) is not None:
                return False
            state.pull_requests.append(entry)
            fsio.write_json(self.path, state.to_dict())
        return True

    def set_pr_state(self, pr_ref: WorkItemRef | str, state: str) -> bool:
        """Set one linked entry's state; False (nothing written) when not linked or unchanged.

        ``ValueError`` for a state outside :data:`PR_STATES`, before anything is read.
        """
        check_choice(state, PR_STATES, "pull request state")
        wanted = pr_ref if isinstance(pr_ref, WorkItemRef) else WorkItemRef.parse(pr_ref)
        with fsio.locked(self.lock_path):
            current = self.load()
            entry = current.pull_request(wanted)
            if entry is None or entry.state == state:
                return False
            index = current.pull_requests.index(entry)
            current.pull_requests[index] = replace(entry, state=state)
            fsio.write_json(self.path, current.to_dict())
        return True

    def frozen_choices(self) -> FrozenChoices | None:
        """``sessionPerPr``, ``model`` and ``effort`` from the file when any is set."""
        return self.load().choices()

    def _warn(self, message: str) -> None:
        if self._on_warning is not None:
            self._on_warning(message)

    def _corrupt(self, path: Path, reason: str) -> TheLoopError:
        return TheLoopError(f"the work item state file {path} cannot be read: {reason}")
