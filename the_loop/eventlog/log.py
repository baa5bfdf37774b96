"""The append-only JSONL event log and the catalogue of event types.

Each event is one compact JSON line appended whole by ``fsio.append_lines``, under
the log's own ``flock``, so writers never interleave or glue onto a torn line. Nothing
here rewrites or deletes the log; only a failed append of our own is cut back off.
``read_events`` (published) is a thin
wrapper over ``eventlog.query``, which reads the lines through ``eventlog.lines`` alone.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from the_loop.eventlog.lines import LEVELS
from the_loop.fsio import append_lines

ENVELOPE_KEYS = ("ts", "source", "event", "level", "pid")
SHADOWED_KEY = "shadowed"

#: Every event type emitted anywhere in the package: name -> one-line meaning.
EVENT_TYPES: dict[str, str] = {
    "session.registered": "A session record was written for a work item (work_item, harness, "
    "session_id, forced).",
    "session.spawned": "A harness was started in tmux for a work item (work_item, harness, "
    "session_id, tmux_target, cwd, model, effort; session_per_pr on a new spawn, resumed and "
    "actor when a resume restarted the agent, and fresh_start when it started it afresh under "
    "the same id: its session could not be resumed).",
    "session.spawn_failed": "A spawn failed and everything it created was undone (work_item, "
    "error, step).",
    "session.blocked": (
        "A live session's agent waits on a dialog; one marked notice said so on "
        "the ticket (work_item, blocked_on, prompt, comment_id, resets_at: a usage limit's "
        "reset, else null)."
    ),
    "session.unblocked": (
        "A blocked agent's dialog ended; its notice was edited to say how "
        "(work_item, blocked_on, how)."
    ),
    "session.trust_answered": (
        "The-loop answered Claude Code's folder-trust dialog in a checkout, as "
        "routing.harnesses.claude.trustCheckouts says (work_item, dialog)."
    ),
    "session.spend": (
        "What one agent session has spent so far, at each new turn and at most once a minute "
        "within one (work_item, session_id, spend: usd, turns, hours, tokens)."
    ),
    "budget.warned": (
        "A work item's agents reached routing.budget.warnAt of a limit; one marked comment "
        "warned the ticket (work_item, limit, spent, budget)."
    ),
    "budget.exceeded": (
        "A work item's agents reached a limit of its budget: the turn was interrupted, "
        "deliveries wait, one marked comment gave the figures (work_item, limit, spent, "
        "budget, spend, limits)."
    ),
    "budget.raised": (
        "An authorized login's budget comment raised one limit of a work item's budget "
        "(work_item, actor, comment_id, limit, raised_by, budget)."
    ),
    "session.answered": (
        "An authorized login's allow or deny chose that option of the agent's "
        "permission prompt (work_item, answer, actor, comment_id)."
    ),
    "session.restarted": (
        "An exited agent was started again because comments waited for it "
        "(work_item, exit_status, reason)."
    ),
    "session.exited_again": (
        "An agent exited again within two minutes of its restart: not restarted "
        "again, one notice on the ticket (work_item)."
    ),
    "session.limit_answered": (
        "The-loop chose the wait of Claude Code's usage-limit dialog, as "
        "routing.resumeAfterLimit says: it continues the agent itself (work_item, dialog)."
    ),
    "session.limit_continue_queued": (
        "The usage limit an agent stopped at has reset: its one continue was queued ahead of "
        "the comments that waited, as routing.resumeAfterLimit says (work_item, key, "
        "resets_at)."
    ),
    "session.limit_continued": (
        "The continue after a usage limit reached the agent's pane (work_item, key, attempt; "
        "resolved when a crashed attempt's paste was found by its mark)."
    ),
    "session.stalled": (
        "A working agent showed no sign of progress for routing.stallMinutes: one marked "
        "notice said so on the ticket (work_item, since, minutes, comment_id)."
    ),
    "session.stall_cleared": (
        "A stalled agent went on (or its turn ended, or it exited); its notice was edited "
        "to say so (work_item, how)."
    ),
    "session.paused": "A live session was paused: deliveries are held (work_item).",
    "session.resumed": "A paused session was resumed (work_item).",
    "session.closed": "A session record was closed (work_item, reason).",
    "session.retained": "A closed session's tmux session was kept for its transcript "
    "(work_item, tmux_target).",
    "session.pr_linked": "A pull request was linked to a work item's session record "
    "(work_item, pull_request).",
    "session.cleaned": "Every local resource of a work item was released (work_item, actor, "
    "command_source, tmux_killed, checkout_removed, checkouts, checkouts_kept: those holding "
    "work, left in place, record_removed, control_recorded, errors).",
    "session.reset": "A work item's local CLI state was reset (work_item, actor, removed: the "
    "pieces erased — workspace|session|control|poll|pullRequests|channels|record, empty when "
    "nothing was found; foreign: the keys another release wrote, erased with the record; "
    "was_live; ended; found; error).",
    "workspace.prepared": "A checkout was prepared for a work item (work_item, path, strategy, "
    "created: whether this spawn made it).",
    "workspace.cleaned": "A work item's checkout was removed (work_item, path).",
    "control.recorded": "An authorized command was recorded in the control section (work_item, "
    "command, command_source: comment or cli, actor).",
    "comment.posted": "A keyword comment was posted on the ticket (work_item, command).",
    "comment.failed": "Posting a keyword comment failed; the local action stands (work_item, "
    "command, error).",
    "poll.started": "The poller daemon started (interval_seconds).",
    "poll.stopped": "The poller stopped on SIGTERM or SIGINT, the daemon or a poll --once "
    "(cycles, signal, cut_short: whether the stop ended a cycle early, between two items).",
    "poll.pidfile_restored": "The poller daemon found its pidfile removed or replaced by a "
    "file nobody locked, and holds it again (pidfile).",
    "poll.reconciling": "The poller daemon found a webhook receiver running on the state root "
    "that has accepted a signed delivery: its cycle stretches to polling.reconcileSeconds "
    "(receiver_pid, seconds).",
    "poll.reconcile_ended": "The webhook receiver the poller daemon reconciled behind stopped "
    "(or no longer counts): the cycle is polling.intervalSeconds again (receiver_pid).",
    "poll.cycle": "One poll cycle ended (requests, not_modified, delivered, commands, settled, "
    "errors, rate_remaining, duration_ms).",
    "poll.baselined": "An item seen for the first time had its existing comments recorded as seen "
    "(work_item, comments).",
    "poll.review_delivered": "A pull request's review reached the pane of the session that "
    "owns it, as one paste (work_item, key: review-<id>, attempt).",
    "poll.ci_failure_delivered": "A check that failed on a pull request's head reached the "
    "pane of the session that owns it (work_item, key: ci-..., attempt).",
    "poll.ci_failure_recorded": "A check that failed on a pull request's head was recorded, "
    "not pasted: the owner has no live session, or the pull request's retry budget is spent "
    "(work_item, pull_request, key, check, conclusion, reason: not-live or budget).",
    "ci.escalated": "A pull request's CI failed on polling.ci.maxFailingPushes pushes in a row: "
    "its failures are no longer pasted, and one marked comment said so on the ticket "
    "(work_item, pull_request, sha, failing_pushes, checks, comment_id).",
    "poll.review_settled": "A pull request's review was settled without a paste: history, "
    "the-loop's own, a bot's, a stranger's, a command's or all outdated (work_item, "
    "pull_request, review_id, login, reason).",
    "poll.acknowledged": "A delivery was acknowledged on GitHub with one eyes reaction by the "
    "token's login: on the comment, on a review's first inline comment, or on the pull "
    "request of a review without one (work_item, key, kind, subject_id).",
    "poll.acknowledge_failed": "GitHub refused a delivery's eyes reaction; the delivery "
    "stands, and the reaction is tried again on a later cycle unless given up (work_item, "
    "key, kind, subject_id, failures, given_up, error).",
    "pr.linked": "The poller linked a pull request to the work item it delivers, by its head "
    "branch or a closing keyword in its body (work_item, pull_request, by, author).",
    "poll.command": "An authorized keyword comment ran its control action (work_item, command, "
    "actor,"
    " comment_id, outcome).",
    "poll.comment_delivered": "A comment was pasted into the session's pane, alone or with the "
    "comments that waited with it, and the paste marked (work_item, comment_id, attempt; "
    "resolved: `marked` when a crashed attempt's paste was found by its mark in the pane, by "
    "whichever reader came next).",
    "poll.comment_held": "A comment on a paused item was held until resume (work_item, "
    "comment_id).",
    "poll.paste_submitted": (
        "A paste waited in the agent's input box, its Enter lost: Enter was pressed on it, "
        "never a second paste (work_item, key)."
    ),
    "poll.paste_dropped": (
        "An agent that says what it received sat idle after a paste without taking it as a "
        "turn: the paste is tried again while attempts are left (work_item, key)."
    ),
    "poll.comment_given_up": "A comment was given up after its attempts, with one marked notice "
    "on the ticket "
    "(work_item, comment_id, why).",
    "poll.unauthorized": "A keyword comment by someone not in routing.authorizedUsers was ignored "
    "(work_item, comment_id, login).",
    "poll.ambiguous": "A keyword comment named two different verbs; neither ran (work_item, "
    "comment_id,"
    " login, verbs).",
    "poll.access_refused": "A keyword comment by a login in routing.authorizedUsers was refused: "
    "GitHub says it cannot write to the repository (routing.requireWriteAccess), or could not "
    "say (permission unknown, error) (work_item, comment_id, login, permission, error).",
    "poll.closure": "A closed or merged ticket ended its session through the close path, or a "
    "linked PR only its endpoint; or a reopened one cleared the closed state (work_item, "
    "pull_request, state, previous_state, action, cleanup, closed_by).",
    "poll.item_gone": "GitHub no longer has a ticket (deleted or transferred: its GET answered "
    "404 or 410, or redirected to the issue it was transferred to): its session ended through "
    "the close path with its checkouts kept, or a linked PR only its endpoint; the ledger "
    "records it gone, so it is not asked again (work_item, pull_request: empty for the work "
    "item itself, action, cleanup, why).",
    "poll.repository_renamed": "GitHub redirected the reads of a repository polling.repositories "
    "names to a repository of another name (renamed, or moved to another owner): it is polled "
    "by its new name from then on (no redirect paid for again), under the name the config "
    "gives it, and this is said once for each new name (repository, renamed_to).",
    "poll.rate_limited": "GitHub's rate limit held the poller back: below the reserve only the "
    "reads ran (repository, step), or a 403/429 set the back-off of every repository "
    "(repository, status, retry_after, wait_seconds).",
    "poll.backing_off": "One repository's own failure (a 5xx, no answer within the deadline, an "
    "answer not GitHub's shape) set or stepped its back-off: the next cycles skip it until the "
    "wait ends, the other repositories are polled (repository, failures, reason, wait_seconds).",
    "poll.breaker_open": "A session had polling.maxDeliveriesPerHour deliveries within the hour: "
    "further "
    "ones are held (work_item, recent).",
    "webhook.started": "The webhook receiver started listening; with insecure true it checks no "
    "signature (host, port, path, insecure).",
    "webhook.stopped": "The webhook receiver stopped on SIGTERM or SIGINT after finishing what it "
    "had accepted (signal, accepted, duplicate, rejected: its counts since it started; left: the "
    "accepted deliveries still in the inbox).",
    "serve.started": "The local API server started listening (host, port, exposed: true when it "
    "listens beyond loopback).",
    "serve.stopped": "The local API server stopped on SIGTERM or SIGINT (signal, answered: the "
    "requests it answered).",
    "webhook.left_in_inbox": "The webhook receiver stopped with accepted deliveries it had not "
    "acted on; they wait in the inbox for its next start (left; reason: deadline when not "
    "finished within webhook.finishSeconds, failed when a batch's round failed, no-token "
    "without a GitHub token; seconds: webhook.finishSeconds).",
    "webhook.pidfile_restored": "The webhook receiver found its pidfile removed or replaced by a "
    "file nobody locked, and holds it again (pidfile).",
    "webhook.accepted": "A signed delivery was written to the inbox, then answered 202 (delivery: "
    "GitHub's X-GitHub-Delivery, github_event: its X-GitHub-Event, peer).",
    "webhook.duplicate": "A delivery whose id the inbox already holds or processed was answered "
    "202 and not stored again (delivery, github_event, peer).",
    "webhook.ignored": "A signed delivery of an event the-loop does not act on was answered 202 "
    "and not stored (delivery, github_event, peer).",
    "webhook.ping": "GitHub's signed ping was answered 200 (delivery, peer).",
    "webhook.processed": "A batch of the inbox's deliveries was fed to the intake (deliveries: "
    "handled and marked processed; ignored; delivered, commands, reviews, ci_failures, closed: "
    "what the intake did; failed: the repositories whose round failed, their deliveries kept; "
    "errors: items whose own step failed, each a line on stderr; "
    "requests: GitHub requests it made).",
    "webhook.not_acted": "A stored delivery the intake does not act on was marked processed "
    "(delivery, github_event, action, reason: an action not acted on, a repository not in "
    "polling.repositories, or a payload without what its event needs).",
    "claim.posted": (
        "This machine posted its marked claim (or its notice that a start named a machine nobody "
        "has seen claiming) on the ticket, before deciding the round (work_item, start: the start"
        " comment's id, comment_id, kind: claim or no-machine)."
    ),
    "claim.won": (
        "This machine's claim was the lowest for a start, so it took the start here (work_item, "
        "start, comment_id: the winning claim, outcome: the start's)."
    ),
    "claim.contested": (
        "A claim lower than the one this machine won a start with showed up after it took the "
        "start (GitHub had not shown it yet): the item is that machine's, this machine deleted "
        "its own claim and ended its session for the item, checkouts kept "
        "(work_item, start, machine, name, comment_id: the lower claim, own_comment_id)."
    ),
    "claim.gone": (
        "This machine's claim on a start was still not in the thread ten minutes after the start "
        "(a person deleted it): the round is given up, nothing is started here for it, and a new "
        "start opens another (work_item, start, comment_id)."
    ),
    "claim.lost": (
        "Another machine holds a work item: its claim for a start was the lowest, or the start "
        "named it; this machine deleted its own claim, if it had posted one, delivers nothing "
        "for the item and ends a session of its own for it, checkouts kept (work_item, start, "
        "machine, name, comment_id: the winning claim, null when the start named the machine)."
    ),
    "claim.unknown_machine": (
        "A start named a machine nobody has seen claiming on the repository, so no machine starts"
        " it; one marked notice says which machines have been seen (work_item, start, named, "
        "notice_posted: whether this machine's notice is the one kept)."
    ),
    "spec.phase_done": "The agent said a spec phase is done with the-loop done: its artifact "
    "was committed with every required section, and the lane moved (work_item, phase; status: "
    "waiting when its gate opened for a person, else pass; current_node: the phase the lane is "
    "at now, or done; artifact: the file checked, empty for implementation).",
    "spec.decided": (
        "A person's decision for a work item's spec lane was carried out, once, or refused with "
        "its reason said on the ticket (work_item, command: approve, changes, skip or start; "
        "phase; outcome: approved, changes, skipped, started or refused; actor; link: the comment"
        " or review that decided; reason: why it was refused, else empty)."
    ),
    "spec.gate_opened": (
        "A spec phase's gate opened and its one marked comment was said on the ticket: what is "
        "ready, its link at its commit, and how to decide (work_item, phase, round: 1, then one "
        "more for each time it was sent back; comment_id: null when GitHub did not say)."
    ),
    "spec.pasted": (
        "A spec lane's paste reached the pane of the item's session: a phase's start, or a phase "
        "sent back with what to change and the gate's comments (work_item, key: "
        "spec-<phase>-<when it began>, or spec-<phase>-changes-<digest> for a phase sent "
        "back; attempt)."
    ),
    "spec.review_appended": (
        "The authorized comments made while a gate was open, and its decision, were appended to "
        "the phase's document under Review comments, each once, and committed (work_item, phase, "
        "comments: how many were owed, those already there not appended again)."
    ),
    "webhook.given_up": "A delivery whose repository's round failed five batches in a row was "
    "marked processed without being acted on; the poller reconciles what it said (delivery, "
    "github_event, attempts, error).",
    "webhook.rejected": "A request was refused with a plain-text answer, or ended by its client "
    "before one (status: 400, 401, 404, 405, 408, 411, 413, 431, 500 or 503; reason: the check "
    "that refused it; delivery and github_event when sent in GitHub's form; peer; error: for a "
    "500).",
}


def utc_timestamp_ms(now: float | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` for ``now`` (default: the current time)."""
    moment = time.time() if now is None else now
    seconds = int(moment)
    millis = int((moment - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def utc_timestamp(now: float | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``: the timestamp format of every store."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


class EventLog:
    """Appends events for one process ``source`` to the JSONL file at ``path``."""

    def __init__(self, path: Path, source: str = "") -> None:
        self.path = Path(path)
        self.source = source

    def build(self, event: str, /, level: str = "info", **fields: Any) -> dict[str, Any]:
        """The event object: envelope first; fields that collide go under ``shadowed``."""
        record: dict[str, Any] = {
            "ts": utc_timestamp_ms(),
            "source": self.source,
            "event": event,
            "level": level if level in LEVELS else "info",
            "pid": os.getpid(),
        }
        shadowed = {key: value for key, value in fields.items() if key in record}
        record.update({key: value for key, value in fields.items() if key not in record})
        if shadowed:
            record[SHADOWED_KEY] = shadowed
        return record

    def emit(self, event: str, /, level: str = "info", **fields: Any) -> bool:
        """Append one event line; return False (never raise) when the log cannot be written."""
        line = (
            json.dumps(
                self.build(event, level, **fields),
                separators=(",", ":"),
                ensure_ascii=False,
                default=str,
            )
            + "\n"
        )
        try:
            append_lines(self.path, line.encode("utf-8"))
        except OSError:
            return False  # nothing of this line is left behind (see ``append_lines``)
        return True


class NullEventLog(EventLog):
    """An event log that emits nothing: what ``events=None`` means to every collaborator."""

    def __init__(self) -> None:
        super().__init__(Path(os.devnull))

    def emit(self, event: str, /, level: str = "info", **fields: Any) -> bool:
        """Append nothing; True, since nothing failed."""
        return True


#: The one null event log: pass it (or leave ``events`` None) to emit nothing.
NO_EVENTS: EventLog = NullEventLog()


def or_no_events(events: EventLog | None) -> EventLog:
    """``events``, or :data:`NO_EVENTS` for None (the published ``events=None`` keyword)."""
    return NO_EVENTS if events is None else events


@dataclass
class EventRead:
    """Events parsed from a log, with the count of lines that were not events."""

    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    corrupt: int = 0


def read_events(path: Path, **filters: Any) -> EventRead:
    """Every well-formed event in ``path`` that ``filters`` keep; corrupt lines are counted.

    The published reader (``api.md``): :func:`the_loop.eventlog.query.query_events` with an
    ``EventFilter(**filters)`` (``types``, ``work_item``, ``source``, ``min_level``, ``since``).
    """
    from the_loop.eventlog.query import EventFilter, query_events  # only a reader needs it

    result = query_events(path, EventFilter(**filters))
    return EventRead(events=list(result.events), corrupt=result.corrupt)
