"""A pull request's CI as plain values, and the paste of a check that failed.

A reader hands a round each watched head whose checks it read anew (:class:`HeadChecks`):
the pull request, the work item whose session owns it, the commit, whether the head is
failing, green or neither yet, and the checks found failed on it: a check run completed
``failure`` or ``timed_out``, a commit status ``failure`` or ``error``. A failure is
pasted once per (head SHA, check name), under :func:`check_key`; its paste
(:func:`check_paste`) names the check, its conclusion and link, the first failed step,
and, when GitHub Actions ran it, the last lines of that step's log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from the_loop.intake.delivery import CUT_AT, HIDDEN_NOTE, quoted, visible_text
from the_loop.ref import WorkItemRef

#: A check run's conclusions that fail it, and a commit status's states.
FAILED_CONCLUSIONS = frozenset({"failure", "timed_out"})
FAILED_STATES = frozenset({"failure", "error"})
#: The conclusions a green head's check runs may have.
GREEN_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
#: The most lines of a log a paste holds (then cut to :data:`~the_loop.intake.delivery.CUT_AT`
#: characters, keeping the end).
LOG_LINES = 150
#: The app whose check runs are GitHub Actions jobs (their log can be fetched).
ACTIONS_APP = "github-actions"

#: What one answer (the check runs, or the combined status) says of a head: nothing
#: there, something still running, a failure, every one green, or done otherwise
#: (cancelled, action required). ``""``: not read yet.
PartState = Literal["", "none", "active", "failing", "green", "other"]
#: What a head is, by both answers.
Verdict = Literal["failing", "green", "pending"]

_JOB_IN_URL = re.compile(r"/actions/runs/\d+/job/(\d+)")
_KEY_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")
#: A terminal's escape sequences a log carries, to strip: CSI (colours), OSC (titles,
#: links), and the short ones. The escape character is named, never written, here.
_ESC = re.escape(chr(27))
_ANSI = re.compile(rf"{_ESC}\[[0-9;?]*[ -/]*[@-~]|{_ESC}\][^\a{_ESC}]*(?:\a|{_ESC}\\)?|{_ESC}[@-_]")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ?")


@dataclass(frozen=True)
class FailedCheck:
    """A check run or a commit status that failed: its name (a status's context), its
    conclusion (a status's state), its link, the Actions job that ran it (None: not
    GitHub Actions, or a status), and a status's id."""

    name: str
    conclusion: str
    url: str = ""
    kind: Literal["check", "status"] = "check"
    job_id: int | None = None
    #: What the check said of itself: a check run's output title, a status's description.
    summary: str = ""
    #: Who reported it: a check run's app (a status's creator is not in the answer read).
    by: str = ""
    status_id: int | None = None


@dataclass(frozen=True)
class PartReading:
    """What one answer says: its state, and the checks it found failed."""

    state: PartState
    failed: tuple[FailedCheck, ...] = ()


@dataclass(frozen=True)
class HeadChecks:
    """A watched pull request's head as the reader just read it."""

    pull_request: WorkItemRef
    #: The work item whose session owns the pull request (itself, when it is its own).
    owner: WorkItemRef
    sha: str
    verdict: Verdict
    failed: tuple[FailedCheck, ...] = ()


@dataclass(frozen=True)
class CheckDetails:
    """What the reader found of a failed check's job: its first failed step, its log as
    GitHub served it (None: not fetched), and why something is missing (``""``: nothing
    is, or nothing was to be fetched); of a failed status, who posted it (``""``: not
    found)."""

    first_failed_step: str = ""
    log: str | None = None
    missing: str = ""
    by: str = ""


#: ``details(head, check)``: the reader's look at a failed check's job, asked only for a
#: failure about to be pasted (so a log is downloaded once).
Details = Callable[[HeadChecks, FailedCheck], CheckDetails]


def check_runs_reading(data: Mapping[str, Any]) -> PartReading:
    """``GET /commits/{sha}/check-runs``'s answer: its state and failed runs (an entry
    without a name is skipped)."""
    runs = [r for r in _objects(data.get("check_runs")) if _text(r, "name")]
    failed: list[FailedCheck] = []
    for run in runs:
        conclusion = _text(run, "conclusion")
        if _text(run, "status") == "completed" and conclusion in FAILED_CONCLUSIONS:
            failed.append(_failed_run(run, conclusion))
    active = any(_text(r, "status") != "completed" for r in runs)
    green = all(_text(r, "conclusion") in GREEN_CONCLUSIONS for r in runs)
    return PartReading(_state(bool(runs), active, bool(failed), green), tuple(failed))


def statuses_reading(data: Mapping[str, Any]) -> PartReading:
    """``GET /commits/{sha}/status``'s answer (the latest status of each context; it
    does not say who posted one: see :func:`status_creator`)."""
    statuses = [s for s in _objects(data.get("statuses")) if _text(s, "context")]
    failed = tuple(
        FailedCheck(
            _text(s, "context"),
            _text(s, "state"),
            _text(s, "target_url"),
            "status",
            summary=_text(s, "description"),
            status_id=_positive(s.get("id")),
        )
        for s in statuses
        if _text(s, "state") in FAILED_STATES
    )
    active = any(_text(s, "state") == "pending" for s in statuses)
    green = all(_text(s, "state") == "success" for s in statuses)
    return PartReading(_state(bool(statuses), active, bool(failed), green), failed)


def status_creator(statuses: Iterable[Mapping[str, Any]], status_id: int) -> str:
    """The login of whoever posted status ``status_id``, from ``GET
    /commits/{sha}/statuses`` (whose entries, unlike the combined status's, name their
    ``creator``); ``""`` when it is not among them."""
    for status in statuses:
        if _positive(status.get("id")) == status_id:
            return _text(_object(status, "creator"), "login")
    return ""


def head_verdict(parts: Iterable[PartState], *, failed: bool = False) -> Verdict:
    """Failing when a part failed; green when every part is green or has nothing and one
    is green; else pending (something runs, or is unknown, or ended otherwise)."""
    states = list(parts)
    if failed or "failing" in states:
        return "failing"
    if all(s in ("green", "none") for s in states) and "green" in states:
        return "green"
    return "pending"


def first_failed_step(job: Mapping[str, Any]) -> str:
    """The name of the first step of an Actions job (``GET /actions/jobs/{id}``) that
    failed or timed out (``""``: none did, or the job lists no steps)."""
    steps = sorted(_objects(job.get("steps")), key=lambda s: _number(s.get("number")))
    failed = (_text(s, "name") for s in steps if _text(s, "conclusion") in FAILED_CONCLUSIONS)
    return next(failed, "")


def check_key(sha: str, check: FailedCheck) -> str:
    """The paste's key: ``ci-<sha[:12]>-<the name, made safe>-<a hash of kind and name>``
    (two names made alike keep apart by the hash)."""
    short = _KEY_CHARACTERS.sub("", sha)[:12] or "head"
    slug = _KEY_CHARACTERS.sub("-", check.name).strip("-.")[:60] or "check"
    digest = hashlib.sha256(f"{check.kind}:{check.name}".encode()).hexdigest()[:8]
    return f"ci-{short}-{slug}-{digest}"


def check_paste(head: HeadChecks, check: FailedCheck, details: CheckDetails) -> str:
    """What the agent reads of a failed check: what failed where, its link, the first
    failed step, then the end of that step's log quoted with ``> `` (or why it is not
    there), cut with a note."""
    name, hid = visible_text(check.name, markdown=False)
    what = "Status" if check.kind == "status" else "Check"
    lines = [
        f'[the-loop] {what} "{_line(name)}" failed ({_line(check.conclusion)}) on '
        f"{head.pull_request.ref} at commit {_line(head.sha)[:12]}:"
    ]
    if check.url:
        lines.append(_line(check.url))
    summary, hidden = visible_text(check.summary, markdown=False)
    hidden = hidden or hid
    if summary.strip():
        lines += ["", *quoted(summary.strip())]
    step, hid = visible_text(details.first_failed_step, markdown=False)
    hidden = hidden or hid
    if step:
        lines += ["", f"[the-loop] The first failed step: {_line(step)}"]
    if details.log is not None:
        part, hid = _log_part(details.log, details.first_failed_step)
        lines += part
        hidden = hidden or hid
    elif details.missing:
        lines += ["", f"[the-loop] No log here: {_line(details.missing)}; read it at the link."]
    if hidden:
        lines += ["", HIDDEN_NOTE.format(what="this check's text")]
    return "\n".join(lines)


def step_log(log: str, step: str) -> str:
    """The part of a job's log that ``step`` wrote, as well as the log says (from its
    ``##[group]`` line to its last ``##[error]``): without timestamps and terminal
    escapes; the whole log when it names no such step."""
    lines = [_TIMESTAMP.sub("", line) for line in _ANSI.sub("", log).splitlines()]
    starts = [i for i, line in enumerate(lines) if _opens_step(line, step)] if step else []
    start = starts[-1] if starts else 0
    errors = [i for i in range(start, len(lines)) if lines[i].startswith("##[error]")]
    end = errors[-1] + 1 if errors else len(lines)
    return "\n".join(lines[start:end]).strip("\n")


def _log_part(log: str, step: str) -> tuple[list[str], bool]:
    """The quoted end of the step's log (its last :data:`LOG_LINES` lines, at most
    :data:`CUT_AT` characters) and whether anything hidden went."""
    text, hidden = visible_text(step_log(log, step), markdown=False)
    lines = text.split("\n") if text else []
    tail = "\n".join(lines[-LOG_LINES:])
    cut = len(lines) > LOG_LINES or len(tail) > CUT_AT
    if len(tail) > CUT_AT:
        end = tail[-CUT_AT:]
        tail = end.partition("\n")[2] or end  # whole lines, unless one line is longer
    shown = tail.split("\n") if tail else []
    if not shown:
        return ["", "[the-loop] Its log is empty."], hidden
    many = "lines" if len(shown) != 1 else "line"
    part = ["", f"[the-loop] The last {len(shown)} {many} of its log:", "", *quoted(tail)]
    if cut:
        part += [
            "",
            f"[the-loop] The log was cut to its last {LOG_LINES} lines and {CUT_AT:,} "
            "characters; the rest is at the link above.",
        ]
    return part, hidden


def _opens_step(line: str, step: str) -> bool:
    """Whether ``line`` opens the log of ``step`` (``##[group]Run pytest``, for a step
    named ``Run pytest`` or ``pytest``)."""
    return line.startswith("##[group]") and line.removeprefix("##[group]") in (step, f"Run {step}")


def _failed_run(run: Mapping[str, Any], conclusion: str) -> FailedCheck:
    url = _text(run, "html_url") or _text(run, "details_url")
    app = _text(_object(run, "app"), "slug")
    job_id: int | None = None
    if app == ACTIONS_APP:
        found = _JOB_IN_URL.search(_text(run, "details_url"))
        job_id = int(found[1]) if found else _positive(run.get("id"))
    title = _text(_object(run, "output"), "title")
    return FailedCheck(_text(run, "name"), conclusion, url, "check", job_id, title, app)


def _state(present: bool, active: bool, failed: bool, green: bool) -> PartState:
    if not present:
        return "none"
    if active:
        return "active"  # read every cycle until it settles (see the reader)
    if failed:
        return "failing"
    return "green" if green else "other"


def _line(text: str) -> str:
    return visible_text(text, markdown=False)[0].replace("\n", " ")


def _objects(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [cast(Mapping[str, Any], v) for v in cast(list[Any], value) if isinstance(v, dict)]


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _positive(value: object) -> int | None:
    number = _number(value)
    return number if number > 0 else None
