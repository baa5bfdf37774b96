"""What ``the-loop check`` reports of a work item: its lane as the repository file records
it, read from the file alone (no GitHub, no git)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from the_loop.errors import TheLoopError
from the_loop.spec.checkouts import SpecCheckout
from the_loop.spec.lane import Lane, read_lane


@dataclass(frozen=True)
class LaneStatus:
    """One work item's lane, or the sentence that says why it could not be read."""

    work_item: str
    checkout: str
    file: str
    lane: Lane | None
    problem: str = ""

    @property
    def current_node(self) -> Any:
        return None if self.lane is None else self.lane.current

    @property
    def waiting(self) -> tuple[str, ...]:
        """The phases whose gate waits for a person."""
        return () if self.lane is None else self.lane.waiting

    def to_dict(self) -> dict[str, Any]:
        """``{"workItem", "checkout", "file", "currentNode", "nodes", "waiting", "problem"}``."""
        nodes = [] if self.lane is None else [node.to_dict() for node in self.lane.nodes]
        return {
            "workItem": self.work_item,
            "checkout": self.checkout,
            "file": self.file,
            "currentNode": self.current_node,
            "nodes": nodes,
            "waiting": list(self.waiting),
            "problem": self.problem or None,
        }


def lane_status(found: SpecCheckout) -> LaneStatus:
    """Read ``found``'s repository file and its lane; a file or value that cannot be read
    is the item's ``problem``, never an exception."""
    where = {
        "work_item": found.session.ref,
        "checkout": found.session.cwd,
        "file": str(found.state_file.path),
    }
    try:
        lane = read_lane(found.state_file.load())
    except TheLoopError as error:
        return LaneStatus(**where, lane=None, problem=str(error))
    except OSError as error:
        reason = error.strerror or str(error)
        return LaneStatus(**where, lane=None, problem=f"{found.state_file.path}: {reason}")
    return LaneStatus(**where, lane=lane)
