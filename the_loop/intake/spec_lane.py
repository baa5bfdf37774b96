"""The spec lane on the ticket (issue 31, [decision 028]): a person's decision carried out
exactly once, and each side effect of the lane's moves made exactly once, crash or not.

The repository file in the item's checkout is the lane's truth, moved only by the pure
transitions of :mod:`the_loop.spec.lane`. What the intake owes is kept in the item's
ledger under ``spec``:

- ``intents``: each decision taken from the ticket (``approve``, ``changes``, ``skip``,
  ``start spec``, or a review's state), written with its comment marked seen and dropped
  once the lane has it. The repository file records a decision with its link, so one
  carried out before a crash is recognised and never carried out twice;
- ``appends``: the review comments owed to a document, appended and committed (each found
  by its link in the document, so never twice);
- ``phase`` and ``status``: where the lane is, as ``sessions list`` shows it.

The gate's comment is a notice said once by its nonce (:mod:`once`), kept under
``specGate``. Each phase's paste is a delivery row keyed by the phase and the moment it
began (``spec-design-20261206T101500Z``), queued once and pasted once by the drain; a
phase sent back is pasted with what to change and the gate's comments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from the_loop.errors import TheLoopError
from the_loop.intake.comments import SessionState
from the_loop.intake.events import AGENT_COMMENT_MARKER, IssueComment, parse_timestamp
from the_loop.intake.once import keep, kept, new_nonce, say_once
from the_loop.intake.pastes import SEEN_PASTES, add_row, known_pastes, queue_paste
from the_loop.intake.ports import Action, LiveSession, SpecPort
from the_loop.intake.spec_asides import as_read, asides_between, without_asides
from the_loop.intake.spec_ledger import field_of, listed, record_of
from the_loop.portable.poll import SEEN_COMMENTS, Ledger
from the_loop.ref import WorkItemRef
from the_loop.repofile.values import WorkItemState
from the_loop.spec import lane
from the_loop.spec.words import ReviewEntry, changes_paste, gate_comment, phase_paste

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The ledger keys: what the lane owes, and the gate's notice.
SPEC = "spec"
GATE = "specGate"
#: The verb ``start spec`` is carried out as, once its session runs.
START = "start"
#: What each decision's outcome is called in events and actions.
_OUTCOMES = {"approve": "approved", "changes": "changes", "skip": "skipped", START: "started"}
#: Who a paste of the lane is by.
BY = "the-loop"
#: How the intents of a pull request review are keyed: its deciding state's
#: (``lane-review-<id>``) and its body's keyword's (``review-<id>``).
REVIEW_KEYS = ("lane-review-", "review-")


def changes_key(phase: str, link: str) -> str:
    """The delivery key of the paste that sends ``phase`` back, by the decision's link:
    two decisions in one second never share it, nor does it meet a phase's start."""
    digest = hashlib.sha256(link.encode("utf-8")).hexdigest()[:16]
    return f"spec-{phase}-changes-{digest}"


def paste_key(phase: str, at: str | None) -> str:
    """The delivery key of ``phase``'s paste when it began at ``at``."""
    stamp = "".join(ch for ch in (at or "") if ch.isalnum())
    return f"spec-{phase}-{stamp or 'unknown'}"


def take_decision(
    intake: IntakeView,
    comment: IssueComment,
    verb: str,
    *,
    key: str = "",
    decided: str = "",
    held: bool = False,
    settle_key: str = "",
    settle: bool = True,
) -> bool:
    """A decision for the lane of the item ``comment`` is on (a linked pull request's: its
    owner's), from a login already found to command: kept as an intent in the same write
    that marks the comment seen (``key``: not a comment's, so nothing is marked; with
    ``settle_key``, that paste key is settled in the same write instead), then carried out
    under the item's hold (``held``: the caller has it; ``settle`` False: at the next
    look). False when the comment was taken before. ``decided``: a review's state
    (``approved``, ``changes``)."""
    ports = intake.ports
    where = comment.work_item
    owner = ports.ledger.owner_of(where)
    grammar = intake.settings.policy.grammar
    said = grammar.arguments(comment.body, verb) if not decided else ""
    words = as_read(said).strip()
    first = words.split()[0].lower() if words.split() else ""
    intent: dict[str, Any] = {
        "key": key or str(comment.id),
        "verb": verb,
        "phase": first if first in lane.PHASES and verb in ("approve", "skip") else "",
        "args": words,
        "by": comment.login,
        "at": _iso(comment.created_at),
        "link": comment.html_url or f"{where.url}#comment-{comment.id}",
        "body": as_read(comment.body),
        "decided": decided,
        "on": where.ref,
    }
    if not _keep_intent(intake, where, owner, intent, mark_seen=not key, settle_key=settle_key):
        return False
    ports.checkpoint("spec-intent")
    intake.counts.commands += 1
    if settle:
        settle_lane(intake, owner, held=held)
    return True


def settle_lane(intake: IntakeView, owner: WorkItemRef, *, held: bool = False) -> None:
    """Carry out the lane's intents, then make what its state owes: the gate's comment,
    the phase's paste, the review comments appended. Under the item's hold unless the
    caller has it; a failure is a warning, and what it left is done at the next look."""
    ports = intake.ports
    if ports.spec is None or not isinstance(ports.ledger.value(owner, SPEC), dict):
        return
    with nullcontext() if held else ports.hold(owner):
        try:
            _settle(intake, ports.spec, owner)
        except (TheLoopError, OSError) as error:  # one checkout's trouble stays its own
            ports.warn(f"{owner.ref}: the spec lane: {error}")


def gate_open(intake: IntakeView, owner: WorkItemRef) -> bool:
    """Whether the item's lane has a gate open, as its repository file says."""
    port = intake.ports.spec
    if port is None or not isinstance(intake.ports.ledger.value(owner, SPEC), dict):
        return False
    try:
        state = port.state(owner)
        return state is not None and bool(lane.read_lane(state).waiting)
    except (TheLoopError, OSError) as error:
        intake.ports.warn(f"{owner.ref}: the spec lane: {error}")
        return False


def tend_lane(session: LiveSession, intake: IntakeView) -> None:
    """:func:`settle_lane` for a live session whose item is in the lane."""
    settle_lane(intake, session.ref)


def _settle(intake: IntakeView, port: SpecPort, owner: WorkItemRef) -> None:
    for intent in listed(_record(intake, owner), "intents"):
        if isinstance(intent, dict):
            _carry_out(intake, port, owner, cast(dict[str, Any], intent))
    state = port.state(owner)
    if state is None:
        return
    found = lane.read_lane(state)
    _mirror(intake, owner, found)
    _owe_paste(intake, port, owner, state, found)
    _owe_gate(intake, port, owner, state, found)
    for append in listed(_record(intake, owner), "appends"):
        if isinstance(append, dict):
            _append(intake, port, owner, cast(dict[str, Any], append))


# -- intents ------------------------------------------------------------------------


def _keep_intent(
    intake: IntakeView,
    where: WorkItemRef,
    owner: WorkItemRef,
    intent: dict[str, Any],
    *,
    mark_seen: bool,
    settle_key: str = "",
) -> bool:
    ledger_port, key = intake.ports.ledger, str(intent["key"])
    taken: list[bool] = []

    def change(ledger: Ledger) -> None:
        spec = _spec_of(ledger)
        intents = list(listed(spec, "intents"))
        if any(isinstance(i, dict) and cast(dict[str, Any], i).get("key") == key for i in intents):
            return
        if where == owner and mark_seen:
            if key in ledger[SEEN_COMMENTS]:
                return
            ledger[SEEN_COMMENTS].append(key)
        if settle_key:
            settled = listed(ledger, SEEN_PASTES)
            if settle_key in settled:
                return
            ledger[SEEN_PASTES] = [*settled, settle_key]
        ledger[SPEC] = {**spec, "intents": [*intents, intent]}
        taken.append(True)

    if where != owner and mark_seen and key in ledger_port.seen_comments(where):
        return False
    ledger_port.change(owner, change)
    if where != owner and mark_seen:
        ledger_port.resolve_comment(where, key)
    return bool(taken)


def _carry_out(
    intake: IntakeView, port: SpecPort, owner: WorkItemRef, intent: dict[str, Any]
) -> None:
    """One intent into the repository file (once: a decision already recorded by its link
    is not made again), then its effects owed and the intent dropped, in one write."""
    verb, link, at = str(intent["verb"]), str(intent.get("link") or ""), str(intent["at"])
    state = port.state(owner)
    try:
        if verb == START:
            if state is None or not lane.started_by_link(state, link):
                by = str(intent["by"])
                try:
                    port.update(owner, lambda s: _begun(s, at=at, by=by, link=link))
                except lane.LaneError:
                    raise
                except TheLoopError:
                    return  # no checkout yet (its start is claimed, or failed): next look
                intake.ports.checkpoint("spec-moved")
            _done(intake, owner, intent, lane.PHASES[0], [], None)
            return
        if state is None:
            raise lane.LaneError(
                "the spec lane has not started for this work item: no checkout on this "
                "machine holds its repository file"
            )
        phase = _decided_phase(state, link)
        if phase is None:
            phase = _phase_for(intent, state)
            _after_the_gate(intake, owner, intent, state, phase)
            entries = _entries(intake, owner, intent, state, phase)
            state = port.update(owner, lambda s: _transition(s, intent, phase))
            intake.ports.checkpoint("spec-moved")
        else:
            entries = _entries(intake, owner, intent, state, phase)
    except lane.LaneError as error:
        _refused(intake, owner, intent, str(error))
        return
    # What the lane recorded for this link decides what follows, never the intent's own
    # word: a second intent with the same link (a review's state and a keyword in its
    # body) follows the first.
    outcome = _recorded(state, phase, link)
    paste: tuple[str, str] | None = None
    if outcome == lane.CHANGES:
        text = changes_paste(
            port.spec_dir(owner), phase, by=str(intent["by"]), what=_what(intent), entries=entries
        )
        paste = (changes_key(phase, link), text)
    decided = outcome in (lane.APPROVED, lane.CHANGES)
    opened = _opened(state, phase, link) if decided else None
    taken = entries if outcome != "skipped" else []
    _done(intake, owner, intent, phase, taken, paste, outcome, opened)


def _transition(state: WorkItemState, intent: dict[str, Any], phase: str) -> WorkItemState:
    """The intent's move, or the state as it is when its link is already recorded (a
    second process carried it out meanwhile)."""
    link, by, at = str(intent.get("link") or ""), str(intent["by"]), str(intent["at"])
    if lane.decided_by_link(state, link):
        return state
    verb, decided = str(intent["verb"]), str(intent.get("decided") or "")
    if verb == "skip":
        return lane.skip(state, phase, by=by, at=at, link=link)
    if verb == "changes" or decided == lane.CHANGES:
        return lane.changes(state, phase, by=by, at=at, link=link, what=_what(intent))
    return lane.approve(state, phase, by=by, at=at, link=link)


def _after_the_gate(
    intake: IntakeView, owner: WorkItemRef, intent: dict[str, Any], state: WorkItemState, phase: str
) -> None:
    """Refuse a comment's or a review's approval or changes unless it was written after
    the comment that announced the open gate: one written before was meant for an earlier
    round, and read late it would pass one nobody has seen. A comment is told by its id
    (ids grow across the repository); a review, whose ids are another sequence, by its
    time against the moment the gate's comment was made (to the second)."""
    key, verb = str(intent["key"]), str(intent["verb"])
    review = key.startswith(REVIEW_KEYS)
    if verb == "skip" or not (key.isdigit() or review):
        return  # not a comment's or a review's decision: the lane itself answers
    if phase not in lane.read_lane(state).waiting:
        return  # no gate open: the lane itself answers
    record = kept(intake, owner, GATE) or {}
    round_ = lane.gate_round(state, phase)
    said = record.get("comment")
    if record.get("phase") != phase or record.get("round") != round_ or not said:
        raise lane.LaneError(
            f"the gate of {phase} has not been announced on the ticket yet: decide after its "
            "comment"
        )
    if review:
        made, at = record.get("at"), _moment(str(intent.get("at") or ""))
        if isinstance(made, int | float) and at is not None and at.timestamp() < int(made):
            raise lane.LaneError(
                f"it was submitted before the gate of {phase} opened (comment {said}): decide "
                "after it"
            )
        return
    if isinstance(said, int) and said > 0 and int(key) < said:
        raise lane.LaneError(
            f"it was written before the gate of {phase} opened (comment {said}): decide after it"
        )


def _phase_for(intent: dict[str, Any], state: WorkItemState) -> str:
    """The phase a decision is about: the one it names, else the gate that is open."""
    named, verb = str(intent.get("phase") or ""), str(intent["verb"])
    found = lane.read_lane(state)
    if verb == "skip":
        if not named:
            raise lane.LaneError(f"say which phase to skip: {', '.join(lane.PHASES)}")
        return named
    if named:
        return named
    if not found.waiting:
        raise lane.LaneError(f"no gate is open: the spec lane is at {found.where()}")
    return found.waiting[0]


def _recorded(state: WorkItemState, phase: str, link: str) -> str:
    """The outcome the lane records for ``link``: ``approved``, ``changes`` or
    ``skipped``."""
    for entry in lane.decisions_of(state, phase):
        if entry.get("link") == link:
            return str(entry.get("outcome") or "")
    return "skipped" if lane.skip_links(state).get(phase) == link else ""


def _decided_phase(state: WorkItemState, link: str) -> str | None:
    """The phase whose decisions (or skips) already record ``link``."""
    if not link:
        return None
    for phase in lane.GATED:
        if any(entry.get("link") == link for entry in lane.decisions_of(state, phase)):
            return phase
    return next((node for node, found in lane.skip_links(state).items() if found == link), None)


def _begun(state: WorkItemState, *, at: str, by: str, link: str) -> WorkItemState:
    """The lane begun, or the state as it is when this same word began it already (a
    second process carried it out meanwhile)."""
    if lane.started_by_link(state, link):
        return state
    return lane.start(state, at=at, by=by, link=link)


def _entries(
    intake: IntakeView, owner: WorkItemRef, intent: dict[str, Any], state: WorkItemState, phase: str
) -> list[ReviewEntry]:
    """The authorized comments made on the ticket while ``phase``'s gate was open, up to
    the decision, and the decision itself (each once, oldest first); none for a skip."""
    if str(intent["verb"]) == "skip":
        return []
    ports, policy = intake.ports, intake.settings.policy
    link = str(intent.get("link") or "")
    opened = _opened(state, phase, link)
    gate = _gate_comment(intake, owner, state, phase, link)
    until = parse_timestamp(str(intent["at"]))
    deciding = str(intent["key"])
    posted = ports.posted.posted()
    found: dict[str, ReviewEntry] = {}
    for comment in _threads(intake, owner):
        # GitHub's times are to the second: within the decision's second, a comment
        # written after it (a higher id: ids grow across the repository) is not the
        # gate's; nor is one before the gate's comment, when its id is known.
        written = comment.created_at.replace(microsecond=0)
        if written > until or (gate is None and opened is not None and written < opened):
            continue
        if (deciding.isdigit() and comment.id > int(deciding)) or (gate and comment.id < gate):
            continue
        if comment.carries_marker or comment.id in posted:
            continue
        if not policy.authorized.permits(comment.login) or policy.grammar.scan(comment.body).verbs:
            continue
        link = comment.html_url or f"{owner.url}#comment-{comment.id}"
        body = as_read(comment.body)
        found[link] = ReviewEntry(comment.login, _iso(comment.created_at), link, body)
    for entry in asides_between(_record(intake, owner), opened, until):  # reviews' words
        found.setdefault(entry.link, entry)
    decided = str(intent.get("decided") or _OUTCOMES.get(str(intent["verb"]), ""))
    link = str(intent.get("link") or "")
    found[link] = ReviewEntry(
        str(intent["by"]), str(intent["at"]), link, str(intent.get("body") or ""), decided
    )
    return sorted(found.values(), key=lambda entry: entry.at)


def _threads(intake: IntakeView, owner: WorkItemRef) -> list[IssueComment]:
    """The comments of the item's ticket and of the pull requests linked to its session."""
    ports = intake.ports
    comments = list(ports.github.thread(owner))
    session = ports.session_of(owner) if ports.session_of is not None else None
    for pull in session.pull_requests if session is not None else ():
        comments += ports.github.thread(pull)
    return comments


def _gate_comment(
    intake: IntakeView, owner: WorkItemRef, state: WorkItemState, phase: str, link: str
) -> int | None:
    """The id of the comment that opened the gate a decision is about (None: not known:
    not said yet, or said with its id unknown)."""
    recorded = [entry.get("link") for entry in lane.decisions_of(state, phase)]
    round_ = recorded.index(link) + 1 if link in recorded else lane.gate_round(state, phase)
    record = kept(intake, owner, GATE) or {}
    comment = record.get("comment")
    if record.get("phase") != phase or record.get("round") != round_:
        return None
    return comment if isinstance(comment, int) and comment > 0 else None


def _opened(state: WorkItemState, phase: str, link: str) -> datetime | None:
    """When the gate the decision is about opened: recorded with the decision once made,
    else the waiting node's moment."""
    for entry in lane.decisions_of(state, phase):
        if entry.get("link") == link and isinstance(entry.get("opened"), str):
            return _moment(str(entry["opened"]))
    node = lane.read_lane(state).node(phase)
    return _moment(node.at) if node.at else None


def _done(
    intake: IntakeView,
    owner: WorkItemRef,
    intent: dict[str, Any],
    phase: str,
    entries: Sequence[ReviewEntry],
    paste: tuple[str, str] | None,
    outcome: str = "",
    opened: datetime | None = None,
) -> None:
    """The intent dropped, its appends owed and its paste queued, in one write; then said
    with ``outcome`` (the lane's record of it; the intent's verb when not given). The
    asides it took go, and those from before its gate's opening (``opened``)."""
    key = str(intent["key"])
    dropped: list[bool] = []

    def change(ledger: Ledger) -> None:
        spec = _spec_of(ledger)
        intents = [i for i in listed(spec, "intents") if _key_of(i) != key]
        if len(intents) == len(listed(spec, "intents")):
            return  # another process carried it out
        spec = without_asides(spec, entries, opened)
        appends = list(listed(spec, "appends"))
        if entries and not any(_key_of(a) == key for a in appends):
            appends.append({"key": key, "phase": phase, "entries": [asdict(e) for e in entries]})
        ledger[SPEC] = {**spec, "intents": intents, "appends": appends}
        if paste is not None:  # in the same write: what to change is never lost
            add_row(ledger, paste[0], paste[1], by=BY)
        dropped.append(True)

    intake.ports.ledger.change(owner, change)
    if dropped:
        said = outcome or _OUTCOMES.get(str(intent["verb"]), "decided")
        _said(intake, owner, intent, phase, said)


def _refused(intake: IntakeView, owner: WorkItemRef, intent: dict[str, Any], why: str) -> None:
    """A decision the lane refuses: the intent dropped, then the person told why, once."""
    key = str(intent["key"])
    dropped: list[bool] = []

    def change(ledger: Ledger) -> None:
        spec = _spec_of(ledger)
        intents = [i for i in listed(spec, "intents") if _key_of(i) != key]
        if len(intents) != len(listed(spec, "intents")):
            ledger[SPEC] = {**spec, "intents": intents}
            dropped.append(True)

    intake.ports.ledger.change(owner, change)
    if not dropped:
        return
    _said(intake, owner, intent, str(intent.get("phase") or ""), "refused", why)
    where = WorkItemRef.parse(str(intent.get("on") or owner.ref))
    verb = str(intent["verb"])
    shown = "start spec" if verb == START else verb
    words = f"{AGENT_COMMENT_MARKER}\nthe-loop: @{intent['by']}: `{shown}` changed nothing: {why}."
    try:
        posted = intake.ports.github.post_comment(where, words)
    except TheLoopError as error:
        intake.ports.warn(f"{where.ref}: could not answer on the ticket: {error}")
        return
    if posted is not None:
        intake.ports.posted.remember_posted(posted)


def _said(
    intake: IntakeView,
    owner: WorkItemRef,
    intent: dict[str, Any],
    phase: str,
    outcome: str,
    reason: str = "",
) -> None:
    ports = intake.ports
    verb = str(intent["verb"])
    shown = "start spec" if verb == START else verb
    action = Action("command", owner.ref, str(intent["by"]), shown, str(intent["key"]))
    intake.counts.actions.append(replace(action, outcome=outcome, reason=reason))
    ports.emit(
        "spec.decided",
        work_item=owner.ref,
        command=str(intent["verb"]),
        phase=phase,
        outcome=outcome,
        actor=str(intent["by"]),
        link=str(intent.get("link") or ""),
        reason=reason,
    )


# -- what the state owes ------------------------------------------------------------


def _owe_paste(
    intake: IntakeView, port: SpecPort, owner: WorkItemRef, state: WorkItemState, found: lane.Lane
) -> None:
    """The phase under way is pasted into the session once: when it began, what to write;
    when a person sent it back, what to change (queued with the decision; made here only
    for a ledger that lost it)."""
    phase = lane.next_phase(found)
    if phase is None:
        return
    at = found.node(phase).at
    decisions = lane.decisions_of(state, phase)
    last = decisions[-1] if decisions else {}
    spec_dir = port.spec_dir(owner)
    if last.get("outcome") == lane.CHANGES and last.get("at") == at:
        key = changes_key(phase, str(last.get("link") or ""))
        by, what = str(last.get("by") or ""), str(last.get("what") or "")
        text = changes_paste(spec_dir, phase, by=by, what=what, entries=())
    else:
        key, text = paste_key(phase, at), phase_paste(spec_dir, phase)
    if key not in known_pastes(intake.ports, owner):
        queue_paste(intake.ports, owner, key, text, by=BY, held=False)


def _owe_gate(
    intake: IntakeView,
    port: SpecPort,
    owner: WorkItemRef,
    state: WorkItemState,
    found: lane.Lane,
) -> None:
    """The open gate's comment, said on the ticket once per opening."""
    if not found.waiting:
        return
    phase = found.waiting[0]
    round_ = lane.gate_round(state, phase)
    record = kept(intake, owner, GATE)
    if record is None or record.get("phase") != phase or record.get("round") != round_:
        name = f"{port.spec_dir(owner)}/{phase}.md"
        body = gate_comment(owner.ref, phase, name, port.artifact_link(owner, phase), round_)
        record = {
            "phase": phase,
            "round": round_,
            "nonce": new_nonce(),
            "comment": 0,
            "at": intake.ports.clock(),  # before it is posted: a review before it is older
            "body": f"{AGENT_COMMENT_MARKER}\n{body}",
        }
        keep(intake, owner, GATE, record)
    if record.get("comment"):
        return
    said = say_once(LiveSession(owner, SessionState.NONE), intake, GATE, record, "gate's comment")
    if (kept(intake, owner, GATE) or {}).get("comment"):
        intake.ports.emit(
            "spec.gate_opened", work_item=owner.ref, phase=phase, round=round_, comment_id=said
        )


def _append(intake: IntakeView, port: SpecPort, owner: WorkItemRef, append: dict[str, Any]) -> None:
    """The review comments owed to a document appended and committed, then forgotten."""
    key, phase = str(append.get("key")), str(append.get("phase"))
    owed = cast(list[Any], append.get("entries") or [])
    entries = [ReviewEntry(**cast(dict[str, Any], e)) for e in owed if isinstance(e, dict)]
    try:
        port.append_review(owner, phase, entries)
    except (TheLoopError, OSError) as error:
        intake.ports.warn(f"{owner.ref}: could not append the review comments to {phase}: {error}")
        return
    intake.ports.checkpoint("spec-appended")

    def change(ledger: Ledger) -> None:
        spec = _spec_of(ledger)
        appends = [a for a in listed(spec, "appends") if _key_of(a) != key]
        ledger[SPEC] = {**spec, "appends": appends}

    intake.ports.ledger.change(owner, change)
    intake.ports.emit(
        "spec.review_appended", work_item=owner.ref, phase=phase, comments=len(entries)
    )


def _mirror(intake: IntakeView, owner: WorkItemRef, found: lane.Lane) -> None:
    """Where the lane is, kept in the ledger for the listings (written only on a change)."""
    phase = str(found.current) if found.started else ""
    status = found.node(phase).status if phase in lane.PHASES else ""
    record = _record(intake, owner)
    if record.get("phase") == phase and record.get("status") == status:
        return
    mirror_lane(intake.ports.ledger.change, owner, phase, status)


def mirror_lane(
    change: Callable[[WorkItemRef, Callable[[Ledger], None]], None],
    owner: WorkItemRef,
    phase: str,
    status: str,
) -> None:
    """Keep ``phase`` and ``status`` in the item's ledger (``the-loop done`` calls it too)."""

    def apply(ledger: Ledger) -> None:
        ledger[SPEC] = {**_spec_of(ledger), "phase": phase, "status": status}

    change(owner, apply)


def _record(intake: IntakeView, owner: WorkItemRef) -> dict[str, Any]:
    value = intake.ports.ledger.value(owner, SPEC)
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _spec_of(ledger: Ledger) -> dict[str, Any]:
    return record_of(ledger, SPEC)


def _key_of(value: object) -> str | None:
    return field_of(value, "key")


def _what(intent: dict[str, Any]) -> str:
    """What to change: the words after ``changes``, else the review's body."""
    return str(intent.get("args") or "") or str(intent.get("body") or "")


def _moment(text: str) -> datetime | None:
    try:
        return parse_timestamp(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
