"""The read routes: each a path, its query, and the files it reads (never the network).

``/api/v1/sessions`` and ``/api/v1/events`` are the commands' own code paths
(:mod:`~the_loop.api.cli_reads`), so they answer field for field what ``sessions list
--format json`` and ``events --format json`` print; ``/api/v1/health`` says what the
server serves and which daemons run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from importlib.resources import files
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from the_loop import __version__
from the_loop.api.answer import HTML_TYPE, UNAUTHORIZED_PAGE, Answer, document, refusal
from the_loop.api.board_routes import WORK_ITEMS, attention, one_work_item, work_items
from the_loop.api.cli_reads import CommandReadError, command_document
from the_loop.api.stream import Stream
from the_loop.api.token import COOKIE, Codes, cookie_value
from the_loop.api.views import Views
from the_loop.commands.common import Context
from the_loop.fsio import read_bytes

#: The query of ``/api/v1/events`` and the ``events`` flag each one is.
EVENT_FILTERS = {
    "type": "--type",
    "work-item": "--work-item",
    "since": "--since",
    "limit": "--limit",
}


@dataclass(frozen=True)
class Served:
    """What the routes read: the server's context and the global flags it was given (the
    commands' reads take the same), and the daemons' states (:func:`daemons`)."""

    context: Context
    global_flags: Sequence[str]
    daemons: Callable[[], list[dict[str, object]]]
    codes: Codes
    token: str
    views: Views
    #: How the config file in use was found (``--config``, ``$THE_LOOP_CLI_CONFIG``, the
    #: nearest ``.the-loop/``, the home's), or that none was.
    config_why: str = ""


def route(served: Served, target: str) -> Answer | Stream:
    """The answer to ``GET target`` (its path and query)."""
    split = urlsplit(target)
    query = parse_qs(split.query, keep_blank_values=True)
    if split.path.startswith(WORK_ITEMS + "/") and len(split.path) > len(WORK_ITEMS) + 1:
        return one_work_item(served.views, split.path[len(WORK_ITEMS) + 1 :], query)
    handler = _ROUTES.get(split.path.rstrip("/") or "/")
    if handler is None:
        return refusal(HTTPStatus.NOT_FOUND, "api", f"no route {split.path}")
    try:
        return handler(served, query)
    except CommandReadError as error:
        return refusal(error.status, "api", str(error))


def _health(served: Served, query: Mapping[str, list[str]]) -> Answer:
    del query
    context = served.context
    choice = context.root_choice
    config = context.config.source
    local = context.layout.local_dir
    poll = _json_file(local / "poll-status.json")
    said = cast(dict[str, Any], poll) if isinstance(poll, dict) else {}
    reports: dict[str, object] = {
        "poller": poll,
        "webhook receiver": _json_file(local / "webhook-status.json"),
        "API server": _json_file(local / "serve-status.json"),
    }
    item: dict[str, object] = {
        "version": __version__,
        "stateRoot": str(context.layout.root),
        "stateRootWhy": choice.reason if choice is not None else "",
        "config": str(config) if config is not None else None,
        "configWhy": served.config_why,
        "daemons": [
            {**daemon, "report": reports.get(str(daemon.get("name")))}
            for daemon in served.daemons()
        ],
        "rateRemaining": said.get("rate_remaining"),
        "lastCycle": said.get("finishedAt"),
        "backingOff": said.get("backing_off") or None,
        "backoff": said.get("backoff") if _backing(said.get("backoff")) else None,
    }
    return Answer(HTTPStatus.OK, document("api health", (item,)))


def _backing(backoff: object) -> bool:
    """Whether the poller's back-off record says it waits (failures, or a resume ahead)."""
    if not isinstance(backoff, dict):
        return False
    shown = cast(dict[str, Any], backoff)
    return bool(shown.get("failures")) or bool(shown.get("resumeAt"))


def _sessions(served: Served, query: Mapping[str, list[str]]) -> Answer:
    if query:
        return refusal(HTTPStatus.BAD_REQUEST, "sessions list", "this route takes no query")
    body = command_document(served.global_flags, ("sessions", "list"))
    return Answer(HTTPStatus.OK, body)


def _events(served: Served, query: Mapping[str, list[str]]) -> Answer:
    words = ["events"]
    for name, values in query.items():
        flag = EVENT_FILTERS.get(name)
        if flag is None or len(values) != 1:
            said = f"unknown query {name!r}" if flag is None else f"{name} given more than once"
            return refusal(
                HTTPStatus.BAD_REQUEST, "events", f"{said} (takes {', '.join(EVENT_FILTERS)})"
            )
        words += [flag, values[0]]
    body = command_document(served.global_flags, words)
    return Answer(HTTPStatus.OK, body)


def _event_stream(served: Served, query: Mapping[str, list[str]]) -> Answer | Stream:
    """The event log as it grows, as Server-Sent Events (:mod:`~the_loop.api.stream`)."""
    if query:
        return refusal(HTTPStatus.BAD_REQUEST, "events stream", "this route takes no query")
    context = served.context
    return Stream(context.layout.event_log, int(context.config.get_float("api.maxStreams")))


def _login(served: Served, query: Mapping[str, list[str]]) -> Answer:
    """A code (once, within ten minutes) for the board's cookie, then the board without
    the code in its address; a spent, expired or forged code gets the 401 page."""
    codes = query.get("code", [])
    if len(codes) != 1 or not served.codes.redeem(codes[0]):
        return Answer(HTTPStatus.UNAUTHORIZED, UNAUTHORIZED_PAGE, HTML_TYPE)
    cookie = f"{COOKIE}={cookie_value(served.token)}; HttpOnly; SameSite=Strict; Path=/"
    return Answer(HTTPStatus.SEE_OTHER, b"", HTML_TYPE, (("Location", "/"), ("Set-Cookie", cookie)))


def _board(served: Served, query: Mapping[str, list[str]]) -> Answer:
    """The board's page, shipped with the package."""
    del served, query
    page = files("the_loop.api").joinpath("board", "index.html")
    try:
        body = page.read_bytes()
    except OSError:
        return refusal(HTTPStatus.NOT_FOUND, "api", "this installation holds no board page")
    return Answer(HTTPStatus.OK, body, HTML_TYPE)


def _json_file(path: object) -> object:
    data = read_bytes(str(path))
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


_ROUTES: dict[str, Callable[[Served, Mapping[str, list[str]]], Answer | Stream]] = {
    "/": _board,
    "/login": _login,
    "/api/v1/health": _health,
    "/api/v1/sessions": _sessions,
    "/api/v1/events": _events,
    "/api/v1/events/stream": _event_stream,
    WORK_ITEMS: lambda served, query: work_items(served.views, query),
    "/api/v1/attention": lambda served, query: attention(served.views, query),
}
ROUTES = tuple(_ROUTES)

__all__ = ["EVENT_FILTERS", "ROUTES", "Served", "route"]
