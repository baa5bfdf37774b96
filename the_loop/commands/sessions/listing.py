"""The rows of ``sessions list``: a record, its last control command, its agent, its checkout.

Whether each agent runs comes from one ``tmux list-panes -a`` per listing, never one
call per row: ``running`` (a pane runs), ``exited`` (every pane ended, the pane kept),
``gone`` (no tmux session of that name, or no tmux server at all), ``unknown`` (tmux did
not answer, is not installed, or the record names no tmux session). A live session's
running agent is then asked what it is doing (``starting``, ``working``, ``idle``,
``blocked: <on what>``): one call each, for the live sessions only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from the_loop.dispatch.tmux import NAME_PATTERN, TmuxRunner

if TYPE_CHECKING:
    from the_loop.agent.state import AgentState
    from the_loop.config.file import Config
    from the_loop.sessions.session import Session

GONE = "gone"
#: The STATUS of an active session whose item reached its budget.
OVER_BUDGET = "over-budget"
RUNNING = "running"
EXITED = "exited"
UNKNOWN = "unknown"
#: The status of a transcript row: a kept tmux session no record names.
RETAINED = "retained"
#: The status of an item another machine holds (its claim won the item's latest start).
HELD_ELSEWHERE = "held-elsewhere"
#: The CHECKOUT cell of a row with no checkout, or one that no longer exists.
NO_CHECKOUT = "—"

#: tmux session name -> ``running`` / ``exited``; None when tmux did not answer.
States = Mapping[str, str] | None


class ListedRow(NamedTuple):
    """One row: a session record (None for a transcript), its last command and agent.

    The report is built only when the row is encoded, as the renderer writes it. A
    named tuple: immutable, and built in a third of a frozen dataclass's time.
    """

    session: Session | None
    command: str | None
    agent: str
    tmux_target: str = ""
    work_item: str | None = None
    #: The session's working directory while it exists, else None.
    checkout: str | None = None
    #: The other machine that holds the item (its claim won the latest start), if any.
    held_by: Mapping[str, Any] | None = None
    #: What a live session's running agent is doing (None: not asked, or not known).
    detail: AgentState | None = None
    #: What the item's agents spent and its budget (None: not read).
    figures: tuple[dict[str, Any], dict[str, Any]] | None = None
    #: Where the item's spec lane is (``{"phase", "status"}``; None: not in the lane).
    phase: Mapping[str, str] | None = None

    def document(self) -> dict[str, Any]:
        """The ``--format json`` item: the record's report, ``control``, ``agent``, ``checkout``."""
        if self.session is None:
            document: dict[str, Any] = {
                "workItem": self.work_item,
                "tmuxTarget": self.tmux_target,
                "status": RETAINED if self.held_by is None else HELD_ELSEWHERE,
            }
        else:
            document = self.session.to_dict()
        document["control"] = self.command
        document["agent"] = (
            self.detail.to_dict() if self.detail is not None else _agent_document(self.agent)
        )
        document["checkout"] = self.checkout
        if self.figures is not None:
            document["spend"], document["budget"] = self.figures
        document["phase"] = dict(self.phase) if self.phase is not None else None
        if self.held_by is not None:
            document["heldBy"] = dict(self.held_by)
        return document

    def cells(self) -> list[str]:
        """The table row: the record's cells, then AGENT and CHECKOUT."""
        session = self.session
        status = self._status(session.status) if session is not None else ""
        held = f"held by {self.held_by.get('name') or 'another machine'}" if self.held_by else ""
        if session is None and held:
            cells = [self.work_item, "", "", "", held, self.command, ""]
        elif session is None:
            cells = [self.work_item, "", "", self.tmux_target, RETAINED, "", ""]
        else:
            cells = [
                session.ref,
                session.harness,
                session.harness_session_id,
                session.tmux_target,
                f"{status} ({held})" if held else status,
                self.command,
                session.last_event_at,
            ]
        agent = self.detail.describe() if self.detail is not None else self.agent
        spent = _spent(self.figures[0]) if self.figures is not None else ""
        cells.insert(5, spent)
        cells.append(_phase_cell(self.phase))
        return [cell or "-" for cell in cells] + [agent, self.checkout or NO_CHECKOUT]

    def _status(self, status: str) -> str:
        """The record's status; ``over-budget`` for an active one whose item is over it."""
        over = self.figures is not None and self.figures[1].get("state") == OVER_BUDGET
        return OVER_BUDGET if over and status == "active" else status


def lane_phase(ledger: Mapping[str, Any]) -> dict[str, str] | None:
    """Where the item's spec lane is, as its poll ledger keeps it (None: not in the lane)."""
    spec = ledger.get("spec")
    if not isinstance(spec, Mapping):
        return None
    kept = cast(Mapping[str, Any], spec)
    phase, status = kept.get("phase"), kept.get("status")
    if not isinstance(phase, str) or not phase:
        return None
    return {"phase": phase, "status": status if isinstance(status, str) else ""}


def _phase_cell(phase: Mapping[str, str] | None) -> str:
    """The PHASE cell: ``design:waiting``, ``done``, or empty."""
    if phase is None:
        return ""
    status = phase.get("status") or ""
    return f"{phase['phase']}:{status}" if status else phase["phase"]


def _spent(spend: Mapping[str, Any]) -> str:
    """``$1.25 12t 0.40h``; empty when nothing was metered."""
    usd, turns, hours = (spend.get(kind) or 0 for kind in ("usd", "turns", "hours"))
    if not (usd or turns or hours):
        return ""
    return f"${float(usd):.2f} {int(turns)}t {float(hours):.2f}h"


def _agent_document(state: str) -> dict[str, Any]:
    """``agent`` in JSON for a row whose agent was not asked: tmux's word alone."""
    return {
        "state": state,
        "since": None,
        "blockedOn": None,
        "prompt": None,
        "exitStatus": None,
        "resetsAt": None,
    }


def with_agent_states(
    rows: list[ListedRow], observe: Callable[[Session], AgentState | None]
) -> list[ListedRow]:
    """``rows`` with what each live session's running agent is doing, asked of
    ``observe`` (one tmux call and one hook log each: only live sessions are asked)."""
    return [
        row._replace(detail=observe(row.session))
        if row.session is not None and row.session.is_live and row.agent in (RUNNING, EXITED)
        else row
        for row in rows
    ]


def tmux_states(config: Config) -> States:
    """Every tmux session's state on the configured server, from one tmux call."""
    try:
        return TmuxRunner.from_config(config).session_states()
    except ValueError:  # an invalid socket name: tmux cannot be asked
        return None


def agent_state(session: Session, states: States) -> str:
    """``running``, ``exited``, ``gone`` or ``unknown`` for the session's own tmux target."""
    if states is None or not session.tmux_target:
        return UNKNOWN
    return states.get(session.tmux_target, GONE)


def listed_rows(
    sessions: Sequence[Session], commands: Sequence[str | None], states: States
) -> list[ListedRow]:
    """The row of each session record, its checkout asked of the disk for all at once."""
    checkouts = existing_directories(session.cwd for session in sessions if session.cwd)
    return [
        ListedRow(
            session,
            command,
            agent_state(session, states),
            checkout=session.cwd if session.cwd in checkouts else None,
        )
        for session, command in zip(sessions, commands, strict=True)
    ]


def existing_directories(paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` that are directories now, as ``os.path.isdir`` says of each.

    Paths that share a parent are answered by one listing of the parent, not a
    ``stat`` each: ten thousand records of ended sessions cost a few listings.
    """
    by_parent: dict[str, list[str]] = {}
    for path in dict.fromkeys(paths):
        head, slash, name = path.rpartition("/")
        # "": no parent to list, or a name that is no entry of one: asked one by one.
        parent = "" if not slash or name in ("", ".", "..") else head or slash
        by_parent.setdefault(parent, []).append(path)
    found: set[str] = set()
    for parent, wanted in by_parent.items():
        found.update(_directories_in(parent, wanted))
    return found


def _directories_in(parent: str, paths: list[str]) -> list[str]:
    """The directories among ``paths``, all named in ``parent`` ("": ask each one)."""
    entries: dict[str, os.DirEntry[str]] | None = None
    if parent and len(paths) > 1:
        try:
            with os.scandir(parent) as listing:
                entries = {entry.name: entry for entry in listing}
        except (FileNotFoundError, NotADirectoryError):
            return []  # no such directory: nothing in it exists
        except (OSError, ValueError):
            entries = None  # e.g. not readable, though searchable: ask each path
    if entries is None:
        return [path for path in paths if os.path.isdir(path)]
    listed = _Listing(entries)
    return [path for path in paths if listed.is_directory(path)]


class _Listing:
    """One directory's entries, asked ``os.path.isdir`` of its children."""

    def __init__(self, entries: dict[str, os.DirEntry[str]]) -> None:
        self._entries = entries
        self._folded: set[str] | None = None

    def is_directory(self, path: str) -> bool:
        """A listed entry is asked (a link followed, as ``isdir`` does); an unlisted one is
        absent, unless a case-insensitive file system could still find it: then ``isdir``."""
        name = path.rpartition("/")[2]
        entry = self._entries.get(name)
        if entry is None:
            return self._maybe_elsewhere(name) and os.path.isdir(path)
        try:
            return entry.is_dir()
        except OSError:
            return False

    def _maybe_elsewhere(self, name: str) -> bool:
        if not name.isascii():
            return True  # a file system may also fold Unicode forms: ask it
        if self._folded is None:
            self._folded = {listed.lower() for listed in self._entries}
        return name.lower() in self._folded


def transcripts(sessions: Sequence[Session], states: States) -> list[ListedRow]:
    """A row per ``loop-*`` tmux session that no record names: a retained transcript.

    One kept under a new name (``<target>~<stamp>``) is attributed to its record's item.
    """
    if not states:
        return []
    owners = {
        endpoint.tmux_target: endpoint.ref
        for session in sessions
        for endpoint in session.endpoints()
        if endpoint.tmux_target
    }
    rows: list[ListedRow] = []
    for name in sorted(states):
        if name in owners or not NAME_PATTERN.match(name):
            continue
        ref = owners.get(name.rpartition("~")[0])
        rows.append(ListedRow(None, None, states[name], tmux_target=name, work_item=ref))
    return rows


def held_elsewhere(
    rows: list[ListedRow], holders: Mapping[str, Mapping[str, Any]]
) -> list[ListedRow]:
    """``rows`` with each item another machine holds marked so, and a row for each such
    item this machine has no record of (``holders``: work item ref to its holder)."""
    marked = [
        row._replace(held_by=holders.get(row.session.ref)) if row.session is not None else row
        for row in rows
    ]
    listed = {row.session.ref for row in rows if row.session is not None}
    extra = [
        ListedRow(None, "start", "-", work_item=ref, held_by=holder)
        for ref, holder in sorted(holders.items())
        if ref not in listed
    ]
    return marked + extra
