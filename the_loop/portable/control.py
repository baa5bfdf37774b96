"""The control store: the last command an authorized person gave for a work item.

Kept in the ``control`` section of the work item's portable record (falling back
to the legacy ``sessions/control/<slug>.json`` until the section is written).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.errors import or_ignore_warnings
from the_loop.eventlog.log import EventLog, or_no_events, utc_timestamp
from the_loop.layout import LegacyLayout
from the_loop.portable.store import CONTROL, GRAPH, WorkItemStore
from the_loop.ref import WorkItemRef, as_ref

START = "start"
STOP = "stop"
PAUSE = "pause"
RESUME = "resume"
EXECUTE = "execute"
CONTRIBUTE = "contribute"
CLEANUP = "cleanup"
DO = "do"
COMMANDS = (START, STOP, PAUSE, RESUME, EXECUTE, CONTRIBUTE, CLEANUP, DO)
#: The commands that arm a work item (``start_requested`` is true after them).
ARMING = frozenset({START, RESUME, CONTRIBUTE, DO})
#: Where a command may come from: a ticket comment or the local CLI.
SOURCES = ("comment", "cli")


@dataclass(frozen=True)
class ControlRecord:
    """One recorded command, as the ``control`` section stores it."""

    ref: str
    command: str
    source: str = "comment"
    actor: str = ""
    requested_at: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "command": self.command,
            "source": self.source,
            "actor": self.actor,
            "requestedAt": self.requested_at,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], ref: str = "") -> ControlRecord:
        """Parse a stored record; ``ref`` (when given) replaces the stored one.

        Raises ``ValueError`` when the command is missing or not a string.
        """
        command = data.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("a control record needs a 'command' string")
        return cls(
            ref=ref or _text(data, "ref"),
            command=command,
            source=_text(data, "source", "comment"),
            actor=_text(data, "actor"),
            requested_at=_text(data, "requestedAt"),
            note=_text(data, "note"),
        )


def _text(data: Mapping[str, Any], key: str, default: str = "") -> str:
    """``data[key]`` when it is a string, else ``default`` (read once per listed record)."""
    value = data.get(key, default)
    return value if isinstance(value, str) else default


class ControlStore:
    """Records, reads and clears the ``control`` section of portable records."""

    def __init__(
        self,
        root: Path,
        legacy: LegacyLayout | None = None,
        *,
        store: WorkItemStore | None = None,
        events: EventLog | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store or WorkItemStore(root, legacy, on_warning=on_warning)
        self.root = self.store.root
        self._events = or_no_events(events)
        self._warn = or_ignore_warnings(on_warning)

    def record(
        self,
        ref: WorkItemRef | str,
        command: str,
        source: str = "comment",
        actor: str = "",
        note: str = "",
    ) -> ControlRecord:
        """Store ``command`` as the item's last command and emit ``control.recorded``.

        Raises ``ValueError`` for a bad ref, an unknown command or a source other than
        ``comment``/``cli``; ``OSError`` when the record cannot be written.
        """
        item = as_ref(ref)
        if command not in COMMANDS:
            raise ValueError(f"unknown command {command!r}; expected one of {', '.join(COMMANDS)}")
        if source not in SOURCES:
            raise ValueError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
        entry = ControlRecord(item.ref, command, source, actor, utc_timestamp(), note)
        self.store.write_section(item, CONTROL, entry.to_dict())
        # ``source`` is an envelope key (the process), so the command's source is renamed.
        self._events.emit(
            "control.recorded",
            work_item=item.ref,
            command=command,
            command_source=source,
            actor=actor,
        )
        return entry

    def get(self, ref: WorkItemRef | str) -> ControlRecord | None:
        """The item's last command, or None (a malformed record reads as none, with a warning)."""
        item = as_ref(ref)
        data = self.store.section(item, CONTROL)
        if data is None:
            return None
        try:
            return ControlRecord.from_dict(data, ref=item.ref)
        except ValueError as error:
            self._warn(f"{item.ref}: ignoring malformed control record: {error}")
            return None

    def start_requested(self, ref: WorkItemRef | str) -> bool:
        """True when the last command arms the item (start, resume, contribute, do)."""
        entry = self.get(ref)
        return entry is not None and entry.command in ARMING

    def clear(self, ref: WorkItemRef | str) -> bool:
        """Clear the section through the store's seal-vs-delete rule; True when one was there."""
        return CONTROL in self.store.write_section(ref, CONTROL, None).removed

    def restore(
        self, ref: WorkItemRef | str, previous: ControlRecord | None, *, replacing: ControlRecord
    ) -> bool:
        """Put back ``previous`` (what :meth:`get` returned before) while the section still
        holds ``replacing`` (what the caller recorded), in one locked read-modify-write.

        Rolls back a failed spawn's ``start``; a command recorded since is kept. True when
        ``previous`` was put back.
        """
        recorded = replacing.to_dict()
        restored: list[bool] = []

        def put_back(current: dict[str, Any] | None) -> dict[str, Any] | None:
            if current != recorded:
                return current
            restored.append(True)
            return None if previous is None else previous.to_dict()

        self.store.update_section(ref, CONTROL, put_back)
        return bool(restored)

    def frozen_graph(self, ref: WorkItemRef | str) -> dict[str, Any] | None:
        """The retired ``graph`` section of an item frozen by an older release, if any."""
        return self.store.section(ref, GRAPH)
