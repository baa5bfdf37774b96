"""The one rule of every close path: a checkout holding the agent's work is kept.

A checkout is removed only when it is clean (no uncommitted change, no commit that no
remote-tracking branch holds) or when removal is forced (``--force``, or
``routing.workspace.removeDirtyCheckouts`` on an unattended machine). A checkout whose
git status cannot be read counts as holding work. :func:`plan_disposal` decides; the
decision is a frozen :class:`CheckoutDisposal` that a dry run reports and a real run acts on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.errors import TheLoopError

if TYPE_CHECKING:
    from the_loop.dispatch.workspace import Workspace

#: The config key that removes checkouts holding work without ``--force`` (default off).
REMOVE_DIRTY_KEY = "routing.workspace.removeDirtyCheckouts"
FORCE_FLAG = "--force"


@dataclass(frozen=True)
class CheckoutDisposal:
    """What a close does (or, on a dry run, would do) with one checkout, and what it holds.

    ``removed`` says it goes; ``forced_by`` names what made a checkout holding work go
    (``--force`` or the config key; "" for a clean one or a kept one); ``unreadable`` is
    why its git status could not be read ("" when it was); ``branch_kept`` is the branch
    of the shared clone that still holds its unpushed commits after a removal ("" if none).
    """

    path: str
    removed: bool
    uncommitted_files: int = 0
    unpushed_commits: int = 0
    unreadable: str = ""
    forced_by: str = ""
    branch_kept: str = ""

    @property
    def clean(self) -> bool:
        """Nothing in it would be lost: its status was read and shows no work."""
        return not self.unreadable and self.uncommitted_files == 0 and self.unpushed_commits == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "removed": self.removed,
            "kept": not self.removed,
            "clean": self.clean,
            "uncommittedFiles": self.uncommitted_files,
            "unpushedCommits": self.unpushed_commits,
            "statusError": self.unreadable or None,
            "forcedBy": self.forced_by or None,
            "branchKept": self.branch_kept or None,
        }


def forced_by(force: bool, remove_dirty: bool) -> str:
    """What forces removal: the flag, else the config key, else nothing ("")."""
    if force:
        return FORCE_FLAG
    return REMOVE_DIRTY_KEY if remove_dirty else ""


def plan_disposal(workspace: Workspace, path: Path, force: str = "") -> CheckoutDisposal:
    """Decide the fate of the checkout at ``path``: removed when clean or ``force``
    (what forces it, see :func:`forced_by`) is set; kept otherwise."""
    try:
        status = workspace.status(path)
    except (TheLoopError, OSError, ValueError) as error:
        return CheckoutDisposal(str(path), bool(force), unreadable=str(error), forced_by=force)
    disposal = CheckoutDisposal(str(path), True, status.uncommitted_files, status.unpushed_commits)
    if disposal.clean:
        return disposal
    if not force:
        return replace(disposal, removed=False)
    keeps_commits = status.unpushed_commits and status.branch and workspace.keeps_branches(path)
    return replace(disposal, forced_by=force, branch_kept=status.branch if keeps_commits else "")
