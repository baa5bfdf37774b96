"""A work item's budget as values: its limits, a raise read from a comment, and which
limit what was spent has crossed. Pure: no I/O.

A budget has up to three limits: ``usd`` (what the agents' model requests cost),
``hours`` (wall time an agent was working) and ``turns`` (the prompts the agents took).
``routing.budget`` gives every item its default; an authorized ``budget +N`` comment
raises one limit of one item (``+5`` or ``+0.50`` dollars, ``+2h`` hours, ``+10 turns``).
A raise of a limit the item does not have starts from what was spent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The limits a budget can have, in the order they are said.
KINDS = ("usd", "hours", "turns")
#: The state of an item that reached its budget (and the STATUS ``sessions list`` shows).
OVER_BUDGET = "over-budget"
#: The fraction of a limit at which the ticket is warned, unless the config says.
WARN_AT = 0.8

_RAISE = re.compile(
    r"\A\+\s*(?:\$\s*)?(?P<amount>\d{1,9}(?:\.\d{1,6})?)\s*"
    r"(?P<unit>usd|dollars?|\$|h|hours?|turns?)?\s*\Z",
    re.IGNORECASE,
)
_UNITS = {"h": "hours", "hour": "hours", "hours": "hours", "turn": "turns", "turns": "turns"}


@dataclass(frozen=True)
class Limits:
    """Each limit, or None where the item has none."""

    usd: float | None = None
    hours: float | None = None
    turns: float | None = None

    def get(self, kind: str) -> float | None:
        value: float | None = getattr(self, kind)
        return value

    @property
    def any(self) -> bool:
        return any(self.get(kind) is not None for kind in KINDS)

    def to_dict(self) -> dict[str, float | None]:
        return {kind: self.get(kind) for kind in KINDS}

    def over(self, item: Mapping[str, Any]) -> Limits:
        """These defaults with ``item``'s own limits (a ledger's ``limits``) on top."""
        values = {kind: self.get(kind) for kind in KINDS}
        for kind in KINDS:
            value = item.get(kind)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                values[kind] = float(value)
        return Limits(**values)


def limits_from(values: Mapping[str, float]) -> Limits:
    """The limits ``routing.budget``'s values give (``0``: none)."""
    return Limits(**{kind: float(values[kind]) or None for kind in KINDS if kind in values})


@dataclass(frozen=True)
class Raise:
    """``+amount`` of one limit."""

    kind: str
    amount: float

    def said(self) -> str:
        return amount_text(self.kind, self.amount)


def parse_raise(text: str) -> Raise | None:
    """The raise ``text`` asks for (``+5``, ``+0.50``, ``+$5``, ``+2h``, ``+10 turns``), or
    None when it asks for none a person could mean exactly."""
    match = _RAISE.match(text.strip())
    if match is None:
        return None
    amount = float(match.group("amount"))
    unit = (match.group("unit") or "usd").lower()
    kind = _UNITS.get(unit, "usd")
    if amount <= 0 or (kind == "turns" and not amount.is_integer()):
        return None
    return Raise(kind, amount)


def raised(limits: Limits, spent: Mapping[str, float], more: Raise) -> float:
    """The new limit of ``more.kind``: the limit it has plus ``more``, or what was spent
    plus ``more`` where it had none."""
    base = limits.get(more.kind)
    start = base if base is not None else float(spent.get(more.kind, 0.0))
    return round(start + more.amount, 6)


@dataclass(frozen=True)
class Crossing:
    """One limit reached: which, what was spent of it, and the limit."""

    kind: str
    spent: float
    limit: float

    def said(self) -> str:
        return f"{amount_text(self.kind, self.spent)} of {amount_text(self.kind, self.limit)}"


def crossed(spent: Mapping[str, float], limits: Limits, *, at: float = 1.0) -> Crossing | None:
    """The first limit whose fraction ``at`` was reached, or None."""
    for kind in KINDS:
        limit = limits.get(kind)
        if limit is None:
            continue
        used = float(spent.get(kind, 0.0))
        if used >= limit * at:
            return Crossing(kind, used, limit)
    return None


def amount_text(kind: str, value: float) -> str:
    """``$1.25``, ``1.5 h``, ``12 turns``."""
    if kind == "usd":
        cents = f"${value:,.2f}"
        return cents if abs(value - round(value, 2)) < 1e-9 else f"${value:,.4f}"
    if kind == "hours":
        return f"{value:.2f} h"
    return f"{value:g} turns"
