"""The board's routes: ``/api/v1/work-items`` (filtered), one work item with its recent
timeline, and ``/api/v1/attention``, all read by :class:`~the_loop.api.views.Views`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

from the_loop.api.answer import Answer, document, refusal
from the_loop.api.views import Views
from the_loop.api.work_items import Item
from the_loop.ref import WorkItemRef

#: The session states ``?state=`` takes (``none``: an item without a session here).
STATES = ("active", "paused", "closed", "none")
#: The most events an item's timeline shows, newest last.
TIMELINE_EVENTS = 100
WORK_ITEMS = "/api/v1/work-items"


def work_items(views: Views, query: Mapping[str, list[str]]) -> Answer:
    """Every work item, or those ``?state=``, ``?repo=`` and ``?attention=1`` keep."""
    wanted = _one_each(query, ("state", "repo", "attention"))
    if isinstance(wanted, Answer):
        return wanted
    state, repo, attention = (wanted.get(name) for name in ("state", "repo", "attention"))
    if state is not None and state not in STATES:
        return _bad(f"state must be one of {', '.join(STATES)}, not {state!r}")
    if attention not in (None, "0", "1"):
        return _bad(f"attention takes 1 or 0, not {attention!r}")
    board = views.board()
    if not wanted:  # the whole list: its body and tag as built
        return Answer(HTTPStatus.OK, board.body, etag=board.etag)
    items = board.items
    kept = [
        item
        for item in items
        if (state is None or _state(item) == state)
        and (repo is None or str(item["repository"]).casefold() == repo.casefold())
        and (attention != "1" or item["attention"])
    ]
    return Answer(HTTPStatus.OK, document("api work-items", kept))


def one_work_item(views: Views, encoded: str, query: Mapping[str, list[str]]) -> Answer:
    """One item (its ref URL-encoded in the path) with its recent ``timeline``."""
    if query:
        return _bad("this route takes no query")
    try:
        ref = WorkItemRef.parse(unquote(encoded)).ref
    except ValueError as error:
        return _bad(f"not a work item ref: {error}")
    items = views.board().items
    found = next((item for item in items if item["ref"] == ref), None)
    if found is None:
        found = next((_nesting(item, ref) for item in items if _nesting(item, ref)), None)
    if found is None:
        return refusal(HTTPStatus.NOT_FOUND, "api work-item", f"no work item {ref} here")
    timeline = [event for event in _events(views.tail()) if event.get("work_item") == ref]
    item = {**found, "timeline": timeline[-TIMELINE_EVENTS:]}
    return Answer(HTTPStatus.OK, document("api work-item", (item,)))


def attention(views: Views, query: Mapping[str, list[str]]) -> Answer:
    """What needs a person, oldest first."""
    if query:
        return _bad("this route takes no query")
    return Answer(HTTPStatus.OK, document("api attention", views.needs()))


def _nesting(item: Item, ref: str) -> Item | None:
    """``item`` when ``ref`` is one of its pull requests (asked by the PR's ref)."""
    pulls = cast(Sequence[Mapping[str, Any]], item.get("pullRequests") or ())
    return item if any(pr.get("ref") == ref for pr in pulls) else None


def _state(item: Item) -> str:
    session = item.get("session")
    return str(cast(Mapping[str, Any], session).get("status")) if session else "none"


def _events(tail: bytes) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for line in tail.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            found.append(cast(dict[str, Any], event))
    return found


def _one_each(query: Mapping[str, list[str]], names: Sequence[str]) -> dict[str, str] | Answer:
    wanted: dict[str, str] = {}
    for name, values in query.items():
        if name not in names:
            return _bad(f"unknown query {name!r} (takes {', '.join(names)})")
        if len(values) != 1:
            return _bad(f"{name} given more than once")
        wanted[name] = values[0]
    return wanted


def _bad(sentence: str) -> Answer:
    return refusal(HTTPStatus.BAD_REQUEST, "api", sentence)


__all__ = ["STATES", "WORK_ITEMS", "attention", "one_work_item", "work_items"]
