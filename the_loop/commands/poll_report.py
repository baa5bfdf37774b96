"""What ``poll`` says of a cycle: a line per action, the tally, the daemon's stderr line,
and ``poll status``'s view of the last cycle.

A cycle's report (``one_cycle``) is the JSON summary and ``local/poll-status.json``;
its actions, in the order the cycle took them, are the items and the text lines.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from the_loop.commands.render import Result
from the_loop.errors import EXIT_FAILED, EXIT_OK

Item = Mapping[str, Any]


def report_result(report: Mapping[str, Any]) -> Result:
    """``poll --once``: one line per action, then the tally; each action an item, the
    rest of the report the summary. Exit 1 when a repository or an item failed."""
    failed: list[str] = list(report.get("failed", ()))
    actions: list[Item] = list(report.get("actions", ()))
    summary = {key: value for key, value in report.items() if key != "actions"}
    lines = (*(action_line(action) for action in actions), tally_line(report))
    return Result(
        items=actions,
        summary=summary,
        text=lambda: lines,
        errors=tuple(failed),
        exit_code=EXIT_FAILED if failed else EXIT_OK,
    )


def tally_line(report: Mapping[str, Any]) -> str:
    """The counts of a cycle, its requests and how long it took."""
    return (
        f"poll: {report['requests']} requests ({report['not_modified']} not modified), "
        f"{report['delivered']} delivered, {report.get('acknowledged', 0)} acknowledged, "
        f"{report['commands']} commands, "
        f"{report['settled']} settled, {report.get('closed', 0)} closed, "
        f"{report.get('linked', 0)} linked, {report.get('reviews', 0)} reviews, "
        f"{report.get('ci_failures', 0)} CI failures, "
        f"{len(report['failed'])} failed; rate remaining {report['rate_remaining']}; "
        f"{report['duration']:.2f}s"
        + ("; stopped early on request" if report.get("stopped") else "")
    )


def new_failures(report: Mapping[str, Any]) -> list[str]:
    """This cycle's failures, less the repositories it did not ask for their back-off."""
    skipped = set(report.get("skipped", ()))
    return [failure for failure in report.get("failed", ()) if failure not in skipped]


def did_something(report: Mapping[str, Any]) -> bool:
    """Whether a cycle acted, baselined a thread or failed anew: the cycles the daemon
    reports (a repository still backing off is said when it starts, not every cycle)."""
    return bool(report.get("actions") or report.get("baselined") or new_failures(report))


def daemon_line(report: Mapping[str, Any]) -> str:
    """The daemon's one stderr line for a cycle that did something: when, then the tally."""
    at = str(report.get("finishedAt", "")) or _utc(time.time())
    return f"{at} {tally_line(report)}"


def action_line(action: Item) -> str:
    """One sentence of what the cycle did for an item, and who asked."""
    ref, kind = str(action.get("workItem", "")), str(action.get("kind", ""))
    who, verb = _who(action), str(action.get("verb", ""))
    comment = f"comment {action.get('commentId')}"
    reason, outcome = str(action.get("reason", "")), str(action.get("outcome", ""))
    if kind == "command":
        return f"{ref}: ran `{verb}` for {who} ({comment}): {outcome}"
    if kind == "refused":
        return f"{ref}: {_refusal(action, who, verb, comment)}"
    if kind == "delivered":
        return f"{ref}: delivered {_what(action)} from {who} into the agent's pane"
    if kind == "closed":
        by = f" by {who}" if action.get("actor") else ""
        return f"{ref}: {reason or 'closed'} on GitHub{by}: session ended, {_left(action)}"
    if kind in _PLAIN:
        return _PLAIN[kind].format(ref=ref, reason=reason)
    if kind == "endpoint":
        return f"{ref}: linked {action.get('pullRequest')} {reason}: its endpoint ended"
    if kind == "linked":
        how = "its head branch" if reason == "branch" else "a closing keyword in its body"
        return f"{ref}: linked pull request {action.get('pullRequest')} (by {how})"
    if kind == "escalated":
        return (
            f"{ref}: CI of {action.get('pullRequest')} failed on {reason} pushes in a row "
            f"({verb}): its failures are no longer pasted; a comment on the ticket says so"
        )
    return f"{ref}: {kind}"


#: The sentences of the actions said by their work item and reason alone.
_PLAIN = {
    "handed": "{ref}: held by {reason}: this machine's session ended, checkouts kept",
    "gone": "{ref}: gone from GitHub ({reason}): session ended, checkouts kept",
    "reopened": "{ref}: open again on GitHub: the recorded {reason!r} state was cleared",
}


def _refusal(action: Item, who: str, verb: str, comment: str) -> str:
    reason = str(action.get("reason", ""))
    if reason == "ambiguous":
        return f"refused {comment} from {who}: it names more than one command ({action['outcome']})"
    if reason == "not-delivered-from":
        return (
            f"did not deliver {comment} from {who}: not in routing.authorizedUsers and "
            "polling.deliverFrom is authorized"
        )
    asked = f"refused `{verb}` from {who} ({comment})" if verb else f"refused {comment} from {who}"
    if reason == "not-authorized":
        return f"{asked}: not in routing.authorizedUsers"
    if reason == "permission-unknown":
        return f"{asked}: GitHub could not say whether {who} may write to the repository"
    permission = reason.removeprefix("permission-")
    return f"{asked}: GitHub says {who} has {permission} access, not write"


def status_lines(last: object) -> list[str]:
    """``poll status``'s lines of the last cycle: when it ended, what it did, when the
    next is due (none when no cycle has run here)."""
    if not isinstance(last, Mapping) or "requests" not in last:
        return ["poll: no cycle has run here yet"]
    report: Mapping[str, Any] = last  # pyright: ignore[reportUnknownVariableType]
    at = str(report.get("finishedAt", "")) or "an unknown time"
    lines = [f"poll: last cycle at {at}: {tally_line(report).removeprefix('poll: ')}"]
    lines += [f"poll: {action_line(action)}" for action in report.get("actions", ())]
    lines += [f"poll: failed: {failure}" for failure in report.get("failed", ())]
    return lines


def _what(action: Item) -> str:
    """What a delivery pasted: a comment, a review, a check's failure."""
    key = str(action.get("commentId"))
    if key.startswith("review-"):
        return f"review {key.removeprefix('review-')}"
    if key.startswith("ci-"):
        return f"the failure of check {action.get('verb') or key}"
    if key.startswith("limit-"):
        return "the continue after a usage limit"
    return f"comment {key}"


def _left(action: Item) -> str:
    """What a closure did with the checkouts: kept (a closer not authorized), or cleaned up."""
    if action.get("outcome") != "cleaned":
        return "checkouts kept"
    removed, kept = int(action.get("checkoutsRemoved", 0)), int(action.get("checkoutsKept", 0))
    said = [f"{removed} checkout(s) removed"] if removed else []
    said += [f"{kept} kept: they hold work"] if kept else []
    return ", ".join(said) or "no checkout to remove"


def _who(action: Item) -> str:
    actor = str(action.get("actor", ""))
    return f"@{actor}" if actor else "someone"


def _utc(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
