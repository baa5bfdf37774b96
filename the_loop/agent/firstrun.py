"""A machine's first-run readiness for Claude Code: the dialogs it shows once, answered or not.

Claude Code keeps each answer in a file: onboarding done (``hasCompletedOnboarding`` in
``~/.claude.json``), the API key of ``ANTHROPIC_API_KEY`` approved or rejected (the last
20 characters of the trimmed key under ``customApiKeyResponses.approved`` or
``.rejected``), and the bypass-permissions warning accepted
(``skipDangerousModePermissionPrompt`` in ``~/.claude/settings.json``; older releases kept
``bypassPermissionsModeAccepted`` in ``~/.claude.json``, which current ones move there).
Each was read from Claude Code 2.1.332 answering its own dialogs. The functions over the
parsed files are pure; only :func:`read_answers`, :func:`write_fixes` and the two helpers
under them touch the files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from the_loop.fsio import read_object, write_json

ONBOARDING_DONE = "hasCompletedOnboarding"
KEY_RESPONSES = "customApiKeyResponses"
#: How many characters of the trimmed key Claude Code keeps as its approval.
KEY_SUFFIX_LENGTH = 20
BYPASS_ACCEPTED = "skipDangerousModePermissionPrompt"
LEGACY_BYPASS_ACCEPTED = "bypassPermissionsModeAccepted"
#: The variable whose key Claude Code asks about once, and the one that moves its files.
API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"
#: Claude Code refuses bypass mode as root unless one of these says it runs in a sandbox.
SANDBOX_VARIABLE = "IS_SANDBOX"
BUBBLEWRAP_VARIABLE = "CLAUDE_CODE_BUBBLEWRAP"
BYPASS_MODE = "bypassPermissions"
BYPASS_FLAG = "--dangerously-skip-permissions"
#: Where Claude Code sends its requests when not to Anthropic's API: a gateway.
GATEWAY_VARIABLE = "ANTHROPIC_BASE_URL"
ANTHROPIC_HOST = "api.anthropic.com"

KeyAnswer = Literal["approved", "rejected", "new"]
Document = Mapping[str, Any]
EMPTY: Document = MappingProxyType({})


@dataclass(frozen=True)
class ClaudeFiles:
    """Where Claude Code keeps its answers: ``.claude.json`` and the user's settings."""

    claude_json: Path
    settings: Path

    def path_of(self, change: Change) -> Path:
        """The file ``change`` is made in."""
        return self.claude_json if change.file == "claude.json" else self.settings

    def report(self, change: Change) -> dict[str, str]:
        """``change`` as a report says it: its file, its key, in words (never a key's
        characters)."""
        return {"file": str(self.path_of(change)), "key": change.key, "change": change.describe()}


def claude_files(environ: Mapping[str, str]) -> ClaudeFiles:
    """The files of the Claude Code that ``environ`` (its ``HOME``, its
    ``CLAUDE_CONFIG_DIR``) runs; ``KeyError`` without a ``HOME``."""
    home = Path(environ["HOME"])
    config_dir = environ.get(CONFIG_DIR_VARIABLE, "")
    if config_dir:
        return ClaudeFiles(Path(config_dir) / ".claude.json", Path(config_dir) / "settings.json")
    return ClaudeFiles(home / ".claude.json", home / ".claude" / "settings.json")


def key_suffix(api_key: str) -> str:
    """What Claude Code keeps of ``api_key`` when a person answers its dialog."""
    return api_key.strip()[-KEY_SUFFIX_LENGTH:]


def key_answer(claude_json: Document, api_key: str) -> KeyAnswer:
    """Whether ``api_key`` was approved, rejected, or never asked about."""
    approved, rejected = _responses(claude_json)
    suffix = key_suffix(api_key)
    if suffix in approved:
        return "approved"
    return "rejected" if suffix in rejected else "new"


def bypasses_permissions(args: Sequence[str]) -> bool:
    """True when ``args`` start Claude Code in bypass mode, which shows its warning once."""
    words = list(args)
    for index, word in enumerate(words):
        if word == BYPASS_FLAG or word == f"--permission-mode={BYPASS_MODE}":
            return True
        if word == "--permission-mode" and words[index + 1 : index + 2] == [BYPASS_MODE]:
            return True
    return False


def refuses_bypass_as_root(args: Sequence[str], *, uid: int, environ: Mapping[str, str]) -> bool:
    """True when Claude Code would exit at once: bypass mode as root outside a sandbox it
    recognises (``IS_SANDBOX=1`` or ``CLAUDE_CODE_BUBBLEWRAP`` in ``environ``)."""
    sandboxed = environ.get(SANDBOX_VARIABLE) == "1" or bool(environ.get(BUBBLEWRAP_VARIABLE))
    return uid == 0 and bypasses_permissions(args) and not sandboxed


def auto_mode_behind_gateway(
    args: Sequence[str], *, environ: Mapping[str, str], settings: Mapping[str, Any]
) -> bool:
    """True when Claude Code would run in auto mode, its default (no ``--permission-mode``
    nor bypass flag in ``args``, no other ``permissions.defaultMode`` in its ``settings``),
    with its requests going through a gateway (``ANTHROPIC_BASE_URL`` naming another host).
    Auto mode's safety check runs on Anthropic's side; a gateway that does not pass it on
    stops every command the check must see at a dialog ("Auto mode can't check actions")."""
    gateway = environ.get(GATEWAY_VARIABLE, "").strip()
    if not gateway or urlsplit(gateway).hostname == ANTHROPIC_HOST:
        return False
    if any(word in ("--permission-mode", BYPASS_FLAG) for word in args):
        return False
    if any(word.startswith("--permission-mode=") for word in args):
        return False
    permissions: object = settings.get("permissions")
    mode: object = None
    if isinstance(permissions, Mapping):
        mode = cast(Mapping[str, Any], permissions).get("defaultMode")
    return mode in (None, "", "auto")


def launch_problems(
    args: Sequence[str], *, uid: int, environ: Mapping[str, str], settings: Mapping[str, Any]
) -> list[tuple[str, str, str, str]]:
    """What would stop an agent started with ``args`` as ``uid`` in ``environ``: each as
    ``doctor`` says it (its check, ``fail`` or ``warn``, what was found, the remedy)."""
    found: list[tuple[str, str, str, str]] = []
    if refuses_bypass_as_root(args, uid=uid, environ=environ):
        found.append(
            (
                "claude as root",
                "fail",
                "Claude Code refuses bypass mode as root outside a sandbox: its agent would exit",
                "run the-loop as another user, or, in a sandbox, export IS_SANDBOX=1 and list "
                "IS_SANDBOX in routing.harnesses.claude.passEnv",
            )
        )
    if auto_mode_behind_gateway(args, environ=environ, settings=settings):
        found.append(
            (
                "claude auto mode",
                "warn",
                "auto mode behind a gateway (ANTHROPIC_BASE_URL): if the gateway does not pass "
                "its safety check on, each command the check must see stops at a dialog",
                "add --permission-mode default to routing.harnesses.claude.args (each prompt "
                "is then said on the ticket, for allow or deny)",
            )
        )
    return found


@dataclass(frozen=True)
class FirstRun:
    """The answers an unattended agent needs: ``key`` None without a key set, ``bypass``
    None when the args do not bypass permissions."""

    onboarded: bool
    key: KeyAnswer | None
    bypass: bool | None

    def gaps(self) -> list[str]:
        """What is missing, as short phrases; empty when the agent will ask nothing."""
        gaps = [] if self.onboarded else ["Claude Code's onboarding is not done"]
        if self.key == "new":
            gaps.append(f"the API key in {API_KEY_VARIABLE} is not approved")
        elif self.key == "rejected":
            gaps.append(f"the API key in {API_KEY_VARIABLE} was rejected")
        if self.bypass is False:
            gaps.append("the bypass-permissions warning is not accepted")
        return gaps

    def answered(self) -> list[str]:
        """What is answered, as short phrases (``onboarding done``)."""
        answered = ["onboarding done"] if self.onboarded else []
        answered += (
            [f"the API key in {API_KEY_VARIABLE} approved"] if self.key == "approved" else []
        )
        answered += ["the bypass-permissions warning accepted"] if self.bypass else []
        return answered


def first_run(
    claude_json: Document,
    *,
    api_key: str | None,
    args: Sequence[str],
    settings: Document = EMPTY,
) -> FirstRun:
    """The answers ``claude_json`` and ``settings`` hold for an agent started with ``args``
    and, when not None or blank, ``api_key``."""
    accepted = settings.get(BYPASS_ACCEPTED) is True
    accepted = accepted or claude_json.get(LEGACY_BYPASS_ACCEPTED) is True
    return FirstRun(
        onboarded=claude_json.get(ONBOARDING_DONE) is True,
        key=key_answer(claude_json, api_key) if api_key and api_key.strip() else None,
        bypass=accepted if bypasses_permissions(args) else None,
    )


def unattended_gaps(
    claude_json: Document,
    *,
    api_key: str | None,
    args: Sequence[str],
    settings: Document = EMPTY,
) -> list[str]:
    """What keeps an agent started with ``args`` from running unattended, as short phrases
    (``Claude Code's onboarding is not done``); empty when ready. Pass ``settings`` (the
    user's ``settings.json``): current releases keep the bypass acceptance there."""
    return first_run(claude_json, api_key=api_key, args=args, settings=settings).gaps()


@dataclass(frozen=True)
class Change:
    """One entry ``--fix`` writes: in which file (``claude.json`` or ``settings``), which
    key, what it held (None: absent) and what it holds after."""

    file: Literal["claude.json", "settings"]
    key: str
    before: Any
    after: Any

    def describe(self) -> str:
        """The change in words; never the key's characters."""
        if self.key == KEY_RESPONSES:
            return f"{KEY_RESPONSES}: the API key in {API_KEY_VARIABLE} approved"
        return f"{self.key}: true"


@dataclass(frozen=True)
class Fixes:
    """The documents after ``--fix`` (None: unchanged) and each change made to them."""

    claude_json: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    changes: tuple[Change, ...] = field(default_factory=tuple[Change, ...])


def fixes(
    claude_json: Document,
    *,
    api_key: str | None,
    args: Sequence[str],
    settings: Document = EMPTY,
) -> Fixes:
    """The entries Claude Code writes when a person answers the dialogs still unanswered:
    onboarding done, the key approved (and no longer rejected), the bypass warning
    accepted when ``args`` bypass permissions. Every other key is kept as it was."""
    state = first_run(claude_json, api_key=api_key, args=args, settings=settings)
    new_json, new_settings = dict(claude_json), dict(settings)
    changes: list[Change] = []
    if not state.onboarded:
        new_json[ONBOARDING_DONE] = True
        changes.append(
            Change("claude.json", ONBOARDING_DONE, claude_json.get(ONBOARDING_DONE), True)
        )
    if api_key and state.key in ("new", "rejected"):
        before = claude_json.get(KEY_RESPONSES)
        new_json[KEY_RESPONSES] = _approving(claude_json, key_suffix(api_key))
        changes.append(Change("claude.json", KEY_RESPONSES, before, new_json[KEY_RESPONSES]))
    if state.bypass is False:
        new_settings[BYPASS_ACCEPTED] = True
        changes.append(Change("settings", BYPASS_ACCEPTED, settings.get(BYPASS_ACCEPTED), True))
    files = {change.file for change in changes}
    return Fixes(
        claude_json=new_json if "claude.json" in files else None,
        settings=new_settings if "settings" in files else None,
        changes=tuple(changes),
    )


def _responses(claude_json: Document) -> tuple[list[Any], list[Any]]:
    responses = claude_json.get(KEY_RESPONSES)
    if not isinstance(responses, Mapping):
        return [], []
    approved, rejected = responses.get("approved"), responses.get("rejected")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return (
        list(approved) if isinstance(approved, list) else [],  # pyright: ignore[reportUnknownArgumentType]
        list(rejected) if isinstance(rejected, list) else [],  # pyright: ignore[reportUnknownArgumentType]
    )


def _approving(claude_json: Document, suffix: str) -> dict[str, Any]:
    """``customApiKeyResponses`` with ``suffix`` approved and not rejected, as Claude Code's
    own setting of the key does; any other entry of it kept."""
    responses = claude_json.get(KEY_RESPONSES)
    kept: dict[str, Any] = dict(responses) if isinstance(responses, Mapping) else {}  # pyright: ignore[reportUnknownArgumentType]
    approved, rejected = _responses(claude_json)
    return {
        **kept,
        "approved": approved if suffix in approved else [*approved, suffix],
        "rejected": [entry for entry in rejected if entry != suffix],
    }


def read_answers(files: ClaudeFiles) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(claude_json, settings, problem)``: both files (``{}`` when absent), or why one
    cannot be used (then nothing may be written to either)."""
    claude_json, problem = read_document(files.claude_json)
    settings, settings_problem = read_document(files.settings)
    return claude_json, settings, problem or settings_problem


def write_fixes(files: ClaudeFiles, plan: Fixes) -> None:
    """Write the documents ``plan`` changed, each as :func:`write_document` does."""
    for path, document in ((files.claude_json, plan.claude_json), (files.settings, plan.settings)):
        if document is not None:
            write_document(path, document)


def read_document(path: Path) -> tuple[dict[str, Any], str]:
    """``(document, problem)``: the JSON object in ``path`` (``{}`` when absent), or
    ``{}`` and why it cannot be used (not a regular file, not JSON, not an object)."""
    status, value, problem = read_object(path)
    if status == "absent":
        return {}, ""
    if status != "ok":
        return {}, f"{path}: {problem}"
    if not isinstance(value, dict):
        return {}, f"{path}: it is not a JSON object"
    return dict(value), ""  # pyright: ignore[reportUnknownArgumentType]


def write_document(path: Path, document: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``document`` (a temp file beside it, renamed over it), then
    give it back its mode; a file made new is readable by its owner only."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    write_json(path, dict(document))
    os.chmod(path, mode)
