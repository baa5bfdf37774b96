"""Channel state: which conversation carries a work item, and how far this machine read it.

The binding is a workspace entity that travels: the portable record's
``channels.<channel>`` section entry (``{channel, thread, opened, origin}``). The read
cursor is a machine handle: the local session record's ``channels.<channel>.cursors``.
A cleanup forgets the local record (cursors with it) and keeps the binding; a reset
clears both.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from the_loop.errors import or_ignore_warnings
from the_loop.eventlog.log import utc_timestamp
from the_loop.portable.store import CHANNELS, WorkItemStore
from the_loop.ref import WorkItemRef, as_ref
from the_loop.sessions.registry import SessionRegistry

Binding = dict[str, Any]
#: (channel type, conversation, thread) -> the work item bound to it.
_Key = tuple[str, str, str]


class ChannelError(ValueError):
    """A binding that cannot be made: bad values, or a conversation another item holds."""


class ChannelState:
    """Bindings in the portable store, cursors in the session registry; nothing else."""

    def __init__(
        self,
        store: WorkItemStore,
        registry: SessionRegistry,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self._warn = or_ignore_warnings(on_warning)

    # -- the binding (portable) ----------------------------------------------------

    def bind(
        self,
        ref: WorkItemRef | str,
        channel: str,
        *,
        conversation: str,
        thread: str = "",
        origin: str = "start",
        now: float | None = None,
    ) -> Binding:
        """Bind ``ref`` to ``conversation`` (and ``thread``) of ``channel``; the binding.

        Rebinding the same conversation and thread keeps ``opened``. Raises
        :class:`ChannelError` for an empty value or when another work item is already
        bound to that conversation and thread (checked and written under the store's
        ``channels`` lock, so two items never claim one thread); ``OSError`` propagates.
        """
        item = as_ref(ref)
        _require_text(channel=channel, conversation=conversation, origin=origin)
        if not isinstance(thread, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ChannelError("thread must be a string")
        with self.store.exclusive("channels"):
            holder = self.work_item_for(channel, conversation, thread)
            if holder is not None and holder != item:
                raise ChannelError(
                    f"{channel} conversation {conversation} thread {thread or '-'} already "
                    f"carries {holder.ref}; reset that work item or pick another thread"
                )
            return self._write_binding(item, channel, conversation, thread, origin, now)

    def _write_binding(
        self,
        item: WorkItemRef,
        channel: str,
        conversation: str,
        thread: str,
        origin: str,
        now: float | None,
    ) -> Binding:
        written: list[Binding] = []

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            section = dict(current or {})
            previous = _binding(section.get(channel))
            same = previous is not None and (previous["channel"], previous["thread"]) == (
                conversation,
                thread,
            )
            opened = previous["opened"] if same and previous else utc_timestamp(now)
            binding = {
                "channel": conversation,
                "thread": thread,
                "opened": opened,
                "origin": origin,
            }
            section[channel] = binding
            written.append(binding)
            return section

        self.store.update_section(item, CHANNELS, change)
        return dict(written[-1])

    def binding(self, ref: WorkItemRef | str, channel: str) -> Binding | None:
        """``ref``'s binding for ``channel`` (a fresh dict), or None."""
        section = self.store.section(as_ref(ref), CHANNELS) or {}
        found = _binding(section.get(channel))
        return None if found is None else dict(found)

    def work_item_for(
        self, channel: str, conversation: str, thread: str = ""
    ) -> WorkItemRef | None:
        """The work item bound to ``conversation``/``thread`` of ``channel``, or None.

        Built in memory from the portable records on each call; reads only.
        """
        return self.bindings().get((channel, conversation, thread))

    def bindings(self) -> dict[_Key, WorkItemRef]:
        """Every binding of every portable record: (channel, conversation, thread) -> item.

        When two records claim one conversation and thread (copied by hand), the
        first ref in sort order wins and the others are warned about.
        """
        found: dict[_Key, WorkItemRef] = {}
        for text in sorted(self.store.refs()):
            item = WorkItemRef.parse(text)
            section = self.store.read(item).get(CHANNELS)
            if not isinstance(section, dict):
                continue
            for channel, value in cast(dict[str, Any], section).items():
                binding = _binding(value)
                if binding is None:
                    continue
                key = (channel, binding["channel"], binding["thread"])
                if key in found:
                    self._warn(f"{item.ref}: {channel} {key[1]} is already bound to {found[key]}")
                    continue
                found[key] = item
        return found

    # -- the cursor (local) --------------------------------------------------------

    def cursor(self, ref: WorkItemRef | str, channel: str, thread: str = "") -> str:
        """The last reply of ``thread`` this machine mirrored; ``""`` when none."""
        return self.registry.channel_cursors(as_ref(ref), channel).get(thread, "")

    def advance(self, ref: WorkItemRef | str, channel: str, thread: str, cursor: str) -> bool:
        """Move ``thread``'s cursor to ``cursor``; True when it was written.

        False when ``ref`` has no session record on this machine, or when ``cursor`` is
        not after the current one (both compared as numbers when both are; Slack
        timestamps are). ``OSError`` propagates.
        """
        item = as_ref(ref)
        _require_text(channel=channel, cursor=cursor)
        return self.registry.advance_channel_cursor(
            item,
            channel,
            thread,
            cursor,
            accept=lambda current: not current or _after(cursor, current),
        )


def _require_text(**values: str) -> None:
    for name, value in values.items():
        if not isinstance(value, str) or not value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ChannelError(f"{name} must be a non-empty string, not {value!r}")


def _binding(value: object) -> Binding | None:
    """A stored binding with ``channel`` and ``thread`` as strings, or None."""
    if not isinstance(value, dict):
        return None
    entry = cast(dict[str, Any], value)
    conversation, thread = entry.get("channel"), entry.get("thread", "")
    if not isinstance(conversation, str) or not conversation or not isinstance(thread, str):
        return None
    return {
        "channel": conversation,
        "thread": thread,
        "opened": entry.get("opened", ""),
        "origin": entry.get("origin", ""),
    }


def _after(new: str, current: str) -> bool:
    """Whether cursor ``new`` is after ``current``: as numbers when both are, else as text."""
    try:
        return Decimal(new) > Decimal(current)
    except InvalidOperation:
        return new > current
