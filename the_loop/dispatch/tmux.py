"""The tmux runner: start a harness in a named session, read and end it.

Only targets named like ``loop-<slug>`` are touched, and with ``socket`` set
every call goes to that private server (``tmux -L <socket>``). Session-level
commands use ``-t =<name>`` and window/pane commands ``-t =<name>:`` so tmux
never falls back to a prefix match of another session's name.

The-loop's secrets (``withheld_env``) never reach an agent: every tmux client runs
without them, so a server it starts never holds them in its global environment, and
each session it starts removes them (``set-environment -r``) from what its panes get,
in case the server was started earlier by someone who had them.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from the_loop.agent.state import PaneView
from the_loop.config.defaults import default_str
from the_loop.dispatch.harnesses import HARNESSES
from the_loop.dispatch.process import (
    DEFAULT_TIMEOUT_SECONDS,
    TIMEOUT_KEY,
    DispatchError,
    Runner,
    describe,
    run,
    trim,
)
from the_loop.dispatch.settings import (
    AGENT_SECRET_VARIABLES,
    TMUX_OWN_VARIABLES,
    AgentEnvironment,
)

if TYPE_CHECKING:
    import subprocess

    from the_loop.config.file import Config

Liveness = Literal["live", "dead", "absent", "unknown"]
#: A listed session's agent: a pane still runs, or every pane has exited (the pane kept).
AgentState = Literal["running", "exited"]

NAME_PATTERN = re.compile(r"loop-[A-Za-z0-9_~-]+\Z")
_SOCKET_PATTERN = re.compile(r"[A-Za-z0-9._-]*\Z")
#: What tmux says when the session (or the whole server, maybe just exiting) is not there.
#: A server whose last session just ended still answers a targeted command, with
#: "no current target", until it has exited.
_ABSENT_MARKERS = (
    "can't find session",
    "no server running",
    "server exited unexpectedly",
    "no current target",
)
#: What a client says when it reached a server that was shutting down.
_SERVER_EXITING = "server exited unexpectedly"
#: ``error connecting to <socket> (<reason>)`` with these reasons: no server either.
_NO_SERVER_REASONS = ("No such file or directory", "Connection refused")
#: A placeholder that waits until the real argv replaces it (see ``spawn``).
_PLACEHOLDER = ("sleep", "2147483647")
_POLL_SECONDS = 0.05
#: How long to wait for tmux to notice the panes died after SIGKILL.
_KILL_SETTLE_SECONDS = 5.0
#: The longest a listing of every pane may take before tmux counts as not answering.
LIST_TIMEOUT_SECONDS = 10.0
#: The session option naming the state root that started a session: on a tmux server
#: shared by several projects, one project never ends another's agent.
OWNER_OPTION = "@the-loop-root"
#: Said when a live session holds the name: it may be another start's, so nothing is ended.
RUNNING_HINT = "it may be another start's session; see `the-loop sessions list`"
#: What a delivery's command list prints when it pasted nothing: the pane dead (``1``), or
#: the session another state root's (``0``).
_REFUSED = "the-loop:refused-"
#: What a key's command list prints when it found the pane dead and sent nothing.
_PANE_DEAD = "the-loop:pane-dead"
#: A word a delivery's command list names unquoted (a buffer, a pane option, its value).
_TMUX_WORD = re.compile(r"[@A-Za-z0-9._~-]{1,200}")


class PaneDead(DispatchError):
    """The pane's process has exited: a delivery pasted nothing (and nothing was lost)."""


#: The suffix :meth:`TmuxRunner.keep_transcript` gives a kept transcript's name.
_KEPT_SUFFIX = re.compile(r"~\d{8}T\d{6}Z(?:-\d+)?\Z")


def is_kept_transcript(name: str) -> bool:
    """Whether ``name`` is a transcript kept under a new name (``<name>~<UTC stamp>``)."""
    return _KEPT_SUFFIX.search(name) is not None


def kept_transcripts_among(name: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that hold ``name``'s earlier transcripts, kept under new names
    (``<name>~<UTC stamp>``), sorted."""
    prefix = f"{name}~"
    return sorted(
        kept
        for kept in names
        if kept.startswith(prefix) and _KEPT_SUFFIX.fullmatch(kept, len(name))
    )


def check_name(name: str) -> str:
    """``name`` when it is a ``loop-…`` tmux target; ``ValueError`` otherwise."""
    if not NAME_PATTERN.match(name):
        raise ValueError(f"refusing tmux target {name!r}: it must match {NAME_PATTERN.pattern}")
    return name


def tmux_session_name(slug: str) -> str:
    """The tmux session name for a record slug (tmux turns '.' and ':' into '_')."""
    return "loop-" + slug.replace(".", "_").replace(":", "_")


class TmuxRunner:
    """Runs tmux for the dispatcher; every call has the configured timeout.

    ``run``, ``clock``, ``sleep``, ``signal_group`` (``os.killpg``-like) and
    ``group_running`` are injectable so the termination loop is testable without waiting.
    ``withheld_env`` names the variables no tmux client, server or agent pane of this
    runner ever holds.
    """

    def __init__(
        self,
        binary: str = default_str("routing.tmux.binary"),
        socket: str = default_str("routing.tmux.socket"),
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        *,
        owner: str = "",
        withheld_env: Sequence[str] = AGENT_SECRET_VARIABLES,
        run: Runner = run,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        signal_group: Callable[[int, int], None] = os.killpg,
        group_running: Callable[[int], bool] | None = None,
    ) -> None:
        if not _SOCKET_PATTERN.match(socket):
            raise ValueError(f"invalid tmux socket name {socket!r}")
        self.binary = binary
        self.socket = socket
        self.timeout = timeout
        self.owner = owner
        self.withheld_env = tuple(withheld_env)
        self._run = run
        self._clock = clock
        self._sleep = sleep
        self._signal_group = signal_group
        self._group_running = group_running or process_group_running

    @classmethod
    def from_config(cls, config: Config, *, owner: str = "") -> TmuxRunner:
        """The runner described by ``routing.tmux.*`` and ``routing.dispatchTimeoutSeconds``;
        ``owner`` (the state root) is written on every session it starts; the secrets no
        ``routing.harnesses.<name>.passEnv`` lets through are withheld."""
        environment = AgentEnvironment.from_config(config, HARNESSES)
        return cls(
            binary=config.get_str("routing.tmux.binary") or default_str("routing.tmux.binary"),
            socket=config.get_str("routing.tmux.socket"),
            timeout=config.get_float(TIMEOUT_KEY),
            owner=owner,
            withheld_env=environment.withheld_from_every_harness,
        )

    def command(self, *args: str) -> list[str]:
        """``tmux [-L socket] <args>``."""
        prefix = [self.binary, "-L", self.socket] if self.socket else [self.binary]
        return [*prefix, *args]

    def spawn(
        self, name: str, cwd: Path, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> str | None:
        """Start ``argv`` (no shell) in a new detached session ``name`` in ``cwd``.

        ``remain-on-exit`` is on before the agent starts, so even an agent that
        exits at once leaves its pane. The session's environment is ``env`` (set through
        ``source-file -`` on stdin, off every command line): every other variable of the
        server's global environment (whatever the command that first started the server
        had) and the withheld ones are removed from what the agent gets. A dead session of
        that name (a transcript) is kept under a new name, which is returned; a live one
        is refused with a ``DispatchError`` (and left running).
        """
        check_name(name)
        program = _direct_argv(argv)
        if not cwd.is_dir():
            raise DispatchError(f"cannot start tmux session {name} in {cwd}: not a directory")
        kept = self._make_room(name)
        # A placeholder holds the pane until remain-on-exit is set; then the agent replaces it.
        self._new_session(name, cwd, env or {})
        try:
            keep = ("set-option", "-w", "-t", f"={name}:", "remain-on-exit", "on")
            leftovers = self._leftovers(env or {}) if env is not None else ()
            self._tmux(*keep, *self._withholding(name, leftovers))
            if self.owner:
                self._tmux("set-option", "-t", f"={name}:", OWNER_OPTION, self.owner)
            self._tmux("respawn-pane", "-k", "-t", f"={name}:", "-c", str(cwd), "--", *program)
        except DispatchError:
            self.kill(name)
            raise
        return kept

    def keep_panes(self, name: str) -> None:
        """Set ``remain-on-exit`` on every window and every pane of ``name``, so ending its
        harness keeps the panes (the transcript), whoever started the session: a pane's own
        value of the option overrides its window's."""
        check_name(name)
        windows = self._tmux("list-windows", "-t", f"={name}", "-F", "#{window_id}")
        for window in windows.stdout.split():
            self._tmux("set-option", "-w", "-t", window, "remain-on-exit", "on")
        panes = self._tmux("list-panes", "-s", "-t", f"={name}:", "-F", "#{pane_id}")
        for pane in panes.stdout.split():
            self._tmux("set-option", "-p", "-t", pane, "remain-on-exit", "on")

    def keep_transcript(self, name: str) -> str:
        """Rename the (dead) session ``name`` to ``<name>~<UTC stamp>``; the new name."""
        check_name(name)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for attempt in range(1, 100):
            kept = f"{name}~{stamp}" + (f"-{attempt}" if attempt > 1 else "")
            if self.liveness(check_name(kept)) == "absent":
                self._tmux("rename-session", "-t", f"={name}", kept)
                return kept
        raise DispatchError(f"cannot find a free name to keep the transcript of {name}")

    def kept_transcripts(self, name: str) -> list[str]:
        """The sessions holding ``name``'s earlier transcripts, kept under new names
        (``<name>~<UTC stamp>``), sorted; empty when there are none, ``name`` is no
        ``loop-…`` target, or tmux did not answer."""
        if not NAME_PATTERN.match(name):
            return []
        return kept_transcripts_among(name, self.session_states() or {})

    def liveness(self, name: str) -> Liveness:
        """``live`` (a pane runs), ``dead`` (all panes exited, kept), ``absent``, or ``unknown``."""
        try:
            panes = self._panes(name)
        except DispatchError:
            return "unknown"
        if panes is None:
            return "absent"
        return "live" if any(not dead for dead, _ in panes) else "dead"

    def live_sessions(self) -> set[str] | None:
        """Names of every session on this server with a running pane, in one tmux call.

        Empty when no server runs; None when tmux did not answer.
        """
        states = self.session_states()
        if states is None:
            return None
        return {name for name, state in states.items() if state == "running"}

    def session_states(self) -> dict[str, AgentState] | None:
        """Every session on this server: ``running`` (a pane runs) or ``exited`` (all panes
        dead, kept), in one tmux call. Empty when no server runs; None when tmux did not
        answer (or is not installed)."""
        argv = self.command("list-panes", "-a", "-F", "#{pane_dead} #{session_name}")
        try:
            # A read-only question: a hung server must not hold a dry run for half an hour.
            timeout = min(self.timeout, LIST_TIMEOUT_SECONDS)
            result = self._run(argv, timeout=timeout, check=False, env=self._client_env())
        except DispatchError:
            return None
        if result.returncode != 0:
            return {} if _is_absent(result.stderr) else None
        states: dict[str, AgentState] = {}
        for line in result.stdout.splitlines():
            dead, _, name = line.strip().partition(" ")
            if name and (dead == "0" or name not in states):
                states[name] = "running" if dead == "0" else "exited"
        return states

    def pane_pids(self, name: str) -> list[int]:
        """The process ids of the panes still running (empty when absent or all dead)."""
        return [pid for dead, pid in self._panes(name) or [] if not dead]

    def terminate_harness(self, name: str, grace_seconds: float) -> bool:
        """SIGTERM each running pane's process group, SIGKILL what is left after the grace.

        Returns True when something was running; a session that is already gone
        or dead is success (False). The tmux session itself is kept.
        """
        pids = self.pane_pids(name)
        if not pids:
            return False
        self._signal_all(pids, signal.SIGTERM)
        if not self._wait_until_gone(name, pids, grace_seconds):
            self._signal_all(pids, signal.SIGKILL)
            # Only tmux's view here: an unreaped (zombie) pane process never "goes".
            if not self._wait_until_gone(name, (), _KILL_SETTLE_SECONDS):
                raise DispatchError(f"the harness in tmux session {name} survived SIGKILL")
        return True

    def kill(self, name: str) -> bool:
        """``kill-session``; True when a session was killed, False when it was not there."""
        check_name(name)
        result = self._tmux("kill-session", "-t", f"={name}", check=False)
        if result.returncode == 0:
            return True
        if _is_absent(result.stderr):
            return False
        raise self._failure(result.args, result.stderr)

    def attach_argv(self, name: str, read_only: bool, *, nested: bool = False) -> list[str]:
        """The argv that attaches a terminal to ``name`` (``-r``: read-only); ``nested``: from
        inside tmux, a client within the current pane (``env -u TMUX``, as tmux asks)."""
        check_name(name)
        flags = ["-r"] if read_only else []
        argv = self.command("attach-session", *flags, "-t", f"={name}")
        return ["env", "-u", "TMUX", *argv] if nested else argv

    def switch_client(self, name: str) -> None:
        """``switch-client -t =<name>``: move the tmux client this process runs under (the one
        ``$TMUX`` names) to ``name``; ``DispatchError`` with tmux's reason when it refuses."""
        check_name(name)
        switched = self._tmux("switch-client", "-t", f"={name}", check=False)
        if switched.returncode != 0:
            raise DispatchError(trim(switched.stderr) or "tmux refused to switch the client")

    def serves(self, name: str, client: str) -> bool:
        """Whether the server holding session ``name`` is the one whose socket ``client`` (a
        ``$TMUX`` value: ``<socket path>,<pid>,<session>``) names; False when tmux does not
        say where its socket is."""
        check_name(name)
        shown = self._tmux(
            "display-message", "-p", "-t", f"={name}:", "#{socket_path}", check=False
        )
        server = shown.stdout.strip() if shown.returncode == 0 else ""
        return bool(server) and _same_file(server, client_socket(client))

    def capture(self, name: str) -> str:
        """The pane's whole history as text, trailing blank lines dropped."""
        check_name(name)
        result = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", f"={name}:")
        text = result.stdout.rstrip()
        return text + "\n" if text else ""

    def deliver(self, name: str, buffer: str, text: str, mark: tuple[str, str]) -> None:
        """Paste ``text`` into ``name``'s pane and mark it, in ONE tmux command list.

        ``load-buffer`` reads the text from this client's stdin into the per-delivery
        ``buffer`` (never the command line, which tmux caps at about 16 KB); then
        ``if-shell -F`` decides, in the server, in the same list: a dead pane, or a
        session another state root started under the name, gets nothing (the buffer is
        deleted; :class:`PaneDead`, or a ``DispatchError`` naming that root, is raised: a
        paste into a pane ``remain-on-exit`` kept crashes tmux 3.3a, every session with
        it); a live one of ours gets ``paste-buffer -p -d`` (bracketed, the buffer
        deleted), Enter, and ``set-option -p`` of ``mark`` (option, value). tmux runs the
        list in one go and stops at the first failure, so the pane carries the mark
        exactly when the paste happened, and no instant lies between the checks and the
        paste. ``DispatchError`` when tmux refuses.
        """
        check_name(name)
        target = f"={name}:"
        option, value = mark
        for word in (buffer, option, value):
            if not _TMUX_WORD.fullmatch(word):
                raise ValueError(f"refusing tmux word {word!r} in a delivery")
        refuse = (
            f"delete-buffer -b {buffer} ; display-message -p -t {target} '{_REFUSED}#{{pane_dead}}'"
        )
        live = (
            f"paste-buffer -p -d -b {buffer} -t {target} ; send-keys -t {target} Enter ; "
            f"set-option -p -t {target} {option} {value}"
        )
        refusal = self._refusal()
        if refusal is None:  # an owner a format cannot spell: asked apart, as before
            owner = self.foreign_owner(name)
            if owner is not None:
                raise DispatchError(f"tmux session {name} belongs to the state root {owner}")
            refusal = "#{pane_dead}"
        argv = self.command(
            *("load-buffer", "-b", buffer, "-", ";"),
            *("if-shell", "-F", "-t", target, refusal, refuse, live),
        )
        client = self._client_env()
        result = self._run(argv, timeout=self.timeout, check=True, env=client, input=text)
        if f"{_REFUSED}1" in result.stdout:
            raise PaneDead(f"the agent in tmux session {name} has exited: nothing was pasted")
        if _REFUSED in result.stdout:
            owner = self.owner_of(name) or "another state root"
            raise DispatchError(f"tmux session {name} belongs to the state root {owner}")

    def _refusal(self) -> str | None:
        """The format that is true when a delivery must paste nothing: the pane is dead,
        or its session is tagged with a state root other than this runner's; None when
        the root holds ``#[``, which tmux keeps as a style, never unescapes. A format
        finds ``@the-loop-root`` through tmux's option chain (pane, window, session,
        global), where :meth:`owner_of` reads the session's alone: they differ only for
        an option someone set by hand elsewhere."""
        if not self.owner:
            return "#{pane_dead}"
        if "#[" in self.owner:
            return None
        ours = re.sub(r"[#,}]", lambda found: f"#{found.group()}", self.owner)
        option = f"#{{{OWNER_OPTION}}}"
        return f"#{{||:#{{pane_dead}},#{{&&:{option},#{{!=:{option},{ours}}}}}}}"

    def pane_view(self, name: str) -> PaneView | None:
        """The pane of ``name`` as the agent room reads it, in one tmux call: dead or
        not (and its exit status), when its window last changed, and the visible screen
        (never the scrollback); None when the session is absent, ``DispatchError`` when
        tmux does not answer."""
        check_name(name)
        target = f"={name}:"
        head = "the-loop:pane #{pane_dead} #{pane_dead_status} #{window_activity}"
        shown = self._tmux(
            *("display-message", "-p", "-t", target, head, ";"),
            *("capture-pane", "-p", "-t", target),
            check=False,
        )
        if shown.returncode != 0:
            if _is_absent(shown.stderr) or "can't find" in shown.stderr:
                return None
            raise self._failure(shown.args, shown.stderr)
        first, _, screen = shown.stdout.partition("\n")
        words = first.split()
        if len(words) < 2 or words[0] != "the-loop:pane":
            raise DispatchError(f"tmux described the pane of {name} as {first!r}")
        status = words[2] if len(words) > 3 else ""
        activity = words[-1] if len(words) > 2 else "0"
        return PaneView(
            dead=words[1] == "1",
            status=int(status) if status.lstrip("-").isdigit() else None,
            activity=float(activity) if activity.isdigit() else 0.0,
            screen=screen,
        )

    def send_keys(self, name: str, keys: Sequence[str]) -> None:
        """Send ``keys`` (tmux key names, each one key) to the live pane of ``name``; never
        to a dead one (checked in the same command list)."""
        check_name(name)
        target = f"={name}:"
        for key in keys:
            if not _TMUX_WORD.fullmatch(key):
                raise ValueError(f"refusing tmux key {key!r}")
        live = f"send-keys -t {target} " + " ".join(keys)
        dead = f"display-message -p {_PANE_DEAD}"
        shown = self._tmux("if-shell", "-F", "-t", target, "#{pane_dead}", dead, live)
        if _PANE_DEAD in shown.stdout:
            raise PaneDead(f"the agent in tmux session {name} has exited: no key was sent")

    def owner_of(self, name: str) -> str | None:
        """The state root that started session ``name``; None when untagged or gone (a
        session of an older release, or one started by hand)."""
        check_name(name)
        shown = self._tmux("show-options", "-q", "-v", "-t", f"={name}:", OWNER_OPTION, check=False)
        value = shown.stdout.strip() if shown.returncode == 0 else ""
        return value or None

    def foreign_owner(self, name: str) -> str | None:
        """The other state root session ``name`` belongs to, when it is tagged with one;
        None when it is this runner's own, untagged, or gone."""
        if not self.owner:
            return None
        owner = self.owner_of(name)
        return owner if owner is not None and owner != self.owner else None

    def pane_option(self, name: str, option: str) -> str | None:
        """The value of the pane option ``option`` of ``name``; None when unset or gone."""
        check_name(name)
        shown = self._tmux("show-options", "-p", "-q", "-v", "-t", f"={name}:", option, check=False)
        value = shown.stdout.strip() if shown.returncode == 0 else ""
        return value or None

    def _make_room(self, name: str) -> str | None:
        """Refuse a live (or unreadable) session ``name``; keep a dead one under a new name
        (returned)."""
        state = self.liveness(name)
        if state == "live":
            raise DispatchError(f"tmux session {name} is already running; {RUNNING_HINT}")
        if state == "unknown":
            raise DispatchError(
                f"cannot tell whether tmux session {name} exists: tmux did not answer"
            )
        if state == "dead":
            return self.keep_transcript(name)
        return None

    def _new_session(self, name: str, cwd: Path, env: Mapping[str, str]) -> None:
        for key in env:
            if not key or "=" in key or "\n" in key:
                raise ValueError(f"invalid environment variable name {key!r}")
        argv = ["new-session", "-d", "-s", name, "-c", str(cwd), "--", *_PLACEHOLDER]
        created = self._tmux(*argv, check=False)
        if created.returncode != 0 and _SERVER_EXITING in created.stderr:
            # Its last session just ended, so the server was on its way out: start a new one.
            created = self._tmux(*argv, check=False)
        if created.returncode == 0:
            if env:
                self._set_environment(name, env)
            return
        if "duplicate session" in created.stderr:
            raise DispatchError(f"tmux session {name} is already running; {RUNNING_HINT}")
        raise self._failure(self.command(*argv), created.stderr)

    def _set_environment(self, name: str, env: Mapping[str, str]) -> None:
        """Set ``env`` as session ``name``'s environment (what its agent starts with).
        The values go to tmux as commands on stdin (``source-file -``), never on a command
        line another user can read in the process list (an API key, say)."""
        target = f"={name}"
        commands = "".join(
            f"set-environment -t {target} {_tmux_quoted(key)} {_tmux_quoted(value)}\n"
            for key, value in env.items()
        )
        try:
            self._run(
                self.command("source-file", "-"),
                timeout=self.timeout,
                check=True,
                env=self._client_env(),
                input=commands,
            )
        except DispatchError:
            self.kill(name)
            raise

    def _panes(self, name: str) -> list[tuple[bool, int]] | None:
        """``(dead, pid)`` per pane, or None when the session is absent."""
        check_name(name)
        result = self._tmux(
            "list-panes", "-s", "-t", f"={name}:", "-F", "#{pane_dead} #{pane_pid}", check=False
        )
        if result.returncode != 0:
            if _is_absent(result.stderr):
                return None
            raise self._failure(result.args, result.stderr)
        panes: list[tuple[bool, int]] = []
        for line in result.stdout.splitlines():
            dead, _, pid = line.strip().partition(" ")
            if pid.isdigit():
                panes.append((dead == "1", int(pid)))
        return panes

    def _signal_all(self, pids: Sequence[int], signum: int) -> None:
        for pid in pids:
            try:
                self._signal_group(pid, signum)
            except ProcessLookupError:
                continue
            except PermissionError as error:
                raise DispatchError(f"cannot signal process group {pid}: {error}") from error

    def _wait_until_gone(self, name: str, pids: Sequence[int], seconds: float) -> bool:
        """Poll until no pane of ``name`` runs and no group in ``pids`` has a running member."""
        deadline = self._clock() + seconds
        while True:
            if not self.pane_pids(name) and not any(map(self._group_running, pids)):
                return True
            if self._clock() >= deadline:
                return False
            self._sleep(_POLL_SECONDS)

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = self.command(*args)
        return self._run(command, timeout=self.timeout, check=check, env=self._client_env())

    def _withholding(self, name: str, leftovers: Iterable[str] = ()) -> list[str]:
        """The tmux commands (each after a ``;``) that keep the withheld variables and
        ``leftovers`` out of every process started in session ``name``, whatever the
        server's own environment."""
        target = f"={name}"
        names = dict.fromkeys((*self.withheld_env, *leftovers))
        return [a for v in names for a in (";", "set-environment", "-t", target, "-r", v)]

    def _leftovers(self, env: Mapping[str, str]) -> list[str]:
        """The names in the server's global environment that ``env`` does not set (but
        tmux's own), so a session started with ``env`` never inherits them."""
        shown = self._tmux("show-environment", "-g", check=False)
        names: list[str] = []
        for line in shown.stdout.splitlines():
            variable = line.removeprefix("-").partition("=")[0]
            if variable and variable not in env and variable not in TMUX_OWN_VARIABLES:
                names.append(variable)
        return names

    def _client_env(self) -> dict[str, str | None] | None:
        """The changes to a tmux client's environment: the withheld variables removed, so a
        server it starts never holds them."""
        return {name: None for name in self.withheld_env} or None

    def _failure(self, argv: Sequence[str], stderr: str) -> DispatchError:
        detail = trim(stderr)
        return DispatchError(f"`{describe(argv)}` failed" + (f": {detail}" if detail else ""))


def _tmux_quoted(text: str) -> str:
    """``text`` as one word of tmux's command language, taken literally: single-quoted
    pieces (no expansion inside), a quote or a newline between them double-quoted."""
    pieces: list[str] = []
    for part in text.replace("\n", "\0\n\0").replace("'", "\0'\0").split("\0"):
        if part == "'":
            pieces.append('"\'"')
        elif part == "\n":
            pieces.append('"\\n"')
        elif part:
            pieces.append(f"'{part}'")
    return "".join(pieces) or "''"


def process_group_running(pgid: int) -> bool:
    """True while process group ``pgid`` has a member that is not a zombie.

    tmux may leave a dead pane's process unreaped; without ``/proc`` (not
    Linux) such a zombie counts as running.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # the process ended while we looked
        fields = stat[stat.rfind(")") + 1 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def client_socket(client: str) -> str:
    """The socket path of a ``$TMUX`` value (``<socket path>,<pid>,<session index>``)."""
    parts = client.rsplit(",", 2)
    return parts[0] if len(parts) == 3 else client


def _same_file(one: str, other: str) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.abspath(one) == os.path.abspath(other)


def _is_absent(stderr: str) -> bool:
    if any(marker in stderr for marker in _ABSENT_MARKERS):
        return True
    return "error connecting to" in stderr and any(r in stderr for r in _NO_SERVER_REASONS)


def _direct_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` in a form tmux executes directly: tmux runs a lone argument via ``sh -c``."""
    program = list(argv)
    if not program or not program[0]:
        raise ValueError("a harness argv needs a program")
    if len(program) > 1:
        return program
    if "=" in program[0]:
        raise ValueError(f"refusing to start {program[0]!r}: a lone program name cannot hold '='")
    return ["env", "--", program[0]]
