"""A plan's usage limit: its wordings read, its reset time parsed.

The wordings are data (``limits`` in ``screens.json``); each names the reset as said
("3pm", "3:30pm", "Dec 7, 3pm", a zone in parentheses or none) or in seconds. A said
time is the next such time after the moment the agent said it (a minute of slack: the
agent rounds the reset down to its minute), in the zone named, else the machine's. A
limit without a reset time is no usage limit: an API key's 429, which the agent retries
by itself, or gives up as any failed turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from the_loop.agent.screens import PATTERNS_FILE, flat

#: How much later than a reset said to the minute it may really fall.
ROUNDING_SECONDS = 60.0
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WHEN = re.compile(
    r"(?:(?P<month>[A-Za-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<half>[ap]\.?m\b\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z0-9_+\-/]{1,64})\))?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class UsageLimit:
    """A usage limit the agent stopped at: when it resets (unix time), the zone it was
    said in (``""``: the machine's), whether that time is exact (given in seconds) or
    said to the minute, and the words it was read from."""

    resets_at: float
    zone: str = ""
    exact: bool = False
    text: str = ""

    @property
    def over_at(self) -> float:
        """When the limit has surely reset: a time said to the minute, a minute later."""
        return self.resets_at if self.exact else self.resets_at + ROUNDING_SECONDS

    @property
    def key(self) -> str:
        """The limit's identity, the same whichever words it was read from: its minute."""
        return str(int(self.resets_at // 60))

    def iso(self, local: tzinfo | None = None) -> str:
        """The reset time in ISO 8601, with the offset of the zone it was said in (else
        ``local``'s, else the machine's)."""
        zone = _zone(self.zone) or local
        if zone is None:
            return datetime.fromtimestamp(self.resets_at).astimezone().isoformat()
        return datetime.fromtimestamp(self.resets_at, zone).isoformat()


@cache
def _section() -> dict[str, Any]:
    raw = json.loads(PATTERNS_FILE.read_text(encoding="utf-8"))
    section: Any = raw.get("limits") or {}
    return cast(dict[str, Any], section) if isinstance(section, dict) else {}


@cache
def wordings() -> tuple[re.Pattern[str], ...]:
    """The usage limit's wordings of ``screens.json``, in the order they are tried."""
    listed: Any = _section().get("wordings") or []
    return tuple(re.compile(str(w), re.IGNORECASE) for w in cast(list[Any], listed))


@cache
def self_resume_words() -> tuple[str, ...]:
    """The words with which an agent says it will continue by itself at the reset."""
    listed: Any = _section().get("selfResume") or []
    return tuple(flat(str(w)) for w in cast(list[Any], listed))


def read_limit(text: str, *, said_at: float, local: tzinfo = UTC) -> UsageLimit | None:
    """The usage limit ``text`` names with its reset (the lowest line that does: the
    latest), said at ``said_at``; None when no line of it is a usage limit with a reset
    time. A zone wrapped onto the next line is read with its line."""
    lines = [flat(line) for line in text.splitlines()]
    for index in range(len(lines) - 1, -1, -1):
        line, following = lines[index], lines[index + 1 : index + 2]
        if following and following[0].startswith("("):
            line = f"{line} {following[0]}"
        for wording in wordings():
            found = wording.search(line)
            if found is None:
                continue
            limit = _limit(found, line, said_at, local)
            if limit is not None:
                return limit
    return None


def _limit(found: re.Match[str], line: str, said_at: float, local: tzinfo) -> UsageLimit | None:
    groups = found.groupdict()
    epoch = groups.get("epoch")
    if epoch:
        return UsageLimit(float(epoch), "", exact=True, text=line.strip())
    said = str(groups.get("when") or "")
    when = parse_reset(said, said_at=said_at, local=local)
    if when is None:
        return None
    named = _WHEN.match(said.strip())
    zone = named["zone"] if named is not None and named["zone"] else ""
    name = zone if _zone(zone) is not None else ""
    return UsageLimit(when.timestamp(), name, exact=False, text=line.strip())


def parse_reset(when: str, *, said_at: float, local: tzinfo = UTC) -> datetime | None:
    """The reset ``when`` says ("3pm", "3:30pm (Europe/Paris)", "Dec 7, 3pm"): the next
    such time after ``said_at`` (less :data:`ROUNDING_SECONDS`), in its zone; None when
    it says no time."""
    found = _WHEN.match(when.strip())
    if found is None:
        return None
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    half = (found["half"] or "").lower().replace(".", "")
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    zone = _zone(found["zone"] or "") or local
    after = datetime.fromtimestamp(said_at - ROUNDING_SECONDS, zone)
    if found["month"]:
        return _dated(found, after, hour, minute)
    moment = after.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return moment if moment > after else _same_time_next_day(moment)


def _dated(found: re.Match[str], after: datetime, hour: int, minute: int) -> datetime | None:
    month = found["month"].lower()
    if month not in _MONTHS:
        return None
    for year in (after.year, after.year + 1):
        try:
            moment = after.replace(
                year=year,
                month=_MONTHS.index(month) + 1,
                day=int(found["day"]),
                hour=hour,
                minute=minute,
                second=0,
                microsecond=0,
            )
        except ValueError:
            return None
        if moment > after:
            return moment
    return None


def _same_time_next_day(moment: datetime) -> datetime:
    """The same wall-clock time a day later, in the same zone (across a change of offset)."""
    zone = moment.tzinfo
    naive = moment.replace(tzinfo=None) + timedelta(days=1)
    return naive.replace(tzinfo=zone)


def _zone(name: str) -> tzinfo | None:
    """The time zone called ``name`` (an IANA name, or UTC/GMT), None when unknown."""
    if not name:
        return None
    if name.upper() in ("UTC", "GMT", "Z"):
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def says_it_resumes(text: str) -> bool:
    """Whether ``text`` (a screen) says the agent will continue by itself at the reset."""
    shown = flat(text)
    return any(words in shown for words in self_resume_words())
