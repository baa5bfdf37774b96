"""Route a ref to the work item that owns it and the session endpoint that handles it.

The owner: the session record whose map holds the ref (this machine), else the
portable record whose ``pullRequests`` map holds it (travels), else the ref itself.
The ``sessionPerPr`` policy: the owner's repository file in the checkout its session
record names, else the retired portable ``graph`` section, else the default given.
Reads only; never asks a provider, never writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.errors import TheLoopError, or_ignore_warnings
from the_loop.portable.store import GRAPH, WorkItemStore
from the_loop.ref import WorkItemRef, as_ref
from the_loop.repofile.file import (
    SESSION_PER_PR,
    FrozenChoices,
    WorkItemStateFile,
    graph_section_choices,
)
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

NEVER, CROSS_REPOSITORY, ALWAYS = SESSION_PER_PR
#: Where an owner was found.
OWNER_FROM_REGISTRY = "registry"
OWNER_FROM_PORTABLE = "portable"
OWNER_IS_ITSELF = "itself"
#: Where the ``sessionPerPr`` policy came from.
POLICY_FROM_REPOSITORY_FILE = "repository-file"
POLICY_FROM_GRAPH_SECTION = "graph-section"
POLICY_FROM_DEFAULT = "default"


@dataclass(frozen=True)
class Route:
    """Where an event for ``ref`` goes: its owner, the policy applied, the endpoint (if any).

    ``endpoint`` is None when this machine holds no session record for the owner (e.g.
    right after a hand-off): the owner is still known, and a start spawns a session for
    it. A closed endpoint is returned as the registry's ``session_for`` returns it.
    """

    ref: WorkItemRef
    owner: WorkItemRef
    owner_source: str
    policy: str
    policy_source: str
    endpoint: Session | None

    @property
    def is_pull_request(self) -> bool:
        return self.ref != self.owner

    @property
    def own_endpoint(self) -> bool:
        """True when the endpoint is the ref's own session rather than its owner's."""
        return self.endpoint is not None and self.endpoint.work_item == self.ref

    def to_dict(self) -> dict[str, Any]:
        endpoint = self.endpoint
        return {
            "ref": self.ref.ref,
            "owner": self.owner.ref,
            "ownerSource": self.owner_source,
            "sessionPerPr": self.policy,
            "policySource": self.policy_source,
            "endpoint": None if endpoint is None else endpoint.ref,
            "tmuxTarget": None if endpoint is None else endpoint.tmux_target,
            "harnessSessionId": None if endpoint is None else endpoint.harness_session_id,
            "status": None if endpoint is None else endpoint.status,
        }


class Router:
    """Resolves owners, policies and endpoints from the registry and the portable store."""

    def __init__(
        self,
        *,
        registry: SessionRegistry,
        store: WorkItemStore,
        default_session_per_pr: str = NEVER,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        if default_session_per_pr not in SESSION_PER_PR:
            raise ValueError(
                f"invalid sessionPerPr {default_session_per_pr!r}: "
                f"expected one of {', '.join(SESSION_PER_PR)}"
            )
        self.registry = registry
        self.store = store
        self.default_session_per_pr = default_session_per_pr
        self._warn = or_ignore_warnings(on_warning)

    def owner_of(self, ref: WorkItemRef | str) -> tuple[WorkItemRef, str]:
        """The work item owning ``ref`` and where that was found (``registry``, ``portable``
        or ``itself``)."""
        item = as_ref(ref)
        record = self.registry.record_owning(item)
        if record is not None:
            return record.work_item, OWNER_FROM_REGISTRY
        owner = self.store.owner_of(item)
        if owner is not None:
            return WorkItemRef.parse(owner), OWNER_FROM_PORTABLE
        return item, OWNER_IS_ITSELF

    def policy_for(self, owner: WorkItemRef | str) -> tuple[str, str]:
        """``owner``'s ``sessionPerPr`` and where it came from (``repository-file``,
        ``graph-section`` or ``default``)."""
        item = as_ref(owner)
        from_file = self._repository_file_policy(item)
        if from_file:
            return from_file, POLICY_FROM_REPOSITORY_FILE
        graph = self.store.section(item, GRAPH)
        from_graph = graph_section_choices(graph).session_per_pr
        if from_graph:
            return from_graph, POLICY_FROM_GRAPH_SECTION
        return self.default_session_per_pr, POLICY_FROM_DEFAULT

    def route(self, ref: WorkItemRef | str) -> Route:
        """Where an event for ``ref`` goes (see :class:`Route`)."""
        item = as_ref(ref)
        owner, owner_source = self.owner_of(item)
        policy, policy_source = self.policy_for(owner)
        per_pr = policy == ALWAYS or (
            policy == CROSS_REPOSITORY and not same_repository(item, owner)
        )
        endpoint = self.registry.session_for(item, session_per_pr=per_pr)
        if endpoint is None and owner != item:
            # Owned through the portable map only (e.g. after a hand-off): the owner's own.
            endpoint = self.registry.find_by_work_item(owner, include_closed=True)
        return Route(item, owner, owner_source, policy, policy_source, endpoint)

    def _repository_file_policy(self, owner: WorkItemRef) -> str:
        record = self.registry.find_by_work_item(owner, include_closed=True)
        if record is None or not record.cwd:
            return ""
        try:
            choices: FrozenChoices | None = WorkItemStateFile(
                Path(record.cwd), owner, on_warning=self._warn
            ).frozen_choices()
        except (TheLoopError, OSError, ValueError) as error:
            self._warn(f"{owner.ref}: ignoring the work item state file: {error}")
            return ""
        return choices.session_per_pr if choices is not None else ""


def same_repository(one: WorkItemRef, other: WorkItemRef) -> bool:
    """Whether two refs name the same repository (host and names compared case-insensitively)."""

    def key(ref: WorkItemRef) -> tuple[str, str, str, str]:
        return (ref.provider, ref.effective_host.lower(), ref.owner.lower(), ref.repo.lower())

    return key(one) == key(other)
