"""What a work item's agents have spent, metered over the real files: the intake's
``meter`` port.

Each call reads only what was appended since the last one: the agent's transcripts
(Claude Code's, through :mod:`the_loop.spend`), for ``usd`` and ``tokens``, and its hook
log, for ``turns`` (each ``UserPromptSubmit``: its first prompt, each delivery, each
continue) and ``hours`` (from a submitted prompt to its ``Stop``). An agent without
hooks is counted from what the intake saw: its first prompt and each delivery, and the
time it was seen working. Where this machine has read to is kept per item in
``local/agents/<slug>.meter.json``; the figures go to the item's ledger per agent
session (``spend.sessions``, their sum in ``spend.total``), so they travel with the
item's portable record and another machine taking it over goes on counting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from the_loop.agent.hooks import AGENTS_DIR, hook_log_path
from the_loop.agent.state import WORKING, AgentState
from the_loop.errors import TheLoopError
from the_loop.fsio import open_regular, read_json, write_json
from the_loop.intake.ports import LiveSession
from the_loop.portable.poll import Ledger, PollState
from the_loop.sessions.registry import SessionRegistry
from the_loop.spend.figures import Spend, Tokens
from the_loop.spend.meter import meter
from the_loop.spend.prices import PriceTable
from the_loop.spend.state import MeterState
from the_loop.spend.transcripts import transcript_files

#: The ledger key of what the item's agents spent.
SPEND_KEY = "spend"
#: The longest gap between two looks at a hookless agent that still counts as working.
_MOST_UNSEEN_SECONDS = 60.0
#: How often an item no limit watches is metered by one process (its figures are for
#: ``sessions list``): a round's deliveries never wait on it.
UNWATCHED_SECONDS = 10.0
#: When this process last metered each session record (its path).
_METERED_AT: dict[str, float] = {}
#: The models this process said it does not know the price of (each once).
_UNKNOWN_SAID: set[str] = set()
#: How often a session's changing figures are said in the event log, within one turn.
_SAID_EVERY_SECONDS = 60.0
#: The most of a hook log read in one call (the rest waits for the next).
_READ_AT_MOST = 4 << 20


@dataclass
class SpendMeter:
    """Meters each live session's agent; the intake's ``meter`` port is :meth:`item_spend`."""

    registry: SessionRegistry
    ledger: PollState
    environ: Mapping[str, str]
    clock: Callable[[], float]
    warn: Callable[[str], None]
    emit: Callable[..., object]
    prices: PriceTable | None = None
    #: The unknown models already said (each once per process).
    unknown_said: set[str] = field(default_factory=lambda: _UNKNOWN_SAID)

    def item_spend(
        self, session: LiveSession, state: AgentState | None, watched: bool = True
    ) -> dict[str, Any] | None:
        """Meter ``session``'s agent; what its item has spent in all (None: no record, or
        not ``watched`` by a limit and metered by this process within
        :data:`UNWATCHED_SECONDS`)."""
        record = self.registry.path_for(session.ref)
        now = self.clock()
        last = _METERED_AT.get(str(record))
        if not watched and last is not None and 0 <= now - last < UNWATCHED_SECONDS:
            return None
        _METERED_AT[str(record)] = now
        status, found = self.registry.load(session.ref)
        del status
        if found is None or not found.harness_session_id:
            return None
        key = found.harness_session_id
        path = record.parent / AGENTS_DIR / f"{record.stem}.meter.json"
        read = _read_state(path)
        kept = dict(read) if read.get("session") == key else {"session": key}
        if session.harness == "claude":
            log = hook_log_path(record.parent, record.stem)
            spend = self._claude(found.cwd, key, kept, log, state)
        else:
            spend = self._hookless(session, kept, state, now)
        self._said(session, key, spend.to_dict(), kept, now)
        try:
            if kept != read:  # nothing appended: nothing written
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json(path, kept, indent=None)
        except OSError as error:
            raise TheLoopError(f"cannot keep the spend meter's place in {path}: {error}") from None
        return self._store(session, key, spend)

    def _claude(
        self, cwd: str, key: str, kept: dict[str, Any], log: Path, state: AgentState | None
    ) -> Spend:
        prices = self.prices if self.prices is not None else PriceTable.load()
        self.prices = prices
        config = self.environ.get("CLAUDE_CONFIG_DIR")
        home = Path(self.environ.get("HOME", "~")).expanduser()
        files = transcript_files(home, cwd, key, config_dir=Path(config) if config else None)
        result = meter(files, MeterState.from_dict(kept.get("meter")), prices)
        kept["meter"] = result.state.to_dict()
        for model in sorted(set(result.unknown_models) - self.unknown_said):
            self.unknown_said.add(model)
            self.warn(f"the price of model {model!r} is not known: priced as the dearest known")
        _count_hooks(log, kept)
        _close_turn(kept, state, self.clock())
        hours = (float(kept.get("workingSeconds", 0.0)) + _open_turn(kept, self.clock())) / 3600
        return Spend(
            # The transcripts miss the agent's side requests: its own running cost, where
            # it wrote one, is the larger figure.
            usd=max(result.spend.usd, result.reported_usd),
            turns=int(kept.get("turns", 0)),
            hours=hours,
            tokens=result.spend.tokens,
        )

    def _hookless(
        self, session: LiveSession, kept: dict[str, Any], state: AgentState | None, now: float
    ) -> Spend:
        seen_at = kept.get("seenAt")
        if kept.get("working") and isinstance(seen_at, int | float):
            gap = now - float(seen_at)
            if 0 < gap <= _MOST_UNSEEN_SECONDS:
                kept["workingSeconds"] = float(kept.get("workingSeconds", 0.0)) + gap
        if state is not None:
            kept["working"] = state.state == WORKING
            kept["seenAt"] = now
        delivered = sum(
            1 for row in self.ledger.deliveries(session.ref) if row.get("state") == "delivered"
        )
        # Its first prompt and what was delivered since it began (not an earlier session's).
        base = kept.setdefault("deliveredBefore", delivered)
        turns = 1 + max(delivered - int(base), 0)
        return Spend(0.0, turns, float(kept.get("workingSeconds", 0.0)) / 3600, Tokens())

    def _said(
        self, session: LiveSession, key: str, mine: dict[str, Any], kept: dict[str, Any], now: float
    ) -> None:
        """``session.spend`` with the session's figures when they changed: at each new
        turn, else at most once a minute (what ``sessions spend --since`` subtracts)."""
        last = kept.get("said")
        if mine == last:
            return
        turned = (
            not isinstance(last, dict) or cast(dict[str, Any], last).get("turns") != mine["turns"]
        )
        said_at = kept.get("saidAt")
        if not turned and isinstance(said_at, int | float) and now - said_at < _SAID_EVERY_SECONDS:
            return
        self.emit("session.spend", work_item=session.ref.ref, session_id=key, spend=mine)
        kept["said"], kept["saidAt"] = mine, now

    def _store(self, session: LiveSession, key: str, spend: Spend) -> dict[str, Any]:
        """The session's figures into the item's ledger (only when they changed); the sum."""
        mine = spend.to_dict()
        totals: list[dict[str, Any]] = []

        def change(ledger: Ledger) -> None:
            value = ledger.get(SPEND_KEY)
            kept = cast(dict[str, Any], value) if isinstance(value, dict) else {}
            found = kept.get("sessions")
            sessions = cast(dict[str, Any], found) if isinstance(found, dict) else {}
            sessions[key] = _most(sessions.get(key), mine)  # a reader behind never lowers it
            total = _total(sessions)
            totals.append(total)
            ledger[SPEND_KEY] = {"sessions": sessions, "total": total}

        current: object = self.ledger.value(session.ref, SPEND_KEY)
        kept = cast(dict[str, Any], current) if isinstance(current, dict) else {}
        known: object = kept.get("sessions")
        if isinstance(known, dict) and cast(dict[str, Any], known).get(key) == mine:
            return _total(cast(dict[str, Any], known))
        self.ledger.change(session.ref, change)
        return totals[-1]


def _most(kept: object, mine: dict[str, Any]) -> dict[str, Any]:
    """Each figure of ``mine`` or of what was kept for the session, whichever is larger:
    a session's figures only grow, whichever reader metered last."""
    if not isinstance(kept, dict):
        return mine
    old = Spend.from_dict(cast(object, kept)).to_dict()
    most: dict[str, Any] = {k: max(old[k], mine[k]) for k in ("usd", "turns", "hours")}
    most["tokens"] = {k: max(old["tokens"][k], mine["tokens"][k]) for k in mine["tokens"]}
    return most


def _total(sessions: Mapping[str, Any]) -> dict[str, Any]:
    total = Spend(0.0, 0, 0.0, Tokens())
    for value in sessions.values():
        if isinstance(value, dict):
            total = total + Spend.from_dict(cast(dict[str, Any], value))
    return total.to_dict()


def item_spend(ledger_value: object) -> dict[str, Any] | None:
    """``spend.total`` of a ledger's ``spend`` value (None: nothing metered)."""
    if not isinstance(ledger_value, dict):
        return None
    total = cast(dict[str, Any], ledger_value).get("total")
    return (
        Spend.from_dict(cast(dict[str, Any], total)).to_dict() if isinstance(total, dict) else None
    )


def _read_state(path: Path) -> dict[str, Any]:
    try:
        value = read_json(path)
    except (OSError, ValueError):
        return {}
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _count_hooks(log: Path, kept: dict[str, Any]) -> None:
    """Turns and working time from the hook log's lines appended since the kept offset."""
    try:
        descriptor = open_regular(log)  # never a link, never blocks on a FIFO
    except OSError:
        return
    try:
        info = os.fstat(descriptor)
        offset = int(kept.get("hookOffset", 0))
        if kept.get("hookInode") != info.st_ino or info.st_size < offset:
            offset = 0  # begun anew at a new spawn
        os.lseek(descriptor, offset, os.SEEK_SET)
        data = os.read(descriptor, min(info.st_size - offset, _READ_AT_MOST))
    finally:
        os.close(descriptor)
    end = data.rfind(b"\n") + 1
    for line in data[:end].split(b"\n"):
        _count_event(line, kept)
    kept["hookOffset"] = offset + end
    kept["hookInode"] = info.st_ino


def _count_event(line: bytes, kept: dict[str, Any]) -> None:
    try:
        event: Any = json.loads(line)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    found = cast(dict[str, Any], event)
    name, at = found.get("event"), found.get("t")
    if not isinstance(at, int | float):
        return
    if name == "UserPromptSubmit":
        kept["turns"] = int(kept.get("turns", 0)) + 1
        since, last = kept.get("workingSince"), kept.get("lastEventAt")
        if isinstance(since, int | float) and isinstance(last, int | float) and last >= since:
            # The turn before ended with no Stop (an Escape): it worked until its last event.
            kept["workingSeconds"] = float(kept.get("workingSeconds", 0.0)) + last - since
        kept["workingSince"] = float(at)
    if name in ("PreToolUse", "PostToolUse") and not isinstance(
        kept.get("workingSince"), int | float
    ):
        kept["workingSince"] = float(at)  # it works on, after a dialog closed its turn's count
    if name not in ("Notification", "PermissionRequest"):
        kept["lastEventAt"] = float(at)  # the agent did something then
    if name in ("Stop", "StopFailure", "SessionEnd"):
        since = kept.pop("workingSince", None)
        if isinstance(since, int | float) and at >= since:
            kept["workingSeconds"] = float(kept.get("workingSeconds", 0.0)) + float(at) - since


def _close_turn(kept: dict[str, Any], state: AgentState | None, now: float) -> None:
    """End the open turn an agent seen not working left without a ``Stop`` (an Escape, a
    "No" at a permission prompt, a dialog): it worked until its last hook said anything."""
    since = kept.get("workingSince")
    if state is None or state.state == WORKING or not isinstance(since, int | float):
        return
    last = kept.get("lastEventAt")
    end = float(last) if isinstance(last, int | float) and last >= since else float(since)
    kept["workingSeconds"] = float(kept.get("workingSeconds", 0.0)) + min(end, now) - since
    kept.pop("workingSince", None)


def _open_turn(kept: Mapping[str, Any], now: float) -> float:
    """How long the turn that runs has been running (0: none runs)."""
    since = kept.get("workingSince")
    return max(now - float(since), 0.0) if isinstance(since, int | float) else 0.0
