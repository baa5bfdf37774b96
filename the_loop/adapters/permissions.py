"""What GitHub says a login may do in a repository, asked once an hour: one
``GET /repos/{o}/{r}/collaborators/{login}/permission`` through the REST client, its
answer kept in ``local/poll-permissions.json`` (machine-local, locked, atomic).

The file, not the process, keeps the answers because a poller often is one process per
cycle (``poll --once`` from cron): an answer kept in memory would be asked again every
cycle. Only an answer is kept; a request that fails is asked again next time.
"""

from __future__ import annotations

import contextlib
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from the_loop.adapters.local_file import read_local_map
from the_loop.fsio import locked, write_json
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError
from the_loop.intake.people import login_key
from the_loop.layout import StateLayout
from the_loop.ref import WorkItemRef

PERMISSIONS_FILE = "poll-permissions.json"
FORMAT_VERSION = 1
#: How long an answer is believed: a login that loses access stops commanding within it.
KEEP_SECONDS = 3600.0
#: GitHub's answer when it knows no such user: no access, as good as an answer.
NO_SUCH_USER = 404


@dataclass
class RepositoryPermissions:
    """:data:`~the_loop.intake.ports.RepositoryPermission` over the REST client and one file."""

    client: GitHubClient
    path: Path
    lock_path: Path
    clock: Callable[[], float] = time.time
    #: The name a repository (``owner/repo``) is asked of GitHub by: the one GitHub gives
    #: it now, once known (a renamed repository costs no redirect); by default its own.
    asked_as: Callable[[str], str] = str

    @classmethod
    def for_layout(
        cls,
        client: GitHubClient,
        layout: StateLayout,
        asked_as: Callable[[str], str] = str,
    ) -> RepositoryPermissions:
        lock = layout.local_locks_dir / "poll-permissions.lock"
        return cls(client, layout.local_dir / PERMISSIONS_FILE, lock, asked_as=asked_as)

    def permission(self, repository: WorkItemRef, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` for ``login`` in the repository of
        ``repository``: the answer kept within the hour, else GitHub's (then kept).
        :class:`GitHubHTTPError` when GitHub could not say; :class:`TheLoopError` when
        the file is not a regular file."""
        key = _key(repository, login)
        now = self.clock()
        kept = _fresh(self._read().get(key), now)
        if kept is not None:
            return kept
        permission = self._ask(repository, login_key(login))
        with contextlib.suppress(OSError):  # an answer not kept is only asked again
            self._keep(key, permission, now)
        return permission

    def _ask(self, repository: WorkItemRef, login: str) -> str:
        owner, _, repo = self.asked_as(f"{repository.owner}/{repository.repo}").partition("/")
        owner, repo, user = (urllib.parse.quote(name, safe="") for name in (owner, repo, login))
        url = self.client.url_for(f"/repos/{owner}/{repo}/collaborators/{user}/permission")
        try:
            data = self.client.get_url(url, conditional=False).json()
        except GitHubHTTPError as error:
            if error.status == NO_SUCH_USER:
                return "none"
            raise
        permission = (
            cast(dict[str, Any], data).get("permission") if isinstance(data, dict) else None
        )
        if not isinstance(permission, str) or not permission.strip():
            raise GitHubHTTPError(
                f"GitHub's answer on @{login}'s access to {repository.owner}/{repository.repo} "
                "names no permission"
            )
        return permission.strip().lower()

    def _keep(self, key: str, permission: str, now: float) -> None:
        """Add the answer, under the lock, to those on disk still fresh (the rest go)."""
        with locked(self.lock_path):
            answers = {k: v for k, v in self._read().items() if _fresh(v, now) is not None}
            answers[key] = {"permission": permission, "checkedAt": now}
            write_json(self.path, {"version": FORMAT_VERSION, "answers": answers})

    def _read(self) -> dict[str, Any]:
        return read_local_map(self.path, "answers")


def _fresh(entry: object, now: float) -> str | None:
    """The permission a kept ``entry`` holds, when it was asked within the hour before
    ``now`` (an answer from the future, a clock set back, is not believed)."""
    if not isinstance(entry, dict):
        return None
    fields = cast(dict[str, Any], entry)
    at, permission = fields.get("checkedAt"), fields.get("permission")
    if not isinstance(at, int | float) or isinstance(at, bool) or not 0 <= now - at < KEEP_SECONDS:
        return None
    return permission if isinstance(permission, str) and permission else None


def _key(repository: WorkItemRef, login: str) -> str:
    """``host/owner/repo/login``, compared as GitHub compares them: without regard to case."""
    repository_key = f"{repository.host}/{repository.owner}/{repository.repo}".casefold()
    return f"{repository_key}/{login_key(login)}"
