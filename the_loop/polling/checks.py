"""The poll reader's part of CI: which heads it watches, what it asks of each, and when.

Watched: each open pull request of the repository linked to a work item with a live
session here, and a live session's own item when it is a pull request. Its head SHA is
kept in the heads cache (``local/poll-heads.json``), taken from the open pull requests'
listing whenever a cycle reads it (:func:`note_heads`), else asked once
(``GET /pulls/{n}``). Each cycle a head has two answers to give, each a conditional GET
of every page: its check runs and its combined commit status. A new head is asked both;
an answer still running (a check run not completed, a status pending) is asked every
cycle; the rest take turns, one a cycle, so an idle head of one page costs one request a
cycle, answered 304. What each answer said last is kept, so a head is judged green by
both. The heads whose answers changed go to the round
(:meth:`~the_loop.intake.intake.Round.ci`) after the comments, with the look the round
asks for only a failure it pastes: at a failed Actions job (its steps, then its log), or
at who posted a failed status.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from the_loop.errors import TheLoopError
from the_loop.intake.ci import (
    CheckDetails,
    FailedCheck,
    HeadChecks,
    PartState,
    check_runs_reading,
    first_failed_step,
    head_verdict,
    status_creator,
    statuses_reading,
)
from the_loop.intake.intake import Intake, Round, same_repository
from the_loop.intake.pulls import PullRequest, pull_from_json
from the_loop.polling.ci_ports import CheckReads, HeadState, Part
from the_loop.polling.listing import PolledItems
from the_loop.polling.reads import ReaderPorts
from the_loop.ref import WorkItemRef

_PARTS: tuple[Part, ...] = ("runs", "statuses")


@dataclass(frozen=True)
class ChecksRead:
    """What a cycle read of its watched heads: those whose answers changed, and where
    their failed jobs are looked at."""

    name: str
    heads: tuple[HeadChecks, ...]
    checks: CheckReads

    def details(self, head: HeadChecks, check: FailedCheck) -> CheckDetails:
        """The first failed step and the log of the Actions job that ran ``check``
        (nothing for another app); what could not be read is said instead. Of a status:
        who posted it, when the newest statuses of the head say (else nothing)."""
        if check.kind == "status":
            return CheckDetails(by=self._creator(head, check))
        if check.job_id is None:
            return CheckDetails()
        try:
            job = self.checks.job(self.name, check.job_id)
        except TheLoopError as error:
            return CheckDetails(missing=f"its job could not be read ({error})")
        step = first_failed_step(job)
        try:
            log = self.checks.job_log(self.name, check.job_id)
        except TheLoopError as error:
            return CheckDetails(step, None, f"its log could not be fetched ({error})")
        return CheckDetails(step, log)

    def _creator(self, head: HeadChecks, check: FailedCheck) -> str:
        if check.status_id is None:
            return ""
        try:
            statuses = self.checks.statuses(self.name, head.sha)
        except TheLoopError:
            return ""  # who posted it goes unsaid; the paste does not wait for it
        return status_creator(statuses, check.status_id)


def watched_heads(round_: Round, items: PolledItems) -> dict[WorkItemRef, WorkItemRef]:
    """Each open pull request of the round's repository a live session takes CI for,
    and that session's work item (a pull request that is its own work item first)."""
    found: dict[WorkItemRef, WorkItemRef] = {}
    for ref, session in round_.sessions.items():
        for pr in session.pull_requests:
            if same_repository(pr, round_.repository):
                found.setdefault(pr, ref)
    for ref in round_.sessions:
        listed = items.listing.items.get(ref.number)
        changed = items.changed.get(ref)
        if (listed is not None and listed.is_pull_request) or (changed and changed.is_pull):
            found[ref] = ref
    return {pr: owner for pr, owner in found.items() if _open(items, pr)}


def note_heads(reads: ReaderPorts, round_: Round, pulls: Sequence[PullRequest]) -> None:
    """Keep the head of each pull request of the open listing a live session owns (the
    listing is read only when one changed: a push shows there)."""
    owned = {pr for s in round_.sessions.values() for pr in s.pull_requests} | set(round_.sessions)
    for pr in pulls:
        kept = reads.heads.get(pr.ref.ref)
        if pr.ref in owned and pr.head_sha and (kept is None or kept.sha != pr.head_sha):
            reads.heads.put(pr.ref.ref, HeadState(pr.head_sha, pr.is_open))


def read_checks(
    name: str, round_: Round, items: PolledItems, reads: ReaderPorts, intake: Intake
) -> ChecksRead | None:
    """Ask GitHub what changed of each watched head, and forget the heads no longer
    watched; None when this reader reads no CI or the rate is below its reserve."""
    checks = reads.checks
    if checks is None or reads.github.rate_low():
        return None
    watched = watched_heads(round_, items)  # none without a live session: all forgotten
    changed: list[HeadChecks] = []
    for pr, owner in watched.items():
        if intake.stopping():
            break
        try:
            state = reads.heads.get(pr.ref) or _look_up(name, pr, checks)
            if state.sha and state.is_open:
                head, state = _read_head(name, pr, owner, state, checks)
                changed += [head] if head is not None else []
            reads.heads.put(pr.ref, state)
        except TheLoopError as error:
            intake.counts.failed.append(f"{name}: the checks of {pr.ref}: {error}")
    for ref in reads.heads.known():
        gone = WorkItemRef.parse(ref)
        if same_repository(gone, round_.repository) and gone not in watched:
            reads.heads.put(ref, None)  # no longer watched: its head is forgotten
    return ChecksRead(name, tuple(changed), checks)


def feed_checks(round_: Round, reads: ReaderPorts, read: ChecksRead | None) -> None:
    """Hand the round the heads that changed, then keep the heads (not after a stop: what
    was not handled is read again)."""
    intake = round_.intake
    if read is not None and read.heads and not intake.stopping():
        round_.ci(read.heads, details=read.details)
    if not intake.counts.stopped:
        reads.heads.save()


def _look_up(name: str, pr: WorkItemRef, checks: CheckReads) -> HeadState:
    """A watched pull request whose head is not known yet: one GET of it (one GitHub no
    longer has is kept as closed: its closure is the cycle's, and it is not asked again)."""
    try:
        data = checks.pull_request(name, pr.number)
    except TheLoopError as error:
        if getattr(error, "status", None) in (404, 410):  # the reads' refusal says so
            return HeadState("", is_open=False)
        raise
    try:
        found = pull_from_json(data, repository=pr)
    except ValueError as error:
        what = f"GitHub's answer for {pr.ref} is not a pull request: {error}"
        raise TheLoopError(what) from error
    return HeadState(found.head_sha, found.is_open)


def _read_head(
    name: str, pr: WorkItemRef, owner: WorkItemRef, state: HeadState, checks: CheckReads
) -> tuple[HeadChecks | None, HeadState]:
    """Ask the answers due this cycle; the head as the round takes it (None: nothing
    changed) and what to keep of it."""
    states: dict[Part, PartState] = {"runs": state.runs, "statuses": state.statuses}
    failed: list[FailedCheck] = []
    changed = False
    due: list[Part] = [p for p in _PARTS if states[p] in ("", "active") or state.turn == p]
    for part in due:
        ask = checks.check_runs if part == "runs" else checks.combined_status
        page = ask(name, state.sha, fresh=states[part] == "")
        if page.not_modified:
            continue
        reading = check_runs_reading(page.data) if part == "runs" else statuses_reading(page.data)
        states[part], changed = reading.state, True
        failed += reading.failed
    turn: Part = "statuses" if due == ["runs"] else "runs"  # the one asked longer ago
    kept = replace(state, runs=states["runs"], statuses=states["statuses"], turn=turn)
    if not changed:
        return None, kept
    verdict = head_verdict(states.values(), failed=bool(failed))
    return HeadChecks(pr, owner, state.sha, verdict, tuple(failed)), kept


def _open(items: PolledItems, pr: WorkItemRef) -> bool:
    """Open as far as this cycle knows (an item it knows nothing of is asked)."""
    changed = items.changed.get(pr)
    if changed is not None:
        return changed.is_open
    listed = items.listing.items.get(pr.number)
    return listed is None or listed.is_open
