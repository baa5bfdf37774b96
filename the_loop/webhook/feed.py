"""The push reader: the inbox's deliveries, as pushes, fed to the intake.

The second reader of the one intake (decision 016), beside the poller. Per repository
that ``polling.repositories`` watches, in the order the pushes came, one
:class:`~the_loop.intake.intake.Round`: the pull requests pushed (linking and their
heads), the watched set over the items the pushes describe (a comment's item as its
payload says it is now), each comment, the reviews named (read whole: a push carries a
review but not its inline comments), the heads whose checks completed (read fresh, the
look at a failed job as the poller's), then the deliveries of the items touched and the
closures of the items that changed. The intake's one ledger, under each item's hold,
keeps every paste single whichever reader saw it first; the poller finds what a
dropped push missed.

What this reader knows of an item is what the pushes said: an item no push named is
taken as it was (open); one said closed is looked up before its session ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from the_loop.errors import TheLoopError
from the_loop.intake.ci import HeadChecks, check_runs_reading, head_verdict, statuses_reading
from the_loop.intake.events import Issue
from the_loop.intake.intake import Intake, Round, same_repository
from the_loop.intake.review_round import pull_request_owners
from the_loop.intake.reviews import (
    Review,
    ReviewComment,
    parsed,
    review_comment_from_json,
    review_from_json,
)
from the_loop.polling.checks import ChecksRead, note_heads
from the_loop.polling.reads import ReaderPorts
from the_loop.polling.review_reads import thread_heads
from the_loop.ref import WorkItemRef
from the_loop.webhook.translate import Push


@dataclass
class FeedReport:
    """What a batch came to: the deliveries handled (to mark processed), those not
    acted on and why, and each repository whose round failed (its deliveries stay)."""

    processed: list[str] = field(default_factory=list[str])
    ignored: list[tuple[Push, str]] = field(default_factory=list[tuple[Push, str]])
    failed: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class PushKnowledge:
    """:class:`~the_loop.intake.ports.ItemKnowledge` of what the pushes said."""

    said: Mapping[WorkItemRef, Issue]
    intake: Intake

    @property
    def changed(self) -> Mapping[WorkItemRef, Issue]:
        return self.said

    def known_open(self, ref: WorkItemRef) -> bool | None:
        issue = self.said.get(ref)
        return True if issue is None else issue.is_open  # unnamed: as it was

    def look_up(self, ref: WorkItemRef) -> Issue:
        """One GET of the item; one GitHub no longer has (404, 410) is ``gone``."""
        try:
            return self.intake.ports.github.item(ref)
        except TheLoopError as error:
            if getattr(error, "status", None) not in (404, 410):  # the reads' refusal says
                raise
            return Issue(ref, is_open=False, gone=str(error))


def feed(
    pushes: Sequence[Push], repositories: Sequence[str], reads: ReaderPorts, intake: Intake
) -> FeedReport:
    """Feed ``pushes`` (arrival order) to ``intake``; only ``repositories`` are acted on."""
    report = FeedReport()
    watched = {name.casefold(): name for name in repositories}
    groups: dict[str, list[Push]] = {}
    for push in pushes:
        if push.kind == "ignored":
            report.ignored.append((push, push.reason))
        elif push.repository.casefold() not in watched:
            report.ignored.append((push, f"{push.repository} is not in polling.repositories"))
        else:
            groups.setdefault(push.repository.casefold(), []).append(push)
            continue
        report.processed.append(push.delivery_id)
    for key, group in groups.items():
        if intake.stopping():
            break
        name = watched[key]
        try:
            _feed_repository(name, group, reads, intake)
        except TheLoopError as error:
            report.failed[name] = str(error)
            continue
        if not intake.counts.stopped:  # else all of it is fed again: the ledger keeps it once
            report.processed += [push.delivery_id for push in group]
    return report


def _feed_repository(name: str, pushes: list[Push], reads: ReaderPorts, intake: Intake) -> None:
    round_ = intake.round(pushes[0].repository_ref)
    pulls = [push.pull for push in pushes if push.pull is not None]
    if pulls and round_.sessions and intake.ports.link is not None:
        round_.pulls(pulls)
        note_heads(reads, round_, pulls)
    said: dict[WorkItemRef, Issue] = {}
    for push in pushes:
        if push.issue is not None:
            said.pop(push.issue.ref, None)
            said[push.issue.ref] = push.issue  # the latest word, in arrival order
    comments = [push.comment for push in pushes if push.comment is not None]
    new = [c.created_at for c in comments if not c.edited]
    read_from = min(new) if new else min((c.updated_at for c in comments), default=None)
    round_.watch(listed=None, knowledge=PushKnowledge(said, intake), read_from=read_from)
    touched: set[WorkItemRef] = set()
    round_.read_ahead(comments)
    for comment in comments:
        if intake.stopping():
            return
        round_.comment(comment)
        intake.ports.checkpoint(f"after-comment-{comment.id}")
        touched.add(comment.work_item)
    round_.claims()  # what a crash, or a claim not shown yet, left pending
    touched |= _reviews(name, pushes, round_, reads, intake)
    touched |= _checks(name, pushes, round_, reads, intake)
    round_.deliver(only=touched)
    if not intake.stopping():
        round_.closures()
    reads.heads.save()


def _reviews(
    name: str, pushes: list[Push], round_: Round, reads: ReaderPorts, intake: Intake
) -> set[WorkItemRef]:
    """The reviews pushed of pull requests a live session here takes reviews for, each
    read whole (itself when only an inline comment named it, then its inline comments)
    and handed to the round; the owners they were for."""
    owners = pull_request_owners(round_)
    named: dict[int, Push] = {}
    for push in pushes:
        if push.kind == "review" and push.pull_request in owners:
            named.setdefault(push.review_id, push)
    if not named or intake.stopping():
        return set()
    warn, repository = intake.ports.warn, round_.repository
    reviews: list[Review] = []
    comments: list[ReviewComment] = []
    for review_id, push in named.items():
        assert push.pull_request is not None
        pr = push.pull_request
        review = push.review or review_from_json(
            reads.github.review(name, pr.number, review_id), pull_request=pr
        )
        page = reads.github.review_comments_of(name, pr.number, review_id)
        reviews.append(review)
        comments += parsed(
            page.entries,
            lambda data: review_comment_from_json(data, repository=repository),
            what=f"an inline comment of review {review_id}",
            warn=warn,
        )
    submitted = [r.submitted_at for r in reviews if r.submitted_at is not None]
    heads = thread_heads(name, comments, repository, reads, warn)
    round_.reviews(reviews, comments, read_from=min(submitted, default=None), thread_heads=heads)
    return {owners[push.pull_request] for push in named.values() if push.pull_request}


def _checks(
    name: str, pushes: list[Push], round_: Round, reads: ReaderPorts, intake: Intake
) -> set[WorkItemRef]:
    """Each head pushed as completed that a live session here watches, its check runs
    and combined status read fresh, handed to the round; the owners they were for."""
    checks = reads.checks
    shas = {push.head_sha for push in pushes if push.kind == "checks"}
    if checks is None or not shas or intake.stopping():
        return set()
    owners = {
        pr: owner
        for pr, owner in pull_request_owners(round_).items()
        if same_repository(pr, round_.repository)
    }
    heads: list[HeadChecks] = []
    for text in reads.heads.known():
        pr = WorkItemRef.parse(text)
        state = reads.heads.get(text)
        if state is None or state.sha not in shas or not state.is_open or pr not in owners:
            continue
        runs = check_runs_reading(checks.check_runs(name, state.sha, fresh=True).data)
        statuses = statuses_reading(checks.combined_status(name, state.sha, fresh=True).data)
        failed = (*runs.failed, *statuses.failed)
        verdict = head_verdict((runs.state, statuses.state), failed=bool(failed))
        heads.append(HeadChecks(pr, owners[pr], state.sha, verdict, failed))
        reads.heads.put(text, replace(state, runs=runs.state, statuses=statuses.state))
    if heads:
        round_.ci(heads, details=ChecksRead(name, tuple(heads), checks).details)
    return {head.owner for head in heads}
