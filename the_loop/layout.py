"""Where the-loop's generated state lives: the state root and its declared paths.

``GENERATED_PATHS`` declares every path the CLI writes under the state root; tests
keep it equal to what the writers produce and to ``docs/cli/state.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.config.file import Config

DEFAULT_STATE_ROOT = ".the-loop"
PORTABLE_DIR = "portable"
LOCAL_DIR = "local"
LOCKS_DIR = "locks"
EVENT_LOG = "logs/events.jsonl"
CRASH_LOG = "logs/crash.log"
WEBHOOK_PIDFILE = "gh-webhook.pid"
POLL_PIDFILE = "poll.pid"
#: The daemons' locks under ``locks/``: each held with ``flock`` for its daemon's whole
#: life (the exclusion), its pid beside it in ``<name>.pid``.
DAEMON_LOCKS_DIR = "daemons"
POLL_LOCK = "poll.lock"
WEBHOOK_LOCK = "webhook.lock"
SERVE_LOCK = "serve.lock"
ETAG_CACHE_FILE = "poll-etags.json"
WATCHED_FILE = "poll-watched.json"
LEGACY_DIR = "sessions"
#: Where ``the-loop init`` points ``routing.workspace.root``: the agents' checkouts.
WORKSPACES_DIR = "workspaces"
GITIGNORE_NAME = ".gitignore"

#: ``<root>/.gitignore`` as ``the-loop init`` writes it. An allow-list: whatever else
#: appears under the root (a renamed pidfile, a new cache) never reaches a commit.
STATE_ROOT_GITIGNORE = f"""\
# Written by `the-loop init`. Only what travels is tracked: this file, the config
# and {PORTABLE_DIR}/. Everything else under the state root is this machine's: {LOCAL_DIR}/,
# logs/, {LOCKS_DIR}/, the pidfiles, {WORKSPACES_DIR}/ (the agents' checkouts), the legacy
# {LEGACY_DIR}/.
/*
!/{GITIGNORE_NAME}
!/cli-config.yaml
!/{PORTABLE_DIR}/
/{PORTABLE_DIR}/.*.tmp
"""


@dataclass(frozen=True)
class StateLayout:
    """The paths of one state root, with the per-invocation overrides applied.

    ``local_dir``, ``portable_dir`` and ``event_log`` default to their places
    under ``root``; an overridden directory keeps its locks beside it
    (``<dir>.locks``) so two roots never share lock files by accident.
    """

    root: Path
    local_override: Path | None = None
    portable_override: Path | None = None
    event_log_override: Path | None = None
    pidfile_name: str = WEBHOOK_PIDFILE
    poll_pidfile_name: str = POLL_PIDFILE

    @property
    def portable_dir(self) -> Path:
        return self.portable_override or self.root / PORTABLE_DIR

    @property
    def portable_index(self) -> Path:
        return self.portable_dir / "index.json"

    @property
    def local_dir(self) -> Path:
        return self.local_override or self.root / LOCAL_DIR

    @property
    def event_log(self) -> Path:
        return self.event_log_override or self.root / EVENT_LOG

    @property
    def crash_log(self) -> Path:
        return self.root / CRASH_LOG

    @property
    def pidfile(self) -> Path:
        return self.root / self.pidfile_name

    @property
    def poll_pidfile(self) -> Path:
        return self.root / self.poll_pidfile_name

    @property
    def locks_dir(self) -> Path:
        return self.root / LOCKS_DIR

    @property
    def poll_lock(self) -> Path:
        """The poller's exclusion: ``locks/daemons/poll.lock``, whatever ``poll.pidfile`` says."""
        return self.locks_dir / DAEMON_LOCKS_DIR / POLL_LOCK

    @property
    def webhook_lock(self) -> Path:
        """The webhook receiver's exclusion: ``locks/daemons/webhook.lock``."""
        return self.locks_dir / DAEMON_LOCKS_DIR / WEBHOOK_LOCK

    @property
    def serve_lock(self) -> Path:
        """The API server's exclusion: ``locks/daemons/serve.lock``."""
        return self.locks_dir / DAEMON_LOCKS_DIR / SERVE_LOCK

    @property
    def api_token(self) -> Path:
        """The local API's token: ``local/api-token`` (mode 0600)."""
        return self.local_dir / "api-token"

    @property
    def serve_pidfile(self) -> Path:
        """The API server's pidfile: ``local/serve.pid`` (its exclusion is its lock)."""
        return self.local_dir / "serve.pid"

    @property
    def local_locks_dir(self) -> Path:
        if self.local_override is not None:
            return _beside(self.local_override)
        return self.locks_dir / LOCAL_DIR

    @property
    def portable_locks_dir(self) -> Path:
        if self.portable_override is not None:
            return _beside(self.portable_override)
        return self.locks_dir / PORTABLE_DIR

    def with_overrides(
        self, *, local_dir: Path | None = None, portable_dir: Path | None = None
    ) -> StateLayout:
        """A copy with the ``--registry-dir`` / ``--portable-dir`` overrides applied."""
        return StateLayout(
            root=self.root,
            local_override=local_dir or self.local_override,
            portable_override=portable_dir or self.portable_override,
            event_log_override=self.event_log_override,
            pidfile_name=self.pidfile_name,
            poll_pidfile_name=self.poll_pidfile_name,
        )


def _beside(directory: Path) -> Path:
    return directory.with_name(directory.name + ".locks")


LEGACY_POLL_STATE_NAME = "poll-state.json"


@dataclass(frozen=True)
class LegacyLayout:
    """The read-only tree older releases wrote: ``<root>/sessions/``, and before that
    ``<root>/poll-state.json``."""

    root: Path

    @property
    def sessions_dir(self) -> Path:
        return self.root / LEGACY_DIR

    @property
    def control_dir(self) -> Path:
        return self.sessions_dir / "control"

    @property
    def poll_state(self) -> Path:
        return self.sessions_dir / LEGACY_POLL_STATE_NAME

    @property
    def older_poll_state(self) -> Path:
        """``<root>/poll-state.json``: poll state before it moved under ``sessions/``."""
        return self.root / LEGACY_POLL_STATE_NAME

    @property
    def poll_states(self) -> tuple[Path, Path]:
        """Both legacy poll-state files, the one that wins for an item first."""
        return (self.poll_state, self.older_poll_state)


#: The config key that lets the-loop follow its own directories when they are links.
FOLLOW_LINKS_KEY = "state.followLinkedDirectories"


def linked_directories(layout: StateLayout) -> list[Path]:
    """The directories the-loop derives under ``layout.root`` that are symbolic links.

    Checked: ``portable/``, ``local/``, ``locks/``, ``logs/`` and the legacy
    ``sessions/`` with its ``control/``. A directory given explicitly (a flag,
    ``routing.registryDir``, ``eventLog.path``) is the operator's choice and not
    checked; nor is the root.
    """
    derived = [
        layout.root / LOCKS_DIR,
        layout.root / LEGACY_DIR,
        layout.root / LEGACY_DIR / "control",
        *([] if layout.portable_override else [layout.root / PORTABLE_DIR]),
        *([] if layout.local_override else [layout.root / LOCAL_DIR]),
        *([] if layout.event_log_override else [(layout.root / EVENT_LOG).parent]),
    ]
    return [directory for directory in derived if os.path.islink(directory)]


def legacy_layout(layout: StateLayout) -> LegacyLayout:
    """The legacy tree that belongs to ``layout``'s state root."""
    return LegacyLayout(layout.root)


def layout_from_config(config: Config, root: Path | None = None) -> StateLayout:
    """Build the layout from ``root`` (default: ``state.root``, else :data:`DEFAULT_STATE_ROOT`),
    ``routing.registryDir``, ``eventLog.path``. The CLI passes the root
    :func:`the_loop.config.state_root.choose_state_root` chose."""
    if root is None:
        root = Path(config.get_str("state.root", DEFAULT_STATE_ROOT) or DEFAULT_STATE_ROOT)
    registry_dir = config.get_str("routing.registryDir", "")
    event_log = config.get_str("eventLog.path", "")
    return StateLayout(
        root=root,
        local_override=Path(registry_dir) if registry_dir else None,
        event_log_override=Path(event_log) if event_log else None,
        pidfile_name=config.get_str("webhook.pidfile") or WEBHOOK_PIDFILE,
        poll_pidfile_name=config.get_str("poll.pidfile") or POLL_PIDFILE,
    )


@dataclass(frozen=True)
class GeneratedPath:
    """One path the CLI generates: its name, where (relative to the root), whether it travels."""

    name: str
    where: str
    portable: bool
    holds: str
    why: str


GENERATED_PATHS: tuple[GeneratedPath, ...] = (
    GeneratedPath(
        "work-item record",
        "portable/<slug>.json",
        True,
        "one record per work item: control, poll, pullRequests, channels sections",
        "what people decided and what was seen travels with the operator",
    ),
    GeneratedPath(
        "work-item index",
        "portable/index.json",
        True,
        "derived listing of the records beside it",
        "a reviewable summary of the portable records; read only to update its own entries",
    ),
    GeneratedPath(
        "session record",
        "local/<slug>.json",
        False,
        "that item's session handles on this machine",
        "tmux targets, checkouts and harness ids only make sense on this machine",
    ),
    GeneratedPath(
        "agent hook log",
        "local/agents/<slug>.jsonl",
        False,
        "what the agent's hooks saw, one line each (event, tool, detail, notices, the start of "
        "each prompt), appended by the hook entry; begun anew at each new spawn of the item "
        "(a restart goes on appending)",
        "what an agent on this machine is doing: read from its end to tell idle from blocked",
    ),
    GeneratedPath(
        "agent progress",
        "local/agents/<slug>.progress.json",
        False,
        "when a sign of the agent's progress last changed, and the signs then: the hook "
        "log's and the transcript's sizes, a digest of its screen without its busy line",
        "a working agent with no progress for routing.stallMinutes is said stalled, across "
        "the daemon's restarts",
    ),
    GeneratedPath(
        "spend meter place",
        "local/agents/<slug>.meter.json",
        False,
        "how far the item's agent's transcripts and hook log were metered (offsets, the "
        "latest messages counted, the running totals) and what its last session.spend said",
        "each metering reads only what was appended since; the figures go to the item's "
        "poll ledger, which travels",
    ),
    GeneratedPath(
        "ETag cache",
        "local/poll-etags.json",
        False,
        "the ETag, next page and (when kept) body of each GitHub page read, per token fingerprint",
        "lets an unchanged page cost a free 304; a token's fingerprint is a hash, never the token",
    ),
    GeneratedPath(
        "poll watched listing",
        "local/poll-watched.json",
        False,
        "per repository: the open items carrying the labels (number, labels, whether a PR), "
        "the items of live sessions, and the items cursor (the newest updated_at GitHub returned)",
        "an idle cycle asks only what changed since the cursor, so its cost does not grow "
        "with the number of watched items",
    ),
    GeneratedPath(
        "poll cursors",
        "local/poll-cursors.json",
        False,
        "each repository's comment cursor (and reviews cursor), the new name of a repository "
        "GitHub renamed (every request names it so), the ids of comments the-loop posted, and "
        "the updated_at each watched pull request's reviews were last read at",
        "clocks and cursors stay machine-local, so an idle cycle writes nothing under portable/",
    ),
    GeneratedPath(
        "poll heads",
        "local/poll-heads.json",
        False,
        "per watched pull request: its head SHA, whether it is open, what its check runs and "
        "its combined status said when last read, and which of the two an idle head asks next",
        "an idle watched head costs one conditional request a cycle, and a new head is known "
        "from the listing of open pull requests without asking",
    ),
    GeneratedPath(
        "armed cache",
        "local/poll-armed.json",
        False,
        "the records whose index entry lists control, each with its file's stat and whether "
        "it is armed",
        "lets the poller find armed items by re-reading only the records that changed",
    ),
    GeneratedPath(
        "permission answers",
        "local/poll-permissions.json",
        False,
        "per repository and login: GitHub's word for its access (admin, write, read, none) "
        "and when it was asked",
        "a login that commands is asked about once an hour, not at every command",
    ),
    GeneratedPath(
        "poll status",
        "local/poll-status.json",
        False,
        "the report of the poller's last cycle",
        "what the-loop poll status shows",
    ),
    GeneratedPath(
        "webhook inbox",
        "local/webhook-inbox/<sequence>.jsonl",
        False,
        "the deliveries the webhook receiver accepted, a line each, fsynced before their 202, "
        "until processed",
        "a push GitHub was told is taken is never lost to a crash or a restart",
    ),
    GeneratedPath(
        "webhook processed ids",
        "local/webhook-inbox/processed.json",
        False,
        "the ids of the deliveries processed, the last 10,000",
        "a delivery GitHub or a person re-sends is answered as a duplicate, not taken twice",
    ),
    GeneratedPath(
        "machine id",
        "local/machine.json",
        False,
        "this machine's stable id, 32 hex digits made once (its name is routing.machineName)",
        "the machines sharing a repository tell each other's claims on a ticket apart",
    ),
    GeneratedPath(
        "claim book",
        "local/claims.json",
        False,
        "the claims this machine has begun and not decided, who holds each item it lost, "
        "the machines seen claiming on each repository, and the login learned from a claim "
        "for a token GitHub refuses GET /user (by its one-way fingerprint, never the token)",
        "a claim a crash cut short is finished next cycle, and sessions list shows what "
        "other machines hold",
    ),
    GeneratedPath(
        "webhook status",
        "local/webhook-status.json",
        False,
        "the receiver's pid, address, counts since it started and last delivery's time",
        "what the-loop webhook status shows",
    ),
    GeneratedPath(
        "clone sources",
        "local/clone-sources.json",
        False,
        "this machine's local path to clone each repository from that init was given "
        "outside the project, read over routing.workspace.repositories",
        "a path on one machine means nothing on another: the config that travels names "
        "none, and each machine's operator sets its own here",
    ),
    GeneratedPath(
        "event log",
        "logs/events.jsonl",
        False,
        "the append-only JSONL event log",
        "the audit trail of every decision; never rewritten",
    ),
    GeneratedPath(
        "crash log",
        "logs/crash.log",
        False,
        "the traceback of every internal error (exit 3), appended",
        "a bug is reported in one line; the details wait here for a bug report",
    ),
    GeneratedPath(
        "webhook pidfile",
        "gh-webhook.pid",
        False,
        "the pid of a running webhook receiver, locked by it (not the exclusion: its lock is)",
        "older releases and other tools find the receiver here",
    ),
    GeneratedPath(
        "poller pidfile",
        "poll.pid",
        False,
        "the pid of a running poller, locked by it (not the exclusion: its lock is)",
        "older releases and other tools find the poller here",
    ),
    GeneratedPath(
        "webhook lock",
        "locks/daemons/webhook.lock",
        False,
        "an empty lock file the running webhook receiver holds with flock for its whole life",
        "one receiver per state root: a second is refused while it is held, whatever the "
        "pidfile says",
    ),
    GeneratedPath(
        "webhook lock pid",
        "locks/daemons/webhook.pid",
        False,
        "the pid of the receiver holding the lock beside it",
        "what webhook status and webhook stop name, and reset warns about",
    ),
    GeneratedPath(
        "poller lock",
        "locks/daemons/poll.lock",
        False,
        "an empty lock file the running poller (daemon or --once) holds with flock for its "
        "whole life",
        "one poller per state root: a second is refused while it is held, whatever poll.pid says",
    ),
    GeneratedPath(
        "poller lock pid",
        "locks/daemons/poll.pid",
        False,
        "the pid of the poller holding the lock beside it",
        "what poll status and poll stop name, and reset warns about",
    ),
    GeneratedPath(
        "serve lock",
        "locks/daemons/serve.lock",
        False,
        "an empty lock file the running API server holds with flock for its whole life",
        "one API server per state root: a second is refused while it is held",
    ),
    GeneratedPath(
        "serve lock pid",
        "locks/daemons/serve.pid",
        False,
        "the pid of the API server holding the lock beside it",
        "what serve status and serve stop name, and reset warns about",
    ),
    GeneratedPath(
        "serve pidfile",
        "local/serve.pid",
        False,
        "the pid of a running API server, locked by it (not the exclusion: its lock is)",
        "other tools find the server here",
    ),
    GeneratedPath(
        "serve status",
        "local/serve-status.json",
        False,
        "the API server's pid and address, when it started and stopped",
        "what the-loop serve status shows",
    ),
    GeneratedPath(
        "API token",
        "local/api-token",
        False,
        "the local API's bearer token, made once by the-loop serve, mode 0600",
        "only the operator reads the API; it never reaches an agent's environment",
    ),
    GeneratedPath(
        "lock files",
        "locks/<store>/<slug>.lock",
        False,
        "one empty lock file per record, held with flock",
        "serialises read-modify-write across processes",
    ),
    GeneratedPath(
        "index stamp",
        "locks/portable/index.stamp",
        False,
        "the stat of portable/ and of its index when the index last matched the records",
        "lets a write update one index entry instead of rereading every record",
    ),
    GeneratedPath(
        "spawn locks",
        "locks/local/spawn/<slug>.lock",
        False,
        "one empty lock file per work item started here, held with flock",
        "one start (or restart) of an item at a time on this machine",
    ),
)
