"""What the intake's helpers see of the intake and of a round: the shared types, so the
room reads top-down. ``intake.py`` builds the intake and its rounds and calls the helpers
(drain, attention, answers, closures, claims, reviews, CI, linking, refusals,
acknowledgement); each helper names only these views, never ``intake.py``, so no
import runs back up.
"""

from __future__ import annotations

from typing import Protocol

from the_loop.intake.events import IssueComment
from the_loop.intake.ports import CycleCounts, IntakePorts, IntakeSettings, LiveSession
from the_loop.ref import WorkItemRef


class IntakeView(Protocol):
    """The intake of one cycle: its settings and collaborators, and the tally."""

    settings: IntakeSettings
    ports: IntakePorts
    counts: CycleCounts

    def stopping(self) -> bool: ...

    def live_sessions(self, repository: WorkItemRef) -> dict[WorkItemRef, LiveSession]: ...


class RoundView(Protocol):
    """One repository's round, as its helpers use it."""

    @property
    def intake(self) -> IntakeView: ...

    repository: WorkItemRef
    sessions: dict[WorkItemRef, LiveSession]
    keep: frozenset[int]

    def act(self, ref: WorkItemRef, verb: str, actor: str, comment_id: int) -> str: ...

    def command(self, comment: IssueComment, verb: str, *, key: str = "") -> None: ...

    def may_command(self, comment: IssueComment) -> bool: ...

    def refresh(self, ref: WorkItemRef) -> None: ...
