"""``the-loop doctor [--fix]``: can this machine run the loop unattended? One line per check.

The checks: tmux (and its dead-pane paste crash), git, the default harness's binary,
Claude Code's first-run answers, the GitHub token and each polled repository, and the
state root. ``--fix`` writes only the answers Claude Code itself writes when a person
gives them (:mod:`the_loop.agent.firstrun`); it says what it cannot fix. Exit 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.commands.common import Context, format_parent, load_context
from the_loop.commands.examples import epilog
from the_loop.commands.render import Result
from the_loop.config.file import Config
from the_loop.errors import EXIT_FAILED, EXIT_OK

OK, INFO, WARN, FAIL = "ok", "info", "warn", "fail"
#: The longest a ``--version`` of tmux, git or the harness may take.
PROBE_TIMEOUT_SECONDS = 10.0
#: The longest one request to GitHub may take, from connect to last byte.
REQUEST_DEADLINE_SECONDS = 15.0
#: The first tmux that refuses a paste into a pane ``remain-on-exit`` kept instead of
#: crashing its server: "Don't allow paste-buffer into dead panes" (CHANGES FROM 3.3a TO
#: 3.4; tmux/tmux#3830, applied 2024-02-13).
TMUX_PASTE_FIXED = (3, 4)
_TMUX_VERSION = re.compile(r"tmux (next-)?(\d+)\.(\d+)[a-z]?(-rc\d*)?")
FIX_REMEDY = "`the-loop doctor --fix` writes what Claude Code writes when a person answers"


@dataclass(frozen=True)
class Check:
    """One check's verdict: ``status`` (ok, info, warn, fail), what it found, and what a
    person can do about it (``remedy``, "" when nothing is to be done)."""

    name: str
    status: str
    found: str
    remedy: str = ""

    def line(self, *, with_remedy: bool) -> str:
        remedy = f"; {self.remedy}" if with_remedy and self.remedy else ""
        return f"{self.status.upper() if self.status == FAIL else self.status:<4}  {self.name}: {self.found}{remedy}"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "status": self.status, "found": self.found, "remedy": self.remedy}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``doctor``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        parents=[format_parent()],
        help="say whether this machine can run the loop unattended",
        description="Check, one line each, what an unattended loop needs: tmux (and whether "
        "its version has the dead-pane paste crash), git, the default harness's binary and "
        "version, Claude Code's first-run answers (onboarding, the API key, the "
        "bypass-permissions warning), the GitHub token and each repository "
        "polling.repositories names, and the state root. Exit 0 when nothing failed, 1 "
        "otherwise.",
        epilog=epilog(("the-loop doctor", "the-loop doctor --fix", "the-loop doctor --format json")),
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="write the answers Claude Code writes when a person answers its first-run "
        "dialogs, each change one line; say what cannot be fixed",
    )
    parser.set_defaults(func=run_doctor)
    return parser


def run_doctor(args: argparse.Namespace) -> Result:
    """Every check (after ``--fix`` made its changes); exit 1 when one failed."""
    context = load_context(args)
    config = context.config
    changes: list[dict[str, str]] = []
    checks = [
        tmux_check(config.get_str("routing.tmux.binary")),
        tool_check("git", config.get_str("routing.workspace.gitBinary"), "--version"),
        *harness_checks(config, fix=args.fix, changes=changes),
        *github_checks(config, os.environ),
        state_root_check(context),
    ]
    failed = sum(check.status == FAIL for check in checks)
    summary = {
        "fix": bool(args.fix),
        "fixed": changes,
        "failed": failed,
        "warned": sum(check.status == WARN for check in checks),
    }
    return Result(
        items=[check.to_dict() for check in checks],
        text=lambda: _lines(checks, changes, fix=args.fix),
        summary=summary,
        exit_code=EXIT_FAILED if failed else EXIT_OK,
    )


def _lines(checks: list[Check], changes: list[dict[str, str]], *, fix: bool) -> list[str]:
    lines = [f"fixed {change['check']}: {change['change']} in {change['file']}" for change in changes]
    lines += [check.line(with_remedy=not fix) for check in checks]
    if fix:
        unfixed = [check for check in checks if check.status in (WARN, FAIL)]
        lines += [f"cannot fix {check.name}: {check.remedy or check.found}" for check in unfixed]
    return lines


def _probe(name: str, binary: str, flag: str) -> tuple[str, str] | Check:
    """``(path, first line of <binary> <flag>)``, or the failing check."""
    from the_loop.dispatch.process import DispatchError, run

    path = shutil.which(binary)
    if path is None:
        return Check(name, FAIL, f"{binary} is not on PATH", f"install {name} or set its path")
    try:
        completed = run([path, flag], timeout=PROBE_TIMEOUT_SECONDS, check=True)
    except DispatchError as error:
        return Check(name, FAIL, f"{path} does not answer {flag}: {error}")
    lines = (completed.stdout or completed.stderr).strip().splitlines()
    return path, lines[0].strip() if lines else "(no version printed)"


def tool_check(name: str, binary: str, flag: str) -> Check:
    """The tool found on PATH, and its version."""
    probed = _probe(name, binary, flag)
    if isinstance(probed, Check):
        return probed
    path, version = probed
    return Check(name, OK, f"{version} at {path}")


def tmux_paste_crash(version: str) -> bool | None:
    """Whether ``tmux -V``'s ``version`` crashes on a paste into a dead pane; None when
    the version does not say (``tmux master``, a distribution's own numbering)."""
    match = _TMUX_VERSION.fullmatch(version.strip())
    if match is None:
        return None
    number = (int(match[2]), int(match[3]))
    before_release = bool(match[1] or match[4])  # next-3.4 and 3.4-rc come before 3.4
    return number < TMUX_PASTE_FIXED or (before_release and number == TMUX_PASTE_FIXED)


def tmux_check(binary: str) -> Check:
    """tmux found, its version, and whether that version has the dead-pane paste crash."""
    probed = _probe("tmux", binary, "-V")
    if isinstance(probed, Check):
        return probed
    path, version = probed
    crash = tmux_paste_crash(version)
    if crash:
        return Check(
            "tmux",
            WARN,
            f"{version} at {path} crashes its server on a paste into a dead pane (fixed in "
            "tmux 3.4); the-loop checks the pane in the same command list as each paste",
            "tmux 3.4 or later is rid of the crash",
        )
    unknown = "" if crash is False else " (its version does not say whether it has the "
    unknown += "dead-pane paste crash, fixed in tmux 3.4)" if unknown else ""
    return Check("tmux", OK, f"{version} at {path}{unknown}")


def harness_checks(config: Config, *, fix: bool, changes: list[dict[str, str]]) -> list[Check]:
    """The default harness's binary and version; for Claude Code, its first-run answers."""
    from the_loop.commands.doctor_claude import claude_checks
    from the_loop.dispatch.harnesses import ClaudeHarness, CommandHarness, cannot_run
    from the_loop.dispatch.harnesses import harnesses_from_config

    name = config.get_str("routing.defaultHarness") or ClaudeHarness.name
    harness = harnesses_from_config(config).get(name)
    if harness is None:
        return [Check("harness", FAIL, f"{name} is not configured", cannot_run(name, None))]
    if isinstance(harness, CommandHarness):
        path = shutil.which(harness.binary)
        found = f"command: {harness.binary} at {path}" if path else ""
        return [Check("harness", OK, found) if path else _missing(name, harness.binary)]
    probed = _probe("harness", harness.binary, "--version")
    checks = [Check("harness", OK, f"{name} {probed[1]} at {probed[0]}")]
    if isinstance(probed, Check):
        checks = [probed if shutil.which(harness.binary) else _missing(name, harness.binary)]
    if isinstance(harness, ClaudeHarness):
        checks += claude_checks(config, harness.args, fix=fix, changes=changes)
    return checks


def _missing(name: str, binary: str) -> Check:
    from the_loop.dispatch.harnesses import cannot_run

    return Check("harness", FAIL, f"{binary} is not on PATH", cannot_run(name, binary))


def github_checks(config: Config, environ: Mapping[str, str]) -> list[Check]:
    """The token (GET /user answers) and each polled repository readable (its issues)."""
    from the_loop.github.poster import TOKEN_ACCESS, TOKEN_VARIABLES, token_from_environment
    from the_loop.github.poster import token_sources

    named = config.get_str("integrations.github.tokenEnv", "")
    source = next(
        (name for name in (named,) if named else TOKEN_VARIABLES if False else ()), ""
    )
    names = (named,) if named else TOKEN_VARIABLES
    source = next((name for name in names if token_from_environment(environ, name)), source)
    repositories = config.get_str_list("polling.repositories")
    if not source:
        if not repositories:
            found = f"none set in {token_sources(named)}; none is needed while "
            return [Check("github token", INFO, found + "polling.repositories is empty")]
        found = f"none set in {token_sources(named)}, and polling.repositories names "
        found += f"{len(repositories)} {'repository' if len(repositories) == 1 else 'repositories'}"
        return [Check("github token", FAIL, found, f"export one there ({TOKEN_ACCESS})")]
    return _ask_github(config, token_from_environment(environ, source), source, repositories)


def _ask_github(config: Config, token: str, source: str, repositories: Iterable[str]) -> list[Check]:
    from the_loop.github.client import GitHubClient
    from the_loop.github.poster import DEFAULT_API_URL, token_help
    from the_loop.github.replies import GitHubHTTPError

    api = config.get_str("integrations.github.apiUrl", DEFAULT_API_URL) or DEFAULT_API_URL
    advice = token_help(config.get_str("integrations.github.tokenEnv", ""))
    try:
        client = GitHubClient(api, token, deadline=REQUEST_DEADLINE_SECONDS, token_advice=advice)
    except GitHubHTTPError as error:
        return [Check("github token", FAIL, f"${source} is set, but {error}")]
    with client:
        checks = [_user_check(client, source)]
        for name in repositories:
            try:
                client.get(f"/repos/{name}/issues", {"state": "all", "per_page": 1})
            except GitHubHTTPError as error:
                checks.append(Check(f"github {name}", FAIL, f"not readable: {error}"))
                continue
            checks.append(Check(f"github {name}", OK, "readable (its issues answered)"))
    return checks


def _user_check(client: Any, source: str) -> Check:
    """GET /user: who the token is. A 403 that is no rate limit only warns: an app's
    installation token is refused /user yet may read every repository."""
    import json

    from the_loop.github.replies import GitHubHTTPError

    try:
        response = client.get("/user")
    except GitHubHTTPError as error:
        status = WARN if error.status == 403 and not error.rate_limited else FAIL
        return Check("github token", status, f"${source} is set, but GET /user: {error}")
    try:
        login = json.loads(response.body).get("login") or "?"
    except (ValueError, AttributeError):
        login = "?"
    rate = response.rate
    left = f" ({rate.remaining} of {rate.limit} requests left this hour)" if rate else ""
    return Check("github token", OK, f"${source}: GitHub knows it as {login}{left}")


def state_root_check(context: Context) -> Check:
    """The state root found (or its nearest existing parent) and writable."""
    root = context.layout.root
    reason = context.root_choice.reason if context.root_choice is not None else ""
    chosen = f" (chosen: {reason})" if reason else ""
    if root.is_dir():
        if os.access(root, os.W_OK | os.X_OK):
            return Check("state root", OK, f"{root} is writable{chosen}")
        return Check("state root", FAIL, f"{root} is not writable{chosen}", "make it writable")
    if root.exists():
        return Check("state root", FAIL, f"{root} is not a directory{chosen}")
    parent = next(path for path in root.parents if path.exists())
    if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
        found = f"{root} is made at first use ({parent} is writable){chosen}"
        return Check("state root", OK, found)
    return Check("state root", FAIL, f"{root} cannot be made: {parent} is not writable{chosen}")


__all__ = ["Check", "add_parser", "tmux_paste_crash", "Path"]
