"""``the-loop init``: write a commented ``.the-loop/cli-config.yaml`` in the working directory.

It refuses to overwrite an existing file (exit 1, nothing touched) and prints the
next three commands. What it writes validates against the schema, like every config,
and names no path of this machine: one inside the project is relative to the config's
directory, and a clone source outside it goes to ``local/clone-sources.json``, which
never travels (decision 023). Beside it goes the ``.gitignore`` that keeps everything
but the config and ``portable/`` out of a commit (an existing one is kept as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.commands.common import format_parent
from the_loop.commands.init_sources import placed_sources
from the_loop.commands.render import Result, warn
from the_loop.config.clone_sources import add_clone_sources
from the_loop.config.file import CONFIG_NAME, STATE_DIR_NAME, validate
from the_loop.dispatch.harnesses import PLACEHOLDER_AGENT
from the_loop.errors import TheLoopError, UsageError, quoted
from the_loop.layout import GITIGNORE_NAME, STATE_ROOT_GITIGNORE, WORKSPACES_DIR

HARNESS_CHOICES = ("claude", "cursor", "command")
_REPOSITORY = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``init``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "init",
        parents=[format_parent()],
        help="write a commented .the-loop/cli-config.yaml here",
        description="Write a commented .the-loop/cli-config.yaml in the working directory "
        "(never over an existing one) and the .the-loop/.gitignore that keeps all but it "
        "and portable/ out of a commit, then print the next three commands. Every key is "
        "described by `the-loop docs config`.",
    )
    parser.add_argument(
        "--repo",
        metavar="OWNER/NAME=PATH|URL",
        action="append",
        default=[],
        type=repository_argument,
        help="clone OWNER/NAME from PATH or URL (routing.workspace.repositories; repeatable)",
    )
    parser.add_argument(
        "--harness",
        choices=HARNESS_CHOICES,
        default="claude",
        help="the agent sessions start runs (routing.defaultHarness; default: claude)",
    )
    parser.add_argument(
        "--poll",
        metavar="OWNER/NAME",
        action="append",
        default=[],
        type=repository_name,
        help="a repository `the-loop poll` watches (polling.repositories; repeatable)",
    )
    parser.add_argument(
        "--label",
        metavar="LABEL",
        action="append",
        default=[],
        type=word_argument("label"),
        help="a label an issue needs to be watched (polling.labels; repeatable)",
    )
    parser.add_argument(
        "--authorized",
        metavar="LOGIN",
        action="append",
        default=[],
        type=word_argument("login"),
        help="a GitHub login whose keyword comments command (routing.authorizedUsers; repeatable)",
    )
    parser.set_defaults(func=run_init)
    return parser


def repository_name(text: str) -> str:
    """``OWNER/NAME``, as GitHub spells a repository."""
    if not _REPOSITORY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not OWNER/NAME (e.g. octo/app)")
    return text


def word_argument(what: str) -> Any:
    """An argparse ``type`` for one non-blank value without control characters."""

    def parse(text: str) -> str:
        if not text.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not a {what}")
        return text.strip()

    return parse


def repository_argument(text: str) -> tuple[str, str]:
    """``OWNER/NAME=PATH|URL``, the source as given (see :func:`placed_sources`)."""
    name, equals, source = text.partition("=")
    if not equals or not _REPOSITORY.fullmatch(name) or not source.strip():
        raise argparse.ArgumentTypeError(
            f"{quoted(text)} is not OWNER/NAME=PATH|URL (e.g. octo/app=/srv/git/app.git)"
        )
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in source):
        raise argparse.ArgumentTypeError(f"{quoted(text)}: the source holds a control character")
    return name, source


def run_init(args: argparse.Namespace) -> Result:
    """Write the config (refusing an existing one) and say what to run next."""
    directory = Path.cwd() / STATE_DIR_NAME
    path = directory / CONFIG_NAME
    if os.path.lexists(path):
        raise TheLoopError(
            f"{path} already exists: edit it (`the-loop docs config` lists every key), "
            "or move it away to start over"
        )
    enclosing = _enclosing_state_root(directory)
    repositories, machine = placed_sources(args.repo, directory)
    polling = Polling(tuple(args.poll), tuple(args.label), tuple(args.authorized))
    text = config_text(args.harness, repositories, WORKSPACES_DIR, polling)
    _check(text, path)
    # before the config, so a config is never there without them
    machine_file = add_clone_sources(path, machine) if machine else None
    _write_new(path, text)
    ignore = directory / GITIGNORE_NAME
    ignored = _write_gitignore(ignore)
    example = next(iter([*(name for name, _ in args.repo), *polling.repositories]), "OWNER/REPO")
    ref = f"'github:{example}#1'"
    commands = [
        f"$EDITOR {path}",
        f"the-loop sessions start --work-item {ref}",
        f"the-loop sessions attach --work-item {ref}",
    ]
    if enclosing is not None:
        warn(
            f"{directory} is a new state root inside the project of {enclosing}: commands "
            f"run at or below {directory.parent} use it, and no longer see that one"
        )
    lines = [
        f"wrote {path}",
        f"wrote {ignore}" if ignored == "written" else _kept(ignore),
        *([f"wrote {machine_file}"] if machine_file else []),
        "next:",
        *(f"  {command}" for command in commands),
    ]
    items: tuple[dict[str, Any], ...] = (
        {"path": str(path), "outcome": "written", "next": commands},
        {"path": str(ignore), "outcome": ignored, "next": []},
        *([{"path": str(machine_file), "outcome": "written", "next": []}] if machine_file else []),
    )
    return Result(items=items, text=lambda: lines)


def _kept(ignore: Path) -> str:
    return (
        f"kept {ignore} as it was: it should track only portable/, {CONFIG_NAME} and "
        "itself (the block: `the-loop docs state`)"
    )


def _enclosing_state_root(directory: Path) -> Path | None:
    """The nearest ``.the-loop/`` above ``directory``'s parent, which the new one hides;
    never ``$HOME/.the-loop``, the per-user default every project stands in front of."""
    home = os.environ.get("HOME", "")
    per_user = Path(home) / STATE_DIR_NAME if home else None
    for parent in directory.parent.parents:
        candidate = parent / STATE_DIR_NAME
        if candidate.is_dir():
            return None if candidate == per_user else candidate
    return None


@dataclass(frozen=True)
class Polling:
    """What ``init`` was told for the poller: repositories, labels, who may command."""

    repositories: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    authorized: tuple[str, ...] = ()


def config_text(
    harness: str, repositories: dict[str, str], workspaces: str, polling: Polling = Polling()
) -> str:
    """The commented YAML ``init`` writes (every value JSON-quoted, which YAML reads);
    each top-level section once, so nothing needs merging by hand."""
    lines = [
        "# the-loop CLI config, written by `the-loop init`. Every key is optional; a key",
        "# left out has its default. `the-loop docs config` describes every key.",
        "#",
        "# The state root is the .the-loop/ directory holding this file: every command",
        "# run at or below this directory uses it (`the-loop state paths` shows it).",
        "routing:",
        "  # The agent `sessions start` runs: claude, cursor or command.",
        f"  defaultHarness: {harness}",
        *_harness_lines(harness),
        "  workspace:",
        "    # Each work item gets its own checkout under here (.gitignore keeps it out",
        '    # of version control). "" runs the agent in the working directory instead.',
        "    # A relative path here is relative to this file's directory.",
        f"    root: {json.dumps(workspaces)}",
        "    # Where to clone each OWNER/REPO from: a URL, or a local path relative to this",
        "    # file's directory. A path of one machine (outside the project) goes in",
        "    # local/clone-sources.json beside this file, which never travels: there each",
        '    # machine sets its own ({"version": 1, "repositories": {"OWNER/REPO": "PATH"}}).',
        "    # Unlisted ones come from https://github.com/OWNER/REPO.git (see cloneProtocol,",
        "    # defaultHost).",
        *_repository_lines(repositories),
        "  # The GitHub logins whose `the-loop <verb>` comments command a session.",
        f"  authorizedUsers: {_json_list(polling.authorized)}",
        "polling:",
        "  # The repositories `the-loop poll` watches, and the labels an open issue needs",
        "  # to be watched ([]: every open issue).",
        f"  repositories: {_json_list(polling.repositories)}",
        f"  labels: {_json_list(polling.labels)}",
    ]
    return "\n".join(lines) + "\n"


def _json_list(values: tuple[str, ...]) -> str:
    return json.dumps(list(dict.fromkeys(values)))


def _harness_lines(harness: str) -> list[str]:
    if harness != "command":
        return []
    return [
        "  harnesses:",
        "    command:",
        "      # The argv that starts your agent; {session_id}, {work_item}, {prompt},",
        "      # {model} and {effort} are replaced in each element.",
        f'      argv: ["{PLACEHOLDER_AGENT}", "--session", "{{session_id}}", '
        '"--work-item", "{work_item}"]',
    ]


def _repository_lines(repositories: dict[str, str]) -> list[str]:
    if not repositories:
        return ["    repositories: {}"]
    return [
        "    repositories:",
        *(f"      {name}: {json.dumps(source)}" for name, source in repositories.items()),
    ]


def _check(text: str, path: Path) -> None:
    """What init writes must be a valid config; anything else is a bug caught here."""
    from the_loop.config.yaml import parse_yaml

    try:
        validate(parse_yaml(text), path)
    except (ValueError, UsageError) as error:
        raise UsageError(f"cannot write {path}: {error}") from error


def _write_new(path: Path, text: str) -> None:
    """Create the directory and write the file atomically; a file that appears meanwhile
    is not replaced."""
    from the_loop.fsio import make_directory, write_text

    make_directory(path.parent)
    if os.path.lexists(path):
        raise TheLoopError(f"{path} already exists: edit it, or move it away to start over")
    write_text(path, text)


def _write_gitignore(path: Path) -> str:
    """Write the state root's ``.gitignore`` unless one is there (an operator's, kept
    whatever it holds): ``written`` or ``kept``."""
    from the_loop.fsio import write_text

    if os.path.lexists(path):
        return "kept"
    write_text(path, STATE_ROOT_GITIGNORE)
    return "written"
