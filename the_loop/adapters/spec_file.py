"""The intake's :class:`~the_loop.intake.ports.SpecPort`: the spec lane's files in each
work item's checkout, the one its session record names (live or closed).

A lane begun where the item has no repository file yet writes it where upstream
the-loopy-one 20.10.2 looks for it, ``docs/specs/issue-<n>/``, so that release reads
the lane we keep. The review comments appended to a document are committed on the
checkout's branch, that file alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from the_loop import fsio
from the_loop.dispatch.workspace import Workspace
from the_loop.errors import TheLoopError
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile, upstream_spec_id
from the_loop.repofile.values import SPECS_DIR, WorkItemState
from the_loop.sessions.registry import SessionRegistry
from the_loop.spec.artifacts import artifact_path
from the_loop.spec.words import ReviewEntry, with_review_comments


def _inside(directory: Path, checkout: Path) -> None:
    """``TheLoopError`` when ``directory`` (there or not) leads out of ``checkout`` through
    a link: the lane's files are read and written only inside the checkout."""
    real, home = os.path.realpath(directory), os.path.realpath(checkout)
    if os.path.commonpath([real, home]) != home:
        raise TheLoopError(f"{directory} leads out of its checkout {checkout} (to {real})")


class SpecFiles:
    """The repository file and documents of each item's checkout, over the registry."""

    def __init__(
        self,
        registry: SessionRegistry,
        workspace: Workspace,
        warn: Callable[[str], None] = lambda _message: None,
        *,
        withheld: Sequence[str] = (),
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.warn = warn
        #: The-loop's secrets: never in the environment of git run in an agent's checkout.
        self.withheld = tuple(withheld)

    def state(self, ref: WorkItemRef) -> WorkItemState | None:
        found = self._file(ref)
        if found is None or not found.exists():
            return None
        return found.load()

    def update(
        self, ref: WorkItemRef, change: Callable[[WorkItemState], WorkItemState]
    ) -> WorkItemState:
        found = self._file(ref, begin=True)
        if found is None:
            raise TheLoopError(f"{ref.ref} has no checkout on this machine for its spec lane")
        return found.update(change)

    def spec_dir(self, ref: WorkItemRef) -> str:
        found = self._file(ref)
        spec_id = found.spec_id if found is not None else upstream_spec_id(ref)
        return f"{SPECS_DIR}/{spec_id}"

    def artifact_link(self, ref: WorkItemRef, phase: str) -> str:
        """The document on the item's repository at the commit that last changed it
        (``""`` when it was never committed, or there is no checkout)."""
        found = self._file(ref)
        path = artifact_path(found, phase) if found is not None else None
        if found is None or path is None:
            return ""
        try:
            commit = self.workspace.last_commit(found.checkout, path, withheld=self.withheld)
        except TheLoopError:
            return ""
        if not commit:
            return ""
        shown = os.path.relpath(path, found.checkout).replace(os.sep, "/")
        return f"https://{ref.host}/{ref.owner}/{ref.repo}/blob/{commit}/{shown}"

    def append_review(self, ref: WorkItemRef, phase: str, entries: Sequence[ReviewEntry]) -> None:
        """Each of ``entries`` not yet in ``phase``'s document appended under ``## Review
        comments``, and the document committed (a crash between the two: the next call
        commits it)."""
        found = self._file(ref)
        path = artifact_path(found, phase) if found is not None else None
        if found is None or path is None:
            raise TheLoopError(f"{ref.ref} has no document for {phase} in a checkout here")
        status, content, problem = fsio.read_regular(path)
        text = content.decode("utf-8", errors="replace") if status == "ok" else ""
        if status not in ("ok", "absent"):
            raise TheLoopError(f"{path} cannot be read: {problem}")
        written = with_review_comments(text, entries)
        if written is not None:
            fsio.write_text(path, written)
        message = f"{phase}: the review comments of its gate ({ref.ref})"
        self.workspace.commit_file(found.checkout, path, message, withheld=self.withheld)

    def _file(self, ref: WorkItemRef, *, begin: bool = False) -> WorkItemStateFile | None:
        session = self.registry.find_by_work_item(ref, include_closed=True)
        if session is None or not session.cwd or not os.path.isdir(session.cwd):
            return None
        checkout = Path(session.cwd)
        found = WorkItemStateFile(checkout, ref, on_warning=self.warn)
        if begin and not found.exists():
            found = WorkItemStateFile(
                checkout, ref, spec_id=upstream_spec_id(ref), on_warning=self.warn
            )
        _inside(found.directory, checkout)
        return found
