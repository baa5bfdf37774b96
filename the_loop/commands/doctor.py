"""``the-loop doctor [--fix]``: can this machine run the loop unattended? One line per check.

The checks: tmux (and its dead-pane paste crash), git, the default harness's binary and
version, Claude Code's first-run answers, the GitHub token and each polled repository,
and the state root. ``--fix`` writes only the answers Claude Code itself writes when a
person gives them (:mod:`the_loop.agent.firstrun`), and says what it cannot fix.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from the_loop.agent import firstrun
from the_loop.commands.common import Context, format_parent, load_context
from the_loop.commands.examples import epilog
from the_loop.commands.render import Result
from the_loop.config.file import Config
from the_loop.dispatch import harnesses
from the_loop.dispatch.process import DispatchError, run
from the_loop.dispatch.settings import AgentEnvironment, agent_environment
from the_loop.errors import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from the_loop.github.client import GitHubClient

OK, INFO, WARN, FAIL = "ok", "info", "warn", "fail"
#: The longest ``tmux -V``, ``git --version`` or ``<harness> --version`` may take.
PROBE_TIMEOUT_SECONDS = 10.0
#: The longest one request to GitHub may take, from its connect to its last byte.
REQUEST_DEADLINE_SECONDS = 15.0
#: The first tmux whose server refuses a paste into a pane ``remain-on-exit`` kept rather
#: than crash: "Don't allow paste-buffer into dead panes", CHANGES FROM 3.3a TO 3.4
#: (tmux/tmux#3830, applied 2024-02-13).
TMUX_PASTE_FIXED = (3, 4)
TMUX_KEY = "routing.tmux.binary"
_TMUX_VERSION = re.compile(r"tmux (next-)?(\d+)\.(\d+)[a-z]?(-rc\d*)?")
FIX_REMEDY = "`the-loop doctor --fix` writes what Claude Code writes when a person answers"


@dataclasses.dataclass(frozen=True)
class Check:
    """One check's verdict: ``status`` (ok, info, warn, fail), what it found, and what a
    person can do about it (``remedy``; "" when nothing is to be done)."""

    check: str
    status: str
    found: str
    remedy: str = ""

    def line(self, *, with_remedy: bool) -> str:
        status = "FAIL" if self.status == FAIL else self.status
        remedy = f"; {self.remedy}" if with_remedy and self.remedy else ""
        return f"{status:<4}  {self.check}: {self.found}{remedy}"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``doctor``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        parents=[format_parent()],
        help="say whether this machine can run the loop unattended",
        description="Check, one line each, what an unattended loop needs: tmux (and whether "
        "its version crashes on a paste into a dead pane), git, the default harness's "
        "binary and version, Claude Code's first-run answers (onboarding, the API key, the "
        "bypass-permissions warning), the GitHub token and each repository "
        "polling.repositories names, and the state root. Exit 0 when nothing failed, 1 "
        "otherwise.",
        epilog=epilog(
            ("the-loop doctor", "the-loop doctor --fix", "the-loop doctor --format json")
        ),
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="write the answers Claude Code writes when a person answers its first-run "
        "dialogs, one line per change, and say what cannot be fixed",
    )
    parser.set_defaults(func=run_doctor)
    return parser


def run_doctor(args: argparse.Namespace) -> Result:
    """Every check, after ``--fix`` made its changes; exit 1 when one failed."""
    context = load_context(args)
    config = context.config
    fixed: list[dict[str, str]] = []
    checks = [
        tmux_check(config),
        tool_check("git", config, "routing.workspace.gitBinary", "--version"),
        *harness_checks(config, fix=args.fix, fixed=fixed),
        *github_checks(config, os.environ),
        state_root_check(context),
    ]
    failed = sum(check.status == FAIL for check in checks)
    warned = sum(check.status == WARN for check in checks)
    return Result(
        items=[dataclasses.asdict(check) for check in checks],
        text=lambda: _lines(checks, fixed, fix=args.fix),
        summary={"fix": bool(args.fix), "fixed": fixed, "failed": failed, "warned": warned},
        exit_code=EXIT_FAILED if failed else EXIT_OK,
    )


def _lines(checks: Sequence[Check], fixed: Sequence[dict[str, str]], *, fix: bool) -> list[str]:
    lines = [f"fixed {change['check']}: {change['change']} in {change['file']}" for change in fixed]
    lines += [check.line(with_remedy=not fix) for check in checks]
    if fix:
        unfixed = [check for check in checks if check.status in (WARN, FAIL)]
        lines += [f"cannot fix {check.check}: {check.remedy or check.found}" for check in unfixed]
    return lines


def _probe(name: str, binary: str, flag: str, key: str = "") -> tuple[str, str] | Check:
    """``(path, first line <binary> <flag> prints)``, or the failing check."""
    path = shutil.which(binary)
    if path is None:
        return Check(name, FAIL, f"{binary} is not on PATH", f"install it, or set {key}")
    try:
        completed = run([path, flag], timeout=PROBE_TIMEOUT_SECONDS)
    except DispatchError as error:
        return Check(name, FAIL, f"{path} is there, but {error}")
    lines = (completed.stdout.strip() or completed.stderr.strip()).splitlines()
    return path, lines[0].strip() if lines else "no version printed"


def tool_check(name: str, config: Config, key: str, flag: str) -> Check:
    """The tool ``key`` names found on PATH, and its version."""
    probed = _probe(name, config.get_str(key), flag, key)
    return probed if isinstance(probed, Check) else Check(name, OK, f"{probed[1]} at {probed[0]}")


def tmux_paste_crash(version: str) -> bool | None:
    """Whether the tmux that says ``version`` (``tmux -V``) crashes on a paste into a dead
    pane; None when its version does not say (``tmux master``, ``tmux openbsd-7.5``)."""
    match = _TMUX_VERSION.fullmatch(version.strip())
    if match is None:
        return None
    number = (int(match[2]), int(match[3]))
    before_release = bool(match[1] or match[4])  # next-3.4 and 3.4-rc come before 3.4
    return number < TMUX_PASTE_FIXED or (before_release and number == TMUX_PASTE_FIXED)


def tmux_check(config: Config) -> Check:
    """tmux found, its version, and whether that version has the dead-pane paste crash:
    a warning only, for the-loop checks the pane in the same command list as each paste."""
    probed = _probe("tmux", config.get_str(TMUX_KEY), "-V", TMUX_KEY)
    if isinstance(probed, Check):
        return probed
    path, version = probed
    crash = tmux_paste_crash(version)
    if crash:
        found = f"{version} at {path} crashes on a paste into a dead pane (fixed in tmux 3.4); "
        found += "the-loop checks the pane in the same command list as each paste"
        return Check("tmux", WARN, found, "install tmux 3.4 or later to be rid of it")
    unknown = " (its version does not say whether it has the dead-pane paste crash)"
    return Check("tmux", OK, f"{version} at {path}{unknown if crash is None else ''}")


def harness_checks(config: Config, *, fix: bool, fixed: list[dict[str, str]]) -> list[Check]:
    """The default harness's binary and version; for Claude Code, its first-run answers
    (whether or not its binary is there)."""
    name = config.get_str("routing.defaultHarness") or harnesses.ClaudeHarness.name
    harness = harnesses.harnesses_from_config(config).get(name)
    checks = [_harness_check(name, harness)]
    if isinstance(harness, harnesses.ClaudeHarness):
        checks += claude_checks(config, harness.args, fix=fix, fixed=fixed)
    return checks


def _harness_check(name: str, harness: harnesses.Harness | None) -> Check:
    path = None if harness is None else shutil.which(harness.binary)
    if harness is None or path is None:
        return Check("harness", FAIL, harnesses.cannot_run(name, harness and harness.binary))
    if isinstance(harness, harnesses.CommandHarness):  # any program: never run it just to ask
        return Check("harness", OK, f"{name}: {harness.binary} at {path}")
    probed = _probe("harness", path, "--version")
    if isinstance(probed, Check):
        return probed
    return Check("harness", OK, f"{name} {probed[1]} at {path}")


def claude_checks(
    config: Config, args: Sequence[str], *, fix: bool, fixed: list[dict[str, str]]
) -> list[Check]:
    """Claude Code's first-run answers in the files of the HOME its agents get (after
    ``--fix`` wrote what is missing), and its refusal of bypass mode as root."""
    env = {"HOME": os.path.expanduser("~"), **_agent_environment(config)}
    files = firstrun.claude_files(env)
    claude_json, settings, problem = firstrun.read_answers(files)
    if problem:
        remedy = "repair it or move it aside: --fix never writes a file it cannot read"
        return [Check("claude first run", FAIL, f"cannot read {problem}", remedy)]
    api_key = env.get(firstrun.API_KEY_VARIABLE)
    if fix:
        plan = firstrun.fixes(claude_json, api_key=api_key, args=args, settings=settings)
        firstrun.write_fixes(files, plan)
        claude_json, settings = plan.claude_json or claude_json, plan.settings or settings
        fixed += [{"check": "claude first run", **files.report(change)} for change in plan.changes]
    state = firstrun.first_run(claude_json, api_key=api_key, args=args, settings=settings)
    gaps, answered = state.gaps(), f"{', '.join(state.answered())} ({files.claude_json})"
    if gaps:
        checks = [Check("claude first run", FAIL, "; ".join(gaps), FIX_REMEDY)]
    else:
        checks = [Check("claude first run", OK, answered)]
    launch = firstrun.launch_problems(args, uid=os.getuid(), environ=env, settings=settings)
    return checks + [Check(*problem) for problem in launch]


def _agent_environment(config: Config) -> dict[str, str]:
    """The environment a Claude Code agent starts with, as the dispatcher builds it."""
    secrets = AgentEnvironment.from_config(config, ("claude",))
    passed = secrets.passed.get("claude", frozenset[str]())
    return agent_environment(os.environ, passed=passed, withheld=secrets.withheld_from("claude"))


def github_checks(config: Config, environ: Mapping[str, str]) -> list[Check]:
    """The token (GET /user answers) and each polled repository readable (its issues)."""
    from the_loop.github import poster

    named = config.get_str("integrations.github.tokenEnv", "")
    names = (named,) if named else poster.TOKEN_VARIABLES
    source = next((name for name in names if poster.token_from_environment(environ, name)), "")
    repositories = config.get_str_list("polling.repositories")
    if source:
        token = poster.token_from_environment(environ, source)
        return _ask_github(config, token, source, repositories)
    where = f"none set in {poster.token_sources(named)}"
    if not repositories:
        return [Check("github token", INFO, f"{where}; none is needed: no repository is polled")]
    found = f"{where}, and polling.repositories names {len(repositories)} to poll"
    return [Check("github token", FAIL, found, f"export one there ({poster.TOKEN_ACCESS})")]


def _ask_github(config: Config, token: str, source: str, names: Sequence[str]) -> list[Check]:
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
        for name in names:
            try:
                client.get(f"/repos/{name}/issues", {"state": "all", "per_page": 1})
            except GitHubHTTPError as error:
                checks.append(Check(f"github {name}", FAIL, f"not readable: {error}"))
            else:
                checks.append(Check(f"github {name}", OK, "readable (its issues answered)"))
    return checks


def _user_check(client: GitHubClient, source: str) -> Check:
    """GET /user: whose the token is. A 403 that is no rate limit only warns: an app's
    installation token is refused /user, yet may read every repository."""
    from the_loop.github.replies import GitHubHTTPError

    try:
        response = client.get("/user")
    except GitHubHTTPError as error:
        status = WARN if error.status == 403 and not error.rate_limited else FAIL
        return Check("github token", status, f"${source} is set, but {error}")
    who = "?"
    with contextlib.suppress(ValueError, KeyError, TypeError):
        who = str(json.loads(response.body)["login"])
    rate = response.rate
    left = f" ({rate.remaining} of {rate.limit} requests left)" if rate is not None else ""
    return Check("github token", OK, f"${source}: GitHub knows it as {who}{left}")


def state_root_check(context: Context) -> Check:
    """The state root found and writable (or, not made yet, its nearest parent writable)."""
    root = context.layout.root
    reason = context.root_choice.reason if context.root_choice is not None else ""
    chosen = f" (chosen: {reason})" if reason else ""
    if root.exists() and not root.is_dir():
        return Check("state root", FAIL, f"{root} is not a directory{chosen}")
    there = root if root.exists() else next(path for path in root.parents if path.exists())
    if not (there.is_dir() and os.access(there, os.W_OK | os.X_OK)):
        return Check("state root", FAIL, f"{there} is not writable{chosen}")
    found = f"{root} is writable" if there == root else f"{root} is made at first use, in {there}"
    return Check("state root", OK, found + chosen)
