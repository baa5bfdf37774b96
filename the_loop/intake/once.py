"""A notice on the ticket said once, crash or not: kept in the item's ledger before it is
posted, and looked for by its nonce after a crash.

An episode (a block, a stall) is one ledger record under its key: ``comment`` (0 while
not yet said, -1 said with its id unknown), a ``nonce``, the ``body`` to post, and
``posting`` while a post may have reached GitHub unrecorded. The posted comment ends
with a tag naming the key and the nonce, so the next try finds it instead of posting a
second.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from the_loop.errors import TheLoopError
from the_loop.intake.ports import LiveSession
from the_loop.portable.poll import Ledger
from the_loop.ref import WorkItemRef

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView


def new_nonce() -> str:
    """A nonce that tells one notice from every other."""
    return secrets.token_hex(8)


def kept(intake: IntakeView, ref: WorkItemRef, key: str) -> dict[str, Any] | None:
    """The record kept under ``key`` in ``ref``'s ledger (None: none)."""
    value = intake.ports.ledger.value(ref, key)
    return dict(value) if isinstance(value, dict) else None  # pyright: ignore[reportUnknownArgumentType]


def keep(intake: IntakeView, ref: WorkItemRef, key: str, record: dict[str, Any] | None) -> None:
    """Write ``record`` under ``key`` in ``ref``'s ledger (None: remove it)."""

    def change(ledger: Ledger) -> None:
        if record is None:
            ledger.pop(key, None)
        else:
            ledger[key] = record

    intake.ports.ledger.change(ref, change)


def say_once(
    session: LiveSession, intake: IntakeView, key: str, record: dict[str, Any], what: str
) -> int | None:
    """Post the notice of the episode ``record`` (kept under ``key``) once: one a crash
    left unrecorded is looked for by its nonce first, never posted twice. Its id is kept
    (0 while not yet said); returned when GitHub gave one. ``what`` names the notice in
    a warning."""
    ports, ref = intake.ports, session.ref
    tag = f"<!-- the-loop:{key} nonce={record.get('nonce', '')} -->"
    found = None
    if record.get("posting"):
        try:
            found = next((c.id for c in ports.github.thread(ref) if tag in c.body), None)
        except TheLoopError as error:
            ports.warn(f"{ref.ref}: could not look for the {what}: {error}")
            return None
    if found is None:
        keep(intake, ref, key, {**record, "posting": True})
        posted, comment = _post(intake, session, f"{record.get('body', '')}\n{tag}", what)
        if not posted:
            return None  # said next round
        ports.checkpoint(f"{key}-posted")  # a crash here: found by its nonce next time
        found = comment if comment is not None else -1  # -1: said, its id unknown
    keep(intake, ref, key, {**record, "comment": found, "posting": False, "body": ""})
    return found if found > 0 else None


def edit_notice(intake: IntakeView, ref: WorkItemRef, record: dict[str, Any], body: str) -> None:
    """Rewrite the episode's notice, when it was said and its id is known."""
    ports = intake.ports
    comment = record.get("comment")
    if not (isinstance(comment, int) and comment > 0 and ports.edit_comment is not None):
        return
    try:
        ports.edit_comment(ref, comment, body)
    except TheLoopError as error:
        ports.warn(f"{ref.ref}: could not edit the notice {comment}: {error}")


def _post(
    intake: IntakeView, session: LiveSession, body: str, what: str
) -> tuple[bool, int | None]:
    """Post ``body``: whether GitHub took it, and the new comment's id when it said."""
    ports = intake.ports
    try:
        posted = ports.github.post_comment(session.ref, body)
    except TheLoopError as error:
        ports.warn(f"{session.ref.ref}: could not post the {what}: {error}")
        return False, None
    if posted is not None:
        ports.posted.remember_posted(posted)
    return True, posted
