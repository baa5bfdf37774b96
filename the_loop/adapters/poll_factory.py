"""Build a poll cycle's collaborators from the config, the open stores and a dispatcher:
the intake's (one :class:`~the_loop.intake.ports.IntakePorts`) and the reader's (one
:class:`~the_loop.polling.reads.ReaderPorts`), over one REST client."""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from the_loop.adapters.actions import Actions, live_session, live_sessions
from the_loop.adapters.agent_watch import AgentWatch
from the_loop.adapters.claim_file import CLAIMS_FILE, FileClaimBook
from the_loop.adapters.cursors import CURSOR_FILE, FileCursors
from the_loop.adapters.github_reads import ClientReads, IntakeGitHub
from the_loop.adapters.heads_file import FileHeads
from the_loop.adapters.linking import LINKED, link_pull_request
from the_loop.adapters.permissions import RepositoryPermissions
from the_loop.adapters.reactions import Reactions
from the_loop.adapters.spec_file import SpecFiles
from the_loop.adapters.spend_meter import SpendMeter
from the_loop.adapters.stores import Stores
from the_loop.adapters.watch_file import FileWatchCache
from the_loop.config.file import Config
from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.dispatch.settings import AgentEnvironment
from the_loop.fsio import locked
from the_loop.github.backoff import PostSpacer
from the_loop.github.client import GitHubClient
from the_loop.github.etags import FileEtagCache, token_fingerprint
from the_loop.github.poster import token_help
from the_loop.intake.budget_rule import KINDS, Limits, limits_from
from the_loop.intake.claim_ports import ClaimPorts, Machine
from the_loop.intake.comments import CommentPolicy, DeliverFrom
from the_loop.intake.events import IssueComment, comments_from_json
from the_loop.intake.keywords import KeywordGrammar
from the_loop.intake.people import AuthorizedUsers
from the_loop.intake.ports import (
    Acknowledge,
    GitHubPort,
    IntakePorts,
    IntakeSettings,
    PostedComments,
    RepositoryPermission,
)
from the_loop.polling.reads import Cursors, PollSettings, ReaderPorts, renamed_key
from the_loop.portable.armed import CACHE_FILE as ARMED_CACHE
from the_loop.portable.armed import ArmedRefs
from the_loop.portable.poll import PollState
from the_loop.ref import WorkItemRef
from the_loop.sessions.machine import MACHINE_FILE, machine_id

STATUS_FILE = "poll-status.json"
DEFAULT_INTERVAL = 60.0
DEFAULT_API_URL = "https://api.github.com"


def poll_settings(config: Config) -> PollSettings:
    """``polling.*``, ``routing.authorizedUsers``, ``routing.control.keywordPrefix``, each
    with its one default."""
    deliver = config.get_str("polling.deliverFrom", "authorized")
    deliver_from: DeliverFrom = "anyone" if deliver == "anyone" else "authorized"
    prefix = config.get_str("routing.control.keywordPrefix", "the-loop") or "the-loop"
    policy = CommentPolicy(
        AuthorizedUsers.of(config.get_str_list("routing.authorizedUsers")),
        KeywordGrammar(prefix=prefix),
        deliver_from,
    )
    intake = IntakeSettings(
        labels=tuple(config.get_str_list("polling.labels")),
        max_retries=int(config.get_float("polling.maxRetries", 3)),
        max_deliveries_per_hour=int(config.get_float("polling.maxDeliveriesPerHour", 30)),
        policy=policy,
        prompt_template=config.get_str("routing.prompt", ""),
        require_write_access=config.get_bool("routing.requireWriteAccess"),
        max_failing_pushes=max(int(config.get_float("polling.ci.maxFailingPushes")), 1),
        trust_checkouts=config.get_bool("routing.harnesses.claude.trustCheckouts"),
        resume_after_limit=config.get_bool("routing.resumeAfterLimit"),
        stall_minutes=max(config.get_float("routing.stallMinutes"), 0.0),
        budget=budget_limits(config),
        budget_warn_at=config.get_float("routing.budget.warnAt"),
    )
    return PollSettings(tuple(config.get_str_list("polling.repositories")), intake)


def budget_limits(config: Config) -> Limits:
    """``routing.budget``: each limit every work item has by default (0: none)."""
    return limits_from({kind: config.get_float(f"routing.budget.{kind}") for kind in KINDS})


def interval_seconds(config: Config) -> float:
    return config.get_float("polling.intervalSeconds", DEFAULT_INTERVAL)


def reconcile_seconds(config: Config) -> float:
    """``polling.reconcileSeconds``: the cycle beside a webhook receiver that counts."""
    return max(config.get_float("polling.reconcileSeconds"), 1.0)


def acknowledge_port(
    config: Config, client: GitHubClient, asked_as: Callable[[str], str] = str
) -> Acknowledge | None:
    """The 👀 on each delivery over ``client`` (a repository asked by ``asked_as``), or
    None when ``integrations.github.acknowledge`` is off."""
    if not config.get_bool("integrations.github.acknowledge"):
        return None
    return Reactions(client, asked_as).acknowledge


def request_deadline_seconds(config: Config) -> float:
    """``polling.requestDeadlineSeconds``: the longest one request may take, in all."""
    return config.get_float("polling.requestDeadlineSeconds")


def intake_ports(
    stores: Stores,
    actions: Actions,
    *,
    github: GitHubPort,
    posted: PostedComments,
    armed: Callable[[], Sequence[WorkItemRef]],
    warn: Callable[[str], None],
    checkpoint: Callable[[str], None] = lambda _step: None,
    should_stop: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.time,
    permission: RepositoryPermission | None = None,
    acknowledge: Acknowledge | None = None,
) -> IntakePorts:
    """The intake's collaborators over the open stores and the dispatcher's ``actions``;
    any reader hands in its own GitHub, posted ids, armed refs, permission check and
    acknowledgement."""
    watch = AgentWatch.over(actions.dispatcher.tmux, stores.registry, clock)
    ledger = PollState(stores.store, registry=stores.registry)
    return IntakePorts(
        github=github,
        ledger=ledger,
        posted=posted,
        sessions=lambda: live_sessions(stores),
        session_of=partial(live_session, stores),
        armed=armed,
        control=actions.control,
        close=actions.close,
        close_gone=actions.close_gone,
        end_here=actions.end_here,
        end_endpoint=actions.end_endpoint,
        deliver=actions.deliver,
        pane_mark=actions.pane_mark,
        emit=stores.events.emit,
        clock=clock,
        warn=warn,
        checkpoint=checkpoint,
        should_stop=should_stop,
        permission=permission,
        link=partial(_link, stores, warn),
        acknowledge=acknowledge,
        agent=watch.session_state,
        answer=watch.answer,
        receipt=watch.receipt,
        submit=watch.submit,
        interrupt=watch.interrupt,
        meter=SpendMeter(
            stores.registry,
            ledger,
            dict(os.environ),
            clock=clock,
            warn=warn,
            emit=stores.events.emit,
        ).item_spend,
        restart=actions.restart,
        hold=partial(_hold, stores.layout.local_locks_dir / HOLDS_DIR),
        spec=SpecFiles(
            stores.registry,
            actions.dispatcher.workspace,
            warn,
            withheld=AgentEnvironment.from_config(actions.dispatcher.config, ()).secrets,
        ),
    )


#: Under ``local/locks/``: one lock per work item, held across a delivery or a closure
#: by whichever reader (the poller, the webhook receiver) does it.
HOLDS_DIR = "intake"


def _hold(directory: Path, ref: WorkItemRef) -> AbstractContextManager[None]:
    """The intake's ``hold``: an exclusive ``flock`` on the item's lock file (one name
    for every spelling of the ref: GitHub's names ignore case)."""
    return locked(directory / f"{ref.slug.casefold()}.lock")


def _link(stores: Stores, warn: Callable[[str], None], owner: WorkItemRef, pr: WorkItemRef) -> bool:
    """The intake's ``link``: as ``sessions link-pr``; True when newly linked."""
    return link_pull_request(stores, owner, pr, warn=warn) == LINKED


def machine_name(config: Config) -> str:
    """``routing.machineName``, else the host name."""
    return config.get_str("routing.machineName", "") or socket.gethostname()


def claim_ports(
    config: Config, stores: Stores, reads: ClientReads, warn: Callable[[str], None]
) -> ClaimPorts | None:
    """The claims on the ticket over ``reads`` (None: ``routing.claim`` is never). The
    machine's id is made here the first time; the token's login is asked once, when a
    claim is first read or posted, and one learned from a claim is kept in the book."""
    if config.get_str("routing.claim", "always") == "never":
        return None
    local, locks = stores.layout.local_dir, stores.layout.local_locks_dir
    machine = Machine(
        machine_id(local / MACHINE_FILE, locks / "machine.lock"), machine_name(config)
    )
    book = FileClaimBook(local / CLAIMS_FILE, locks / "claims.lock")
    token = f"{token_fingerprint(reads.client.token)} {reads.client.api_url}"
    return ClaimPorts(
        machine=machine,
        own_login=partial(_own_login, reads, book, token),
        comments_after=partial(_comments_after, reads, warn),
        delete_comment=reads.delete_comment,
        book=book,
        nonce=lambda: secrets.token_hex(8),
        learn_login=partial(book.remember_login, token),
    )


#: What ``GET /user`` said of each token (by fingerprint and API URL), asked once per
#: process: its login, or ``""`` when GitHub would not say (an App's installation token).
_LOGINS: dict[str, str] = {}


def _own_login(reads: ClientReads, book: FileClaimBook, token: str) -> str | None:
    """``GET /user``'s login, else the one learned from a claim the token posted."""
    if token not in _LOGINS:
        _LOGINS[token] = reads.own_login() or ""
    return _LOGINS[token] or book.login(token) or None


def _comments_after(
    reads: ClientReads, warn: Callable[[str], None], ref: WorkItemRef, since: datetime
) -> list[IssueComment]:
    entries = reads.comments_after(ref, since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return comments_from_json(entries, repository=ref, warn=warn)


@dataclass(frozen=True)
class PollWiring:
    """One cycle's collaborators, and what the command reads back after it: the REST
    client's counts, the ETag cache to keep, and the reads' rate and refusals."""

    intake: IntakePorts
    reader: ReaderPorts
    reads: ClientReads
    client: GitHubClient
    etags: FileEtagCache


@contextmanager
def poll_wiring(
    config: Config,
    stores: Stores,
    dispatcher: Dispatcher,
    *,
    token: str,
    warn: Callable[[str], None],
    checkpoint: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> Generator[PollWiring]:
    """The collaborators over one REST client, open for the ``with`` block."""
    layout = stores.layout
    settings = poll_settings(config)
    etags = FileEtagCache.for_layout(layout)
    api = config.get_str("integrations.github.apiUrl", DEFAULT_API_URL) or DEFAULT_API_URL
    actions = Actions(
        stores, dispatcher, settings.intake.prompt_template, settings.intake.policy.authorized
    )
    spacer = PostSpacer()
    cursors = FileCursors(
        layout.local_dir / CURSOR_FILE, layout.local_locks_dir / "poll-cursors.lock"
    )
    deadline = request_deadline_seconds(config)
    advice = token_help(config.get_str("integrations.github.tokenEnv", ""))
    client = GitHubClient(
        api,
        token,
        etags=etags,
        deadline=deadline,
        before_post=spacer.wait_turn,
        token_advice=advice,
    )
    with client:
        reads = ClientReads(client, names=renames_kept(cursors, settings.repositories))
        armed = ArmedRefs(
            stores.store,
            layout.local_dir / ARMED_CACHE,
            layout.local_locks_dir / "poll-armed.lock",
            warn,
        )
        intake = intake_ports(
            stores,
            actions,
            github=IntakeGitHub(reads, warn),
            posted=cursors,
            armed=armed,
            warn=warn,
            checkpoint=checkpoint,
            should_stop=should_stop,
            permission=RepositoryPermissions.for_layout(client, layout, reads.asked_as).permission,
            acknowledge=acknowledge_port(config, client, reads.asked_as),
        )
        intake = replace(
            intake,
            claims=claim_ports(config, stores, reads, warn),
            edit_comment=reads.edit_comment,
        )
        reader = ReaderPorts(
            reads,
            cursors,
            FileWatchCache.for_layout(layout),
            checks=reads,
            heads=FileHeads.for_layout(layout),
        )
        yield PollWiring(intake, reader, reads, client, etags)


def renames_kept(cursors: Cursors, repositories: Sequence[str]) -> dict[str, str]:
    """The name GitHub gives each of ``repositories`` now, as the poller kept it once a
    redirect taught it (renamed, or moved to another owner): asked by it from the start."""
    kept = {name: cursors.get(renamed_key(name)) or "" for name in repositories}
    return {name: now for name, now in kept.items() if now}
