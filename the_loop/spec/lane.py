"""The spec lane, fixed in code: ``requirements`` → gate → ``design`` → gate → ``tasks``
→ ``implementation`` → done ([decision 028]).

Pure: each transition takes the repository file's values (a :class:`WorkItemState`) and
returns a new state, or raises :class:`LaneError` with the sentence that says why not.
The state handed in is never changed; only the lane's own phases are touched in
``nodes`` and ``decisions``, every other key of the file is kept as it was, and
``currentNode`` is always written as a string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from the_loop.errors import EXIT_USAGE, TheLoopError, quoted
from the_loop.repofile.values import WorkItemState

PHASES = ("requirements", "design", "tasks", "implementation")
#: The phases whose end opens a gate: a person decides before the next phase starts.
GATED = ("requirements", "design")
#: ``currentNode`` once every phase has passed or been skipped.
FINISHED = "done"
#: Who a phase's end is recorded by when no person decides it.
AGENT = "agent"

PENDING = "pending"
ACTIVE = "active"
WAITING = "waiting"
PASS = "pass"
SKIPPED = "skipped"
STATUSES = (PENDING, ACTIVE, WAITING, PASS, SKIPPED)

#: The repository file's key of who began the lane, when, and the link of their word.
STARTED = "specStarted"

#: A decision's ``outcome``.
APPROVED = "approved"
CHANGES = "changes"


class LaneError(TheLoopError):
    """A transition the lane refuses, or lane values it cannot read; the message says
    which. Nothing was changed (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_USAGE)


@dataclass(frozen=True)
class Node:
    """One phase as recorded: its status, who brought it there, when, and the link."""

    node: str
    status: str = PENDING
    by: str | None = None
    at: str | None = None
    link: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"node", "status", "by", "at", "link"}``, as ``the-loop check`` lists it."""
        return {"node": self.node, **self.stored()}

    def stored(self) -> dict[str, Any]:
        """The value kept under ``nodes.<phase>`` in the repository file."""
        return {"status": self.status, "by": self.by, "at": self.at, "link": self.link}


@dataclass(frozen=True)
class Lane:
    """The lane a state records: every phase in lane order, and ``currentNode`` as the
    file holds it (ours, another release's, or None). ``started`` once any phase is
    in ``nodes``."""

    current: Any
    nodes: tuple[Node, ...]
    started: bool

    def node(self, phase: str) -> Node:
        return self.nodes[PHASES.index(phase)]

    @property
    def finished(self) -> bool:
        return self.current == FINISHED

    @property
    def waiting(self) -> tuple[str, ...]:
        """The phases whose gate is open: a person decides next."""
        return tuple(node.node for node in self.nodes if node.status == WAITING)

    def where(self) -> str:
        """Where the lane is, in words: ``design (active)``, ``finished``, ``not started``."""
        if not self.started:
            return "not started"
        if self.finished:
            return "finished"
        if self.current in PHASES:
            return f"{self.current} ({self.node(self.current).status})"
        return f"{quoted(self.current)}, which is no phase of the lane"


def read_lane(state: WorkItemState) -> Lane:
    """The lane ``state`` records; :class:`LaneError` when a value of it is unusable
    (a phase's status the lane does not know, ``nodes`` not an object)."""
    nodes: object = state.nodes
    if not isinstance(nodes, Mapping):
        raise LaneError(f"the state file's nodes is not an object: {quoted(nodes)}")
    found = cast(Mapping[str, Any], nodes)
    read = tuple(_node(phase, found.get(phase)) for phase in PHASES)
    return Lane(state.current_node, read, any(phase in found for phase in PHASES))


def _node(phase: str, value: object) -> Node:
    if value is None:
        return Node(phase)
    fields: Mapping[str, Any] = {}
    if isinstance(value, str):
        status: object = value
    elif isinstance(value, Mapping):
        fields = cast(Mapping[str, Any], value)
        status = fields.get("status")
    else:
        raise LaneError(f"the state file's node {phase} is not an object: {quoted(value)}")
    if status not in STATUSES:
        known = ", ".join(STATUSES)
        raise LaneError(
            f"the state file's node {phase} has the status {quoted(status)}, which the lane "
            f"does not know ({known})"
        )
    texts = {name: fields.get(name) for name in ("by", "at", "link")}
    for name, text in texts.items():
        if text is not None and not isinstance(text, str):
            raise LaneError(f"the state file's node {phase} has a {name} that is not text")
    return Node(phase, str(status), texts["by"], texts["at"], texts["link"])


def start(state: WorkItemState, *, at: str, by: str = "", link: str = "") -> WorkItemState:
    """The lane begun: ``requirements`` active, every other phase pending; who began it
    and the link of their ``start spec`` kept under ``specStarted``."""
    lane = read_lane(state)
    if lane.started:
        raise LaneError(f"the spec lane has already started: it is at {lane.where()}")
    nodes = (Node(PHASES[0], ACTIVE, at=_text(at, "at")), *(Node(p) for p in PHASES[1:]))
    began = {STARTED: {"by": by or None, "at": at, "link": link or None}}
    return _written(replace(state, extra={**state.extra, **began}), nodes, current=PHASES[0])


def started_by_link(state: WorkItemState, link: str) -> bool:
    """Whether the lane was begun by the ``start spec`` whose link is ``link``."""
    began: object = state.extra.get(STARTED)
    found = cast(Mapping[str, Any], began).get("link") if isinstance(began, Mapping) else None
    return bool(link) and found == link


def done(state: WorkItemState, phase: str, *, at: str) -> WorkItemState:
    """The agent's end of ``phase``, which must be the current, active one: a gated phase
    waits for a person; any other passes (by ``agent``) and the next phase starts."""
    lane = _started(state, phase)
    node = lane.node(phase)
    if lane.current != phase:
        raise LaneError(_not_current(lane, node))
    if node.status == WAITING:
        raise LaneError(
            f"{phase} is already done: its gate waits for a person to approve it or ask for changes"
        )
    if node.status != ACTIVE:
        raise LaneError(f"{phase} is not active: it is {node.status}")
    moment = _text(at, "at")
    if phase in GATED:
        return _written(state, _put(lane, Node(phase, WAITING, AGENT, moment)), current=phase)
    return _advanced(state, lane, Node(phase, PASS, AGENT, moment), moment)


def approve(state: WorkItemState, phase: str, *, by: str, at: str, link: str) -> WorkItemState:
    """A person's approval of ``phase``, whose gate must be open: it passes (by them) and
    the next phase starts; the decision is recorded."""
    lane = _started(state, phase)
    _require_waiting(lane, phase, "approved")
    who = _who(by, at, link)
    opened = lane.node(phase).at
    decided = _decided(state, phase, {"outcome": APPROVED, **who, "opened": opened})
    ended = Node(phase, PASS, **who)
    return _advanced(replace(state, decisions=decided), lane, ended, who["at"])


def changes(
    state: WorkItemState, phase: str, *, by: str, at: str, link: str, what: str
) -> WorkItemState:
    """A person's request for changes to ``phase``, whose gate must be open: the phase is
    active again, and the decision (with ``what``) is recorded."""
    lane = _started(state, phase)
    _require_waiting(lane, phase, "sent back")
    who = _who(by, at, link)
    opened = lane.node(phase).at
    decided = _decided(state, phase, {"outcome": CHANGES, **who, "opened": opened, "what": what})
    reopened = Node(phase, ACTIVE, at=who["at"])
    return _written(replace(state, decisions=decided), _put(lane, reopened), current=phase)


def skip(state: WorkItemState, phase: str, *, by: str, at: str, link: str) -> WorkItemState:
    """A person's skip of ``phase``, not yet passed: recorded in ``skips``; when it is the
    current phase, the next one starts."""
    lane = _started(state, phase)
    node = lane.node(phase)
    if node.status in (PASS, SKIPPED):
        already = "has already passed" if node.status == PASS else "was already skipped"
        raise LaneError(f"{phase} {already}: only a phase not yet passed can be skipped")
    who = _who(by, at, link)
    skipped = Node(phase, SKIPPED, **who)
    entry = {"via": "comment", "by": who["by"], "reason": "", "at": who["at"], "link": who["link"]}
    state = replace(state, skips={**_skips_of(state), phase: entry})
    if lane.current == phase:
        return _advanced(state, lane, skipped, who["at"])
    return _written(state, _put(lane, skipped), current=str(lane.current))


def decisions_of(state: WorkItemState, phase: str) -> list[dict[str, Any]]:
    """The decisions recorded for ``phase``, oldest first (entries that are not objects
    are left out)."""
    decisions: object = state.decisions
    if not isinstance(decisions, Mapping):
        return []
    found: object = cast(Mapping[str, Any], decisions).get(phase)
    if not isinstance(found, list):
        return []
    entries = cast(list[Any], found)
    return [cast(dict[str, Any], entry) for entry in entries if isinstance(entry, dict)]


def decided_by_link(state: WorkItemState, link: str) -> bool:
    """Whether a decision (or a skip) with ``link`` is already recorded: the same comment
    or review is never applied twice."""
    if not link:
        return False
    if any(entry.get("link") == link for phase in GATED for entry in decisions_of(state, phase)):
        return True
    return link in skip_links(state).values()


def gate_round(state: WorkItemState, phase: str) -> int:
    """Which opening of ``phase``'s gate the lane is at: 1, then one more after each
    decision that sent it back."""
    return 1 + len(decisions_of(state, phase))


def next_phase(lane: Lane) -> str | None:
    """The phase the lane works on now, or None when it waits, is finished or not started."""
    if lane.current in PHASES and lane.node(lane.current).status == ACTIVE:
        return str(lane.current)
    return None


def _started(state: WorkItemState, phase: str) -> Lane:
    if phase not in PHASES:
        raise LaneError(f"unknown phase {quoted(phase)}: the phases are {', '.join(PHASES)}")
    lane = read_lane(state)
    if not lane.started:
        raise LaneError("the spec lane has not started for this work item")
    if lane.current not in (*PHASES, FINISHED):
        raise LaneError(f"the state file's currentNode is {lane.where()}")
    return lane


def _not_current(lane: Lane, node: Node) -> str:
    if lane.finished:
        return "the spec lane is finished: every phase has passed or been skipped"
    if node.status == PASS:
        return f"{node.node} has already passed; the lane is at {lane.where()}"
    if node.status == SKIPPED:
        return f"{node.node} was skipped; the lane is at {lane.where()}"
    return f"{node.node} is not the current phase: the lane is at {lane.where()}"


def _require_waiting(lane: Lane, phase: str, verb: str) -> None:
    node = lane.node(phase)
    if node.status == WAITING:
        return
    why = {
        PENDING: "it has not been reached",
        ACTIVE: "the agent has not said it is done",
        PASS: f"it has already passed{f' (by {node.by})' if node.by else ''}",
        SKIPPED: "it was skipped",
    }[node.status]
    gate = "its gate is not open" if phase in GATED else "it has no gate"
    raise LaneError(f"{phase} cannot be {verb}: {gate}, {why}")


def _advanced(state: WorkItemState, lane: Lane, ended: Node, at: str) -> WorkItemState:
    """``ended`` recorded, and the first pending phase after it active (or the lane done)."""
    nodes = list(_put(lane, ended))
    index = PHASES.index(ended.node)
    following = next((i for i in range(index + 1, len(PHASES)) if nodes[i].status == PENDING), None)
    if following is None:
        return _written(state, nodes, current=FINISHED)
    nodes[following] = Node(PHASES[following], ACTIVE, at=at)
    return _written(state, nodes, current=PHASES[following])


def _put(lane: Lane, node: Node) -> tuple[Node, ...]:
    return tuple(node if each.node == node.node else each for each in lane.nodes)


def _written(state: WorkItemState, nodes: Sequence[Node], *, current: str) -> WorkItemState:
    """``state`` with the lane's nodes first, in lane order, then every other node kept."""
    kept = cast(Mapping[str, Any], state.nodes)
    others = {name: value for name, value in kept.items() if name not in PHASES}
    written = {node.node: node.stored() for node in nodes} | others
    return replace(state, nodes=written, current_node=current)


def _who(by: str, at: str, link: str) -> dict[str, Any]:
    """A person's ``{"by", "at", "link"}`` (an empty link as None)."""
    return {"by": _text(by, "by"), "at": _text(at, "at"), "link": link or None}


def _decided(state: WorkItemState, phase: str, decision: dict[str, Any]) -> dict[str, Any]:
    """``decisions`` with ``decision`` appended to ``phase``'s list."""
    decisions: object = state.decisions
    if decisions is None:
        decisions = {}
    if not isinstance(decisions, Mapping):
        raise LaneError(f"the state file's decisions is not an object: {quoted(decisions)}")
    known = cast(Mapping[str, Any], decisions)
    earlier: object = known.get(phase, [])
    if not isinstance(earlier, list):
        raise LaneError(f"the state file's decisions for {phase} are not a list: {quoted(earlier)}")
    return {**known, phase: [*cast(list[Any], earlier), decision]}


def _skips_of(state: WorkItemState) -> dict[str, Any]:
    """``skips`` as an object keyed by node, as upstream the-loopy-one 20.10.2 keeps it;
    an earlier list of names (or of ``{"node": ...}``) is carried over, each name kept."""
    skips: object = state.skips
    if skips is None:
        return {}
    if isinstance(skips, Mapping):
        return dict(cast(Mapping[str, Any], skips))
    if not isinstance(skips, list):
        raise LaneError(f"the state file's skips is neither an object nor a list: {quoted(skips)}")
    carried: dict[str, Any] = {}
    entry: object
    for entry in cast(list[object], skips):
        fields = dict(cast(Mapping[str, Any], entry)) if isinstance(entry, Mapping) else {}
        if isinstance(entry, str):
            carried[entry] = {}
        elif isinstance(fields.get("node"), str):
            carried[str(fields.pop("node"))] = fields
        else:
            what = quoted(cast(object, entry))
            raise LaneError(f"the state file's skips holds an entry the lane cannot read: {what}")
    return carried


def skip_links(state: WorkItemState) -> dict[str, str]:
    """Each skipped node's link, by node (a skip without one is left out)."""
    try:
        skips = _skips_of(state)
    except LaneError:
        return {}
    found: dict[str, str] = {}
    for node, entry in skips.items():
        if isinstance(entry, Mapping):
            link = cast(Mapping[str, Any], entry).get("link")
            if isinstance(link, str) and link:
                found[node] = link
    return found


def _text(value: str, name: str) -> str:
    if not value.strip():
        raise LaneError(f"a transition needs its {name}: it was empty")
    return value
