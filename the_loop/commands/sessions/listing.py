"""The rows of ``sessions list``: a record, its last control command, its agent, its checkout.

The agent's state comes from one ``tmux list-panes -a`` per listing, never one call per
row: ``running`` (a pane runs), ``exited`` (every pane ended, the pane kept), ``gone``
(no tmux session of that name, or no tmux server at all), ``unknown`` (tmux did not
answer, is not installed, or the record names no tmux session).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from the_loop.dispatch.tmux import NAME_PATTERN, TmuxRunner

if TYPE_CHECKING:
    from the_loop.config import Config
    from the_loop.sessions.session import Session

GONE = "gone"
UNKNOWN = "unknown"
#: The status of a transcript row: a kept tmux session no record names.
RETAINED = "retained"
#: The CHECKOUT cell of a row with no checkout, or one that no longer exists.
NO_CHECKOUT = "—"

#: tmux session name -> ``running`` / ``exited``; None when tmux did not answer.
States = Mapping[str, str] | None


@dataclass(frozen=True)
class ListedRow:
    """One row: a session record (None for a transcript), its last command and agent.

    The report is built only when the row is encoded, as the renderer writes it.
    """

    session: Session | None
    command: str | None
    agent: str
    tmux_target: str = ""
    work_item: str | None = None

    @property
    def checkout(self) -> str | None:
        """The session's working directory while it exists, else None."""
        cwd = self.session.cwd if self.session is not None else ""
        return cwd if cwd and os.path.isdir(cwd) else None

    def document(self) -> dict[str, Any]:
        """The ``--format json`` item: the record's report, ``control``, ``agent``, ``checkout``."""
        if self.session is None:
            document: dict[str, Any] = {
                "workItem": self.work_item,
                "tmuxTarget": self.tmux_target,
                "status": RETAINED,
            }
        else:
            document = self.session.to_dict()
        document["control"] = self.command
        document["agent"] = self.agent
        document["checkout"] = self.checkout
        return document

    def cells(self) -> list[str]:
        """The table row: the record's cells, then AGENT and CHECKOUT."""
        session = self.session
        if session is None:
            cells = [self.work_item, "", "", self.tmux_target, RETAINED, "", ""]
        else:
            cells = [
                session.ref,
                session.harness,
                session.harness_session_id,
                session.tmux_target,
                session.status,
                self.command,
                session.last_event_at,
            ]
        return [cell or "-" for cell in cells] + [self.agent, self.checkout or NO_CHECKOUT]


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


def listed(session: Session, command: str | None, states: States) -> ListedRow:
    """The row of one session record."""
    return ListedRow(session, command, agent_state(session, states))


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
