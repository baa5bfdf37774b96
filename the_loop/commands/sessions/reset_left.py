"""What a reset leaves in tmux: the transcripts, which a reset never ends.

The tmux names come from the records before the reset deletes them; tmux is asked
once, after it (or, on a dry run, instead of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from the_loop.cleanup import tmux_names
from the_loop.dispatch.tmux import kept_transcripts_among
from the_loop.errors import TheLoopError

if TYPE_CHECKING:
    from the_loop.dispatch.factory import Adapters
    from the_loop.ref import WorkItemRef
    from the_loop.sessions.registry import SessionRegistry

#: Per ref, the tmux session names a reset leaves (or would leave).
Left = dict[str, tuple[str, ...]]


def tmux_targets(registry: SessionRegistry, items: Sequence[WorkItemRef]) -> Left:
    """Per item, the tmux sessions its record names (each PR endpoint's, then its own)."""
    return {ref.ref: tuple(tmux_names(registry.load(ref)[1])) for ref in items}


def left_in_tmux(adapters: Adapters, targets: Left, *, dry_run: bool, keep_live: bool) -> Left:
    """Per item, its sessions that are still there (a dry run: that a close would keep,
    ``keep_live`` saying whether a running one is kept) and the transcripts kept of them
    under new names; an item that leaves nothing is not named."""
    if not any(targets.values()):
        return {}
    try:
        states = adapters.tmux.session_states() or {}
    except (TheLoopError, ValueError):
        return {}
    left: Left = {}
    for ref, names in targets.items():
        there = [
            name
            for name in names
            if name in states and (not dry_run or keep_live or states[name] == "exited")
        ]
        there += [kept for name in names for kept in kept_transcripts_among(name, states)]
        if there:
            left[ref] = tuple(dict.fromkeys(there))
    return left
