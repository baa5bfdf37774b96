"""Which work item a checkout is, and which checkouts hold a repository file.

A work item's checkout is its session record's ``cwd``; a directory belongs to the live
session whose checkout is that directory or holds it. Paths are compared after links are
resolved, so a checkout named through a link is still found.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from the_loop.errors import TheLoopError, UsageError, WarningSink
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.repofile.values import SPECS_DIR
from the_loop.sessions.session import Session
from the_loop.spec.lane import read_lane
from the_loop.spec.words import lane_line


def session_holding(sessions: Iterable[Session], directory: Path) -> Session:
    """The live session whose checkout is ``directory`` or holds it (the innermost when
    checkouts nest). :class:`UsageError` when none does, or two items share that checkout."""
    here = Path(os.path.realpath(directory))
    holding: list[tuple[int, Session]] = []
    for session in sessions:
        if not (session.is_live and session.cwd):
            continue
        checkout = Path(os.path.realpath(session.cwd))
        if checkout == here or checkout in here.parents:
            holding.append((len(checkout.parts), session))
    if not holding:
        raise UsageError(
            f"{here} is in no live session's checkout on this machine: `the-loop done` runs "
            "inside the checkout of the agent's session"
        )
    deepest = max(depth for depth, _ in holding)
    innermost = sorted(session.ref for depth, session in holding if depth == deepest)
    if len(innermost) > 1:
        raise UsageError(
            f"{here} is the checkout of several live sessions ({', '.join(innermost)}): "
            "say which work item with one session per checkout"
        )
    return next(session for depth, session in holding if depth == deepest)


@dataclass(frozen=True)
class SpecCheckout:
    """A session record and the repository file in its checkout."""

    session: Session
    state_file: WorkItemStateFile


def spec_checkouts(
    sessions: Iterable[Session], *, on_warning: WarningSink | None = None
) -> list[SpecCheckout]:
    """Every record (any status) whose checkout holds its work item's repository file,
    in the order given; a checkout that is gone is skipped."""
    found: list[SpecCheckout] = []
    for session in sessions:
        state_file = state_file_in(session, on_warning=on_warning)
        if state_file is not None and state_file.exists():
            found.append(SpecCheckout(session, state_file))
    return found


def state_file_in(
    session: Session, *, on_warning: WarningSink | None = None
) -> WorkItemStateFile | None:
    """The repository file of ``session``'s work item in its checkout (there or not), or
    None when the record names no checkout or its checkout has no ``docs/specs``."""
    if not session.cwd or not os.path.isdir(os.path.join(session.cwd, SPECS_DIR)):
        return None
    return WorkItemStateFile(Path(session.cwd), session.work_item, on_warning=on_warning)


def with_lane(
    prompt: str, checkout: Path, work_item: WorkItemRef, *, on_warning: WarningSink | None = None
) -> str:
    """``prompt`` with the line that names the spec files and the current phase, when
    ``checkout`` holds ``work_item``'s started lane (a fresh session inherits it); as it is
    otherwise, or when the file cannot be read (said to ``on_warning``)."""
    if not os.path.isdir(os.path.join(checkout, SPECS_DIR)):
        return prompt
    try:
        state_file = WorkItemStateFile(checkout, work_item, on_warning=on_warning)
        if not state_file.exists():
            return prompt
        lane = read_lane(state_file.load())
    except (TheLoopError, OSError, ValueError) as error:
        if on_warning is not None:
            on_warning(f"{work_item.ref}: the first prompt does not name the spec lane: {error}")
        return prompt
    if not lane.started or lane.finished or lane.current not in [n.node for n in lane.nodes]:
        return prompt
    spec_dir = f"{SPECS_DIR}/{state_file.spec_id}"
    line = lane_line(spec_dir, str(lane.current), lane.node(str(lane.current)).status)
    return f"{prompt}\n\n{line}" if prompt else line
