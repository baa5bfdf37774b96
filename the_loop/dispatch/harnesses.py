"""Harness adapters: the argv that starts or resumes a coding agent.

Every adapter returns an argv list that tmux executes directly (never a shell
string). Session ids are fresh UUIDs. A harness given variables to unset starts its
agent through ``env -u NAME ... --``: the tmux runner withholds the secrets no harness
lets through, and this withholds the ones another harness lets through but this one not.
"""

from __future__ import annotations

import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.config.defaults import default_str
from the_loop.dispatch.settings import AgentEnvironment

if TYPE_CHECKING:
    from the_loop.config.file import Config
    from the_loop.ref import WorkItemRef

PLACEHOLDERS = ("session_id", "work_item", "prompt", "model", "effort")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


class Harness(ABC):
    """A coding agent the dispatcher can start in tmux; subclasses build the argv."""

    name: str = ""
    #: Whether the agent takes the-loop's hooks (``hooks``: a ``--settings`` JSON).
    takes_hooks: bool = False

    def __init__(self, binary: str, *, unset_env: Sequence[str] = ()) -> None:
        if not binary:
            raise ValueError(f"the {self.name or 'harness'} binary must not be empty")
        self.binary = binary
        self.unset_env = tuple(unset_env)

    @abstractmethod
    def start_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str,
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        """The argv that starts a new agent session with id ``session_id``."""

    @abstractmethod
    def resume_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str = "",
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        """The argv that resumes the agent session ``session_id``."""

    def can_resume(self, session_id: str, *, cwd: Path, env: Mapping[str, str]) -> bool:
        """Whether :meth:`resume_argv` can take ``session_id`` up again for an agent that
        worked in ``cwd`` with ``env``; True unless the harness knows better (Claude Code)."""
        del session_id, cwd, env
        return True

    def new_session_id(self) -> str:
        """A fresh session id (a UUID4)."""
        import uuid  # it imports platform: only a spawn pays for it

        return str(uuid.uuid4())

    def available(self) -> bool:
        """True when the binary is found on PATH (or is an executable path)."""
        return shutil.which(self.binary) is not None

    def _without_env(self, argv: list[str]) -> list[str]:
        """``argv``, started by ``env -u NAME ... --`` when this harness unsets variables."""
        if not self.unset_env:
            return argv
        unsets = [option for name in self.unset_env for option in ("-u", name)]
        return ["env", *unsets, "--", *argv]


class _AgentCli(Harness):
    """An agent CLI: ``<binary> <flag> <id> [--model M] [args...] [<prompt>]``.

    Subclasses name their flags: ``start_flag`` for a new session, ``resume_flag``
    to resume one.
    """

    start_flag = ""
    resume_flag = ""
    #: The flag that hands the agent the-loop's hooks (``""``: it takes none).
    settings_flag = ""

    def __init__(
        self, binary: str, args: Sequence[str] = (), *, unset_env: Sequence[str] = ()
    ) -> None:
        super().__init__(binary, unset_env=unset_env)
        self.args = tuple(args)

    def start_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str,
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        return self._argv(self.start_flag, session_id, model, prompt, hooks)

    def resume_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str = "",
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        return self._argv(self.resume_flag, session_id, model, prompt, hooks)

    def _argv(self, flag: str, session_id: str, model: str, prompt: str, hooks: str) -> list[str]:
        if not session_id or session_id.startswith("-"):
            raise ValueError(f"invalid harness session id {session_id!r}")
        model_args = ["--model", model] if model else []
        hook_args = [self.settings_flag, hooks] if hooks and self.settings_flag else []
        prompt_args = [prompt] if prompt else []
        argv = [self.binary, flag, session_id, *model_args, *hook_args, *self.args, *prompt_args]
        return self._without_env(argv)


class ClaudeHarness(_AgentCli):
    """Claude Code: ``claude --session-id <id> [--model M] [--settings <hooks>] [args...]
    [<prompt>]``: the-loop's hooks (:mod:`the_loop.agent.hooks`) through ``--settings``,
    which Claude Code merges with the operator's own.

    Resume: ``claude --resume <id> [--model M] [--settings <hooks>] [args...] [<prompt>]``,
    which only a session that had a turn can take: before its first turn Claude Code keeps
    no transcript, and ``--resume`` says "No conversation found" and exits
    (:meth:`can_resume`). ``effort`` is not passed: Claude Code has no effort flag we can
    rely on, so an operator who wants one puts it in ``routing.harnesses.claude.args``.
    """

    name = "claude"
    takes_hooks = True
    start_flag = "--session-id"
    resume_flag = "--resume"
    settings_flag = "--settings"

    def __init__(
        self,
        binary: str = default_str("routing.harnesses.claude.binary"),
        args: Sequence[str] = (),
        *,
        unset_env: Sequence[str] = (),
    ) -> None:
        super().__init__(binary, args, unset_env=unset_env)

    def can_resume(self, session_id: str, *, cwd: Path, env: Mapping[str, str]) -> bool:
        """Whether Claude Code keeps a transcript of ``session_id`` for ``cwd`` (see
        :func:`claude_transcripts`): only then does ``--resume`` find the conversation."""
        return any(path.is_file() for path in claude_transcripts(session_id, cwd, env))


#: Claude Code's own limit on a project directory's name: a longer one is cut there and
#: ends in ``-`` and a hash of the whole path.
_PROJECT_NAME_LIMIT = 200
_NOT_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]")
#: A session id that names one file (no path, no glob): what ``sessions register`` takes.
_FILE_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]*\Z")


def claude_transcripts(session_id: str, cwd: Path, env: Mapping[str, str]) -> list[Path]:
    """Where Claude Code keeps the transcript of session ``session_id`` started in ``cwd``:
    ``<config dir>/projects/<cwd, each character but an ASCII letter or digit as '-'>/
    <id>.jsonl``; the config dir is the agent's ``$CLAUDE_CONFIG_DIR``, else
    ``$HOME/.claude``. Both ``cwd`` as given and with its links resolved; a name past 200
    characters is cut there and ends in a hash, matched by pattern. Empty when ``env``
    names no config dir, or the id is no plain file name."""
    home = env.get("HOME", "")
    config = env.get("CLAUDE_CONFIG_DIR") or (os.path.join(home, ".claude") if home else "")
    if not config or not _FILE_SAFE_ID.match(session_id):
        return []
    projects = Path(config) / "projects"
    found: list[Path] = []
    for where in dict.fromkeys((str(cwd), os.path.realpath(cwd))):
        name = _NOT_ALPHANUMERIC.sub("-", where)
        if len(name) <= _PROJECT_NAME_LIMIT:
            found.append(projects / name / f"{session_id}.jsonl")
        else:  # the cut name holds letters, digits and '-' only: nothing a glob reads
            found += sorted(projects.glob(f"{name[:_PROJECT_NAME_LIMIT]}-*/{session_id}.jsonl"))
    return found


class CursorHarness(_AgentCli):
    """Cursor's agent CLI, keyed by its chat id: ``cursor-agent --resume <id> [--model M]
    [args...] [<prompt>]`` both to start and to resume (``effort`` is not passed)."""

    name = "cursor"
    start_flag = "--resume"
    resume_flag = "--resume"

    def __init__(
        self,
        binary: str = default_str("routing.harnesses.cursor.binary"),
        args: Sequence[str] = (),
        *,
        unset_env: Sequence[str] = (),
    ) -> None:
        super().__init__(binary, args, unset_env=unset_env)


class CommandHarness(Harness):
    """Any program: ``argv`` with ``{session_id}``, ``{work_item}``, ``{prompt}``,
    ``{model}`` and ``{effort}`` replaced inside each element (no shell, no other
    braces touched). Resume uses ``resume_argv``, else ``argv``. A placeholder
    inside a ``bash -c`` script is parsed by that shell: keep it an element of its own."""

    name = "command"

    def __init__(
        self,
        argv: Sequence[str],
        resume_argv: Sequence[str] | None = None,
        *,
        unset_env: Sequence[str] = (),
    ) -> None:
        if not argv:
            raise ValueError("the command harness needs a non-empty argv")
        if resume_argv is not None and not resume_argv:
            raise ValueError("the command harness resume argv must not be empty")
        super().__init__(argv[0], unset_env=unset_env)
        self.argv = tuple(argv)
        self.resume_template = tuple(resume_argv) if resume_argv is not None else None

    def start_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str,
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        values = _values(session_id, work_item, prompt, model, effort)
        return self._without_env([_substitute(element, values) for element in self.argv])

    def resume_argv(
        self,
        *,
        session_id: str,
        work_item: WorkItemRef,
        prompt: str = "",
        model: str = "",
        effort: str = "",
        hooks: str = "",
    ) -> list[str]:
        values = _values(session_id, work_item, prompt, model, effort)
        template = self.resume_template or self.argv
        return self._without_env([_substitute(element, values) for element in template])


#: Every harness name, in the order commands offer them (``--harness``, the config schema).
HARNESSES = (ClaudeHarness.name, CursorHarness.name, CommandHarness.name)
#: The agent ``the-loop init --harness command`` writes into ``routing.harnesses.command.argv``.
PLACEHOLDER_AGENT = "my-agent"


def cannot_run(name: str, binary: str | None) -> str:
    """Why harness ``name`` cannot start (``binary`` not on PATH; None: not configured),
    and the two ways out: the config key that fixes it, or another harness."""
    others = "|".join(other for other in HARNESSES if other != name)
    elsewhere = (
        f"or start another agent with `sessions start --harness {others}` "
        "(routing.defaultHarness sets the one used by default)"
    )
    if name != CommandHarness.name:
        return (
            f"the {name} harness cannot run: {binary} is not on PATH; install it or set "
            f"routing.harnesses.{name}.binary to its path, {elsewhere}"
        )
    key = "routing.harnesses.command.argv"
    if binary is None:
        return f"the command harness is not configured: set {key}, {elsewhere}"
    placeholder = " (still init's placeholder)" if binary == PLACEHOLDER_AGENT else ""
    return (
        f"the command harness cannot run: {binary}{placeholder} is not on PATH; set {key} "
        f"to the argv that starts your agent, {elsewhere}"
    )


def harnesses_from_config(config: Config) -> dict[str, Harness]:
    """``claude`` and ``cursor`` always, ``command`` when ``routing.harnesses.command.argv``
    is set; binaries and extra args from ``routing.harnesses.<name>``; each unsets the
    secrets it does not pass that the tmux runner lets through for another harness."""
    prefix = "routing.harnesses"
    environment = AgentEnvironment.from_config(config, HARNESSES)
    everywhere = environment.withheld_from_every_harness

    def unset(name: str) -> tuple[str, ...]:
        return tuple(v for v in environment.withheld_from(name) if v not in everywhere)

    harnesses: dict[str, Harness] = {
        "claude": ClaudeHarness(
            config.get_str(f"{prefix}.claude.binary") or default_str(f"{prefix}.claude.binary"),
            config.get_str_list(f"{prefix}.claude.args"),
            unset_env=unset("claude"),
        ),
        "cursor": CursorHarness(
            config.get_str(f"{prefix}.cursor.binary") or default_str(f"{prefix}.cursor.binary"),
            config.get_str_list(f"{prefix}.cursor.args"),
            unset_env=unset("cursor"),
        ),
    }
    argv = config.get_str_list(f"{prefix}.command.argv")
    if argv:
        resume = config.get_str_list(f"{prefix}.command.resumeArgv")
        harnesses["command"] = CommandHarness(argv, resume or None, unset_env=unset("command"))
    return harnesses


def _values(
    session_id: str, work_item: WorkItemRef, prompt: str, model: str, effort: str
) -> dict[str, str]:
    return {
        "session_id": session_id,
        "work_item": work_item.ref,
        "prompt": prompt,
        "model": model,
        "effort": effort,
    }


def _substitute(element: str, values: dict[str, str]) -> str:
    """Replace each ``{name}`` in one pass, so a substituted value is never rescanned."""
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], element)
