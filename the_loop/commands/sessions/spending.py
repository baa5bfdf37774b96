"""What each work item's agents have spent, and its budget: the ``SPENT`` column and the
``spend``/``budget`` objects of ``sessions list``, and ``sessions spend``.

The figures are the ones the readers metered into each item's ledger (``spend``: per
agent session, and their sum); the budget is ``routing.budget`` under the item's own
limits from its raises. ``--since`` subtracts what each agent session had spent by then,
as its last ``session.spend`` event before that time says.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from the_loop.commands.common import format_parent, load_context, note, work_item_type
from the_loop.commands.events import since_type
from the_loop.commands.render import Result, table_lines
from the_loop.commands.stores import Stores, open_stores
from the_loop.config.file import Config
from the_loop.intake.budget_rule import KINDS, OVER_BUDGET, Limits, crossed, limits_from
from the_loop.ref import WorkItemRef
from the_loop.spend.figures import Spend

SPEND_EVENT = "session.spend"
SPEND_HEADERS = ["WORK ITEM", "USD", "TURNS", "HOURS", "INPUT", "OUTPUT", "CACHE READ",
                 "CACHE WRITE", "BUDGET"]  # fmt: skip

#: ``(spend, budget)`` of one work item, as ``sessions list`` shows them.
Figures = tuple[dict[str, Any], dict[str, Any]]


def budget_limits(config: Config) -> Limits:
    """``routing.budget``: each limit every work item has by default (0: none)."""
    return limits_from({kind: config.get_float(f"routing.budget.{kind}") for kind in KINDS})


def _dict(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def figures_reader(stores: Stores, config: Config) -> Callable[[str], Figures]:
    """What a work item (its ref) has spent and its budget, read from its ledger."""
    of_ledger = ledger_figures(config)

    def read(ref: str) -> Figures:
        return of_ledger(_dict(stores.store.section(ref, "poll")))

    return read


def ledger_figures(config: Config) -> Callable[[Mapping[str, Any]], Figures]:
    """What an item spent and its budget, from its poll ledger (as read)."""
    defaults = budget_limits(config)
    #: An item nothing was metered for and no raise made (most of a large store): one
    #: pair shared by all of them, never changed (the renderer only encodes it).
    unmetered = item_figures({}, defaults)

    def of_ledger(ledger: Mapping[str, Any]) -> Figures:
        if "spend" not in ledger and "budget" not in ledger:
            return unmetered
        return item_figures(ledger, defaults)

    return of_ledger


def item_figures(ledger: Mapping[str, Any], defaults: Limits) -> Figures:
    """``(spend, budget)`` of the item whose poll ledger is ``ledger``."""
    total = _dict(_dict(ledger.get("spend")).get("total"))
    spend = Spend.from_dict(total).to_dict()
    own = _dict(ledger.get("budget"))
    limits = defaults.over(_dict(own.get("limits")))
    document: dict[str, Any] = dict(limits.to_dict())
    if not limits.any:
        document["state"] = "none"
    elif isinstance(own.get("exceeded"), dict) or crossed(spend, limits) is not None:
        document["state"] = OVER_BUDGET
    else:
        document["state"] = "within"
    return spend, document


# -- sessions spend ------------------------------------------------------------------------


def add_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``spend``."""
    parser = actions.add_parser(
        "spend",
        parents=[*parents, format_parent()],
        help="what each work item's agents have spent, and its budget",
        description="One item per work item: what its agents spent (usd, turns, hours, "
        "tokens), all its sessions together, and its budget; the totals in the summary.",
    )
    parser.add_argument(
        "--work-item", metavar="REF", type=work_item_type, help="only this work item"
    )
    parser.add_argument(
        "--since",
        metavar="WHEN",
        type=since_type,
        help="only what was spent since then: an ISO 8601 time or a duration back (30m, 2h, 1d)",
    )
    parser.set_defaults(func=run_spend)


def run_spend(args: argparse.Namespace) -> Result:
    """The ``sessions spend`` handler."""
    context = load_context(args)
    stores = open_stores(context)
    wanted: WorkItemRef | None = args.work_item
    defaults = budget_limits(context.config)
    with stores.store.snapshot():
        refs = sorted({s.work_item.ref for s in stores.registry.list_sessions()})
        if wanted is not None:
            refs = [ref for ref in refs if ref.casefold() == wanted.ref.casefold()] or [wanted.ref]
        ledgers = {ref: _dict(stores.store.section(ref, "poll")) for ref in refs}
    before = _spent_before(context.layout.event_log, args.since) if args.since else {}
    items: list[dict[str, Any]] = []
    total = Spend.from_dict({})
    for ref in refs:
        ledger = ledgers[ref]
        spend, budget = item_figures(ledger, defaults)
        if args.since is not None:
            spend = _since(ledger, before.get(ref.casefold(), {}))
        total = total + Spend.from_dict(spend)
        items.append({"workItem": ref, "spend": spend, "budget": budget})
    if not items:
        note("no work items with sessions on this machine")

    def text() -> list[str]:
        return table_lines(SPEND_HEADERS, [_row(item) for item in items]) if items else []

    return Result(items=items, text=text, summary={"spend": total.to_dict(), "items": len(items)})


def _row(item: Mapping[str, Any]) -> list[str]:
    spend, budget = _dict(item["spend"]), _dict(item["budget"])
    tokens = _dict(spend.get("tokens"))
    limits = [f"{kind} {budget[kind]:g}" for kind in KINDS if budget.get(kind) is not None]
    state = str(budget.get("state", "none"))
    return [
        str(item["workItem"]),
        f"{float(spend.get('usd', 0)):.4f}",
        str(spend.get("turns", 0)),
        f"{float(spend.get('hours', 0)):.2f}",
        *(str(tokens.get(name, 0)) for name in ("input", "output", "cacheRead", "cacheWrite")),
        f"{', '.join(limits)} ({state})" if limits else "-",
    ]


def _since(ledger: Mapping[str, Any], before: Mapping[str, Spend]) -> dict[str, Any]:
    """What each of the item's agent sessions spent beyond what it had by then."""
    spent = Spend.from_dict({})
    for key, value in _dict(_dict(ledger.get("spend")).get("sessions")).items():
        now = Spend.from_dict(value)
        spent = spent + _minus(now, before.get(key, Spend.from_dict({})))
    return spent.to_dict()


def _minus(now: Spend, then: Spend) -> Spend:
    """What ``now`` adds to ``then`` (never below zero: a figure only grows)."""
    a, b = now.to_dict(), then.to_dict()
    tokens = {name: max(int(a["tokens"][name]) - int(b["tokens"][name]), 0) for name in a["tokens"]}
    values = {kind: max(float(a[kind]) - float(b[kind]), 0.0) for kind in KINDS}
    return Spend.from_dict({**values, "turns": int(values["turns"]), "tokens": tokens})


def _spent_before(path: Path, since: datetime) -> dict[str, dict[str, Spend]]:
    """Per work item (case-folded) and agent session, its figures as its last
    ``session.spend`` event before ``since`` said them."""
    from the_loop.eventlog.log import read_events
    from the_loop.eventlog.query import event_time

    found: dict[str, dict[str, Spend]] = {}
    for event in read_events(path, types=(SPEND_EVENT,)).events:
        at = event_time(event)
        if at is None or at >= since:
            continue
        item, session = str(event.get("work_item", "")), str(event.get("session_id", ""))
        found.setdefault(item.casefold(), {})[session] = Spend.from_dict(event.get("spend"))
    return found
