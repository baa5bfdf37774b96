"""What a round does with its watched heads' checks: one paste per failure, a budget, and
one escalation.

Each head is first counted in its pull request's poll ledger (``ci``; a linked PR's
lives in the owner's portable record, so it travels with the work item): a failing head
joins ``failing``, the consecutive failing heads in order; a green one empties it and ends
an escalation. Then each failed check the owner's ledger does not know is queued as one
paste into the owner's session (held while it is paused) while the head is among the
first ``polling.ci.maxFailingPushes`` failing heads; otherwise, or when the owner has no
live session, it is only recorded (settled, ``poll.ci_failure_recorded``). The head that
reaches the budget posts one marked comment on the ticket (``ci.escalated``): the intent
is written before the post and the mark after; an intent found without its mark is
settled by looking for the comment's own tag on the ticket, posting only when it is not
there, so a crash neither posts twice nor loses the comment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from the_loop.errors import TheLoopError
from the_loop.intake.ci import (
    CheckDetails,
    Details,
    FailedCheck,
    HeadChecks,
    check_key,
    check_paste,
)
from the_loop.intake.comments import SessionState
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.pastes import known_pastes, queue_paste, settle_pastes
from the_loop.intake.ports import Action
from the_loop.portable.poll import Ledger

if TYPE_CHECKING:
    from the_loop.intake.context import RoundView

#: The key of a pull request's poll ledger that holds its CI count and escalation.
CI = "ci"
FAILING = "failing"
ESCALATION = "escalation"
#: How many of the newest failing heads past the budget the ledger keeps (the first
#: ``maxFailingPushes`` are always kept: they say which heads were pasted).
_KEPT_PAST_BUDGET = 20


def escalation_tag(head: HeadChecks, sha: str) -> str:
    """The hidden line that names one escalation in its comment (what a restart looks for)."""
    return f"<!-- the-loop:ci-escalation {head.pull_request.ref} {sha} -->"


def take_checks(round_: RoundView, heads: Sequence[HeadChecks], details: Details) -> None:
    """Each head read anew, in order: counted, then its failures pasted or recorded, and
    the escalation when the head reaches the budget."""
    for head in heads:
        if round_.intake.stopping():
            return
        _Head(round_, head, details).take()


class _Head:
    """One head's handling, with the round's collaborators."""

    def __init__(self, round_: RoundView, head: HeadChecks, details: Details) -> None:
        self.round, self.head, self.details = round_, head, details
        self.intake = round_.intake
        self.ports = round_.intake.ports
        self.budget = max(self.intake.settings.max_failing_pushes, 1)

    def take(self) -> None:
        head = self.head
        position, escalation = self._count()
        if escalation is not None and escalation.get("state") == "intent":
            self._recover(escalation)
        if head.verdict != "failing":
            return
        session = self.round.sessions.get(head.owner)
        known = set(known_pastes(self.ports, head.owner))
        for check in head.failed:
            key = check_key(head.sha, check)
            if key in known:
                continue  # a re-run, a flap, a second failure of the same check on this head
            known.add(key)
            if session is None:
                self._record(check, key, "not-live")
            elif position > self.budget:
                self._record(check, key, "budget")
            else:
                self._queue(check, key, paused=session.state is SessionState.PAUSED)
        if session is not None and position >= self.budget and escalation is None:
            self._escalate(position)

    # -- the count ---------------------------------------------------------------

    def _count(self) -> tuple[int, dict[str, Any] | None]:
        """Count the head in the pull request's ledger (one locked write); its place among
        the consecutive failing heads (0: none; past the budget: the budget + 1) and the
        escalation that stands (a green head ends it, and with it an unsettled intent:
        at most once, never twice)."""
        head, budget, found = self.head, self.budget, list[tuple[int, Any]]()

        def change(ledger: Ledger) -> None:
            ci = _ci(ledger)
            failing = [str(s) for s in cast(list[Any], ci.get(FAILING) or [])]
            if head.verdict == "green":
                ci, failing = {}, []  # the count starts again; an escalation ends
            elif head.verdict == "failing" and head.sha not in failing:
                failing.append(head.sha)
                ci[FAILING] = failing[:budget] + failing[budget:][-_KEPT_PAST_BUDGET:]
            index = failing.index(head.sha) if head.sha in failing else -1
            place = 0 if index < 0 else index + 1 if index < budget else budget + 1
            found.append((place, ci.get(ESCALATION)))
            if ci:
                ledger[CI] = ci
            else:
                ledger.pop(CI, None)

        self.ports.ledger.change(head.pull_request, change)
        place, escalation = found[-1]
        return place, cast(dict[str, Any], escalation) if isinstance(escalation, dict) else None

    # -- pastes and records ------------------------------------------------------

    def _queue(self, check: FailedCheck, key: str, *, paused: bool) -> None:
        head, ports = self.head, self.ports
        try:
            details = self.details(head, check)
        except TheLoopError as error:  # the reader's look failed outright: paste without it
            details = CheckDetails(missing=f"its job could not be read ({error})")
        text = check_paste(head, check, details)
        extra = {"pullRequest": head.pull_request.ref, "check": check.name, "sha": head.sha}
        by = check.by or details.by
        if queue_paste(ports, head.owner, key, text, by=by, held=paused, extra=extra):
            self.intake.counts.ci_failures += 1
            self.intake.counts.held += paused

    def _record(self, check: FailedCheck, key: str, reason: str) -> None:
        head, ports = self.head, self.ports
        settle_pastes(ports, head.owner, [key])
        ports.emit(
            "poll.ci_failure_recorded",
            work_item=head.owner.ref,
            pull_request=head.pull_request.ref,
            key=key,
            check=check.name,
            conclusion=check.conclusion,
            reason=reason,
        )

    # -- the escalation ----------------------------------------------------------

    def _escalate(self, failing: int) -> None:
        """Write the intent, post the comment, mark it posted (each step a checkpoint)."""
        head = self.head
        intent: dict[str, Any] = {
            "state": "intent",
            "sha": head.sha,
            "failingPushes": failing,
            "checks": [c.name for c in head.failed],
            "url": next((c.url for c in head.failed if c.url), ""),
        }
        self._set_escalation(intent)
        self.ports.checkpoint("after-escalation-intent")
        self._post(intent)

    def _recover(self, escalation: dict[str, Any]) -> None:
        """An intent a crash (or a refused post) left unmarked: marked when the ticket
        holds its comment, else posted now; left for a later read when the ticket cannot
        be read."""
        sha, owner = str(escalation.get("sha", "")), self.head.owner
        try:
            thread = self.ports.github.thread(owner)
        except TheLoopError as error:
            self.ports.warn(f"{owner.ref}: could not look for the CI notice on the ticket: {error}")
            return
        tag = escalation_tag(self.head, sha)
        found = next((c for c in thread if tag in c.body), None)
        if found is None:
            self._post(escalation)
            return
        self.ports.posted.remember_posted(found.id)
        self._posted(escalation, found.id)

    def _post(self, escalation: dict[str, Any]) -> None:
        owner, body = self.head.owner, self._body(escalation)
        try:
            posted = self.ports.github.post_comment(owner, body)
        except TheLoopError as error:
            self.ports.warn(f"{owner.ref}: could not post the CI notice: {error}")
            return  # the intent stands: the next read of this head looks for it, then posts
        self.ports.checkpoint("after-escalation-post")
        if posted is not None:
            self.ports.posted.remember_posted(posted)
        self._posted(escalation, posted)

    def _posted(self, escalation: dict[str, Any], comment_id: int | None) -> None:
        """The event and the action, then the mark (a crash between the two repeats the
        event, never the comment)."""
        head = self.head
        checks = [str(c) for c in cast(list[Any], escalation.get("checks") or [])]
        count = int(escalation.get("failingPushes") or self.budget)
        self.ports.emit(
            "ci.escalated",
            "warning",
            work_item=head.owner.ref,
            pull_request=head.pull_request.ref,
            sha=str(escalation.get("sha", "")),
            failing_pushes=count,
            checks=checks,
            comment_id=comment_id,
        )
        action = Action(
            "escalated",
            head.owner.ref,
            verb=", ".join(checks),
            reason=str(count),
            pull_request=head.pull_request.ref,
            outcome="posted",
        )
        self.intake.counts.actions.append(action)
        self._set_escalation({**escalation, "state": "posted", "commentId": comment_id})
        self.ports.checkpoint("after-escalation-posted")

    def _body(self, escalation: dict[str, Any]) -> str:
        head, sha = self.head, str(escalation.get("sha", ""))
        checks = [str(c).replace("`", "'") for c in cast(list[Any], escalation.get("checks") or [])]
        named = ", ".join(f"`{c}`" for c in checks) or "its checks"
        url = str(escalation.get("url") or "")
        count = int(escalation.get("failingPushes") or self.budget)
        return (
            f"{AGENT_COMMENT_MARKER}\n{escalation_tag(head, sha)}\n"
            f"CI failed on {count} pushes in a row to {head.pull_request.ref} "
            f"(polling.ci.maxFailingPushes is {self.budget}), so the-loop no longer pastes "
            f"its CI failures into the agent's session. The last push, {sha[:12]}, failed "
            f"{named}" + (f": {url}" if url else "") + ". A green push starts the count again."
        )

    def _set_escalation(self, escalation: dict[str, Any]) -> None:
        def change(ledger: Ledger) -> None:
            ledger[CI] = {**_ci(ledger), ESCALATION: escalation}

        self.ports.ledger.change(self.head.pull_request, change)


def _ci(ledger: Ledger) -> dict[str, Any]:
    ci = ledger.get(CI)
    return dict(cast(dict[str, Any], ci)) if isinstance(ci, dict) else {}
