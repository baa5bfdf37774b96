"""What a round does with the open pull requests a reader lists: link each to the live
work items it delivers (its head branch, a closing keyword), as ``sessions link-pr``
would, through the intake's ``link`` port; the rules are :func:`~the_loop.intake.pulls.owners_of`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from the_loop.errors import TheLoopError
from the_loop.intake.ports import Action
from the_loop.intake.pulls import PullRequest, owners_of
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import RoundView


def link_pulls(round_: RoundView, pulls: Sequence[PullRequest]) -> list[WorkItemRef]:
    """Link what is not linked yet; the round then sees its sessions (and the numbers it
    keeps) as the links left them. The pull requests it linked, in order."""
    intake = round_.intake
    link, done = intake.ports.link, list[WorkItemRef]()
    if link is None:
        return done
    for pr in pulls:
        linked = [p for s in round_.sessions.values() for p in s.pull_requests]
        for owner, how in owners_of(pr, round_.sessions):
            if pr.ref in linked or not pr.is_open or intake.stopping():
                continue
            try:
                newly = link(owner, pr.ref)
            except TheLoopError as error:
                intake.counts.failed.append(f"{owner.ref}: linking {pr.ref.ref}: {error}")
                continue
            if newly:
                _linked(round_, owner, pr, how)
                done.append(pr.ref)
    round_.sessions = intake.live_sessions(round_.repository)
    more = {p.number for s in round_.sessions.values() for p in s.pull_requests}
    round_.keep = round_.keep | more
    return done


def _linked(round_: RoundView, owner: WorkItemRef, pr: PullRequest, how: str) -> None:
    action = Action("linked", owner.ref, pr.author, reason=how, pull_request=pr.ref.ref)
    round_.intake.counts.actions.append(action)
    round_.intake.counts.linked += 1
    round_.intake.ports.emit(
        "pr.linked", work_item=owner.ref, pull_request=pr.ref.ref, by=how, author=pr.author
    )
