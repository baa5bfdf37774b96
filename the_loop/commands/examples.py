"""The examples every ``--help`` ends with, by command path (``""`` is the bare CLI).

Refs are quoted: an unquoted ``#`` starts a shell comment, and zsh globs it.
"""

from __future__ import annotations

REF = "'github:octo/app#15'"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        f"the-loop sessions start --work-item {REF}",
        "the-loop sessions list",
        "the-loop sessions --help",
    ),
    "init": (
        "the-loop init",
        "the-loop init --repo octo/app=/srv/git/app.git --harness command",
    ),
    "sessions": (
        f"the-loop sessions start --work-item {REF}",
        f"the-loop sessions attach --work-item {REF}",
        f"the-loop sessions stop --work-item {REF}",
    ),
    "sessions register": (
        f"the-loop sessions register --work-item {REF} --harness claude "
        "--harness-session-id 0b7c2e9a",
    ),
    "sessions link-pr": (
        f"the-loop sessions link-pr --work-item {REF} --pull-request 42",
        f"the-loop sessions link-pr --work-item {REF} --pull-request 'github:octo/app#42'",
    ),
    "sessions list": (
        "the-loop sessions list",
        "the-loop sessions list --status active --format json",
    ),
    "sessions spend": (
        "the-loop sessions spend",
        f"the-loop sessions spend --work-item {REF} --since 1d --format json",
    ),
    "sessions attach": (
        f"the-loop sessions attach --work-item {REF}",
        f"the-loop sessions attach --work-item {REF} --read-only",
    ),
    "sessions close": (
        f"the-loop sessions close --work-item {REF}",
        f"the-loop sessions close --work-item {REF} --keep-tmux",
    ),
    "sessions start": (
        f"the-loop sessions start --work-item {REF}",
        f"the-loop sessions start --work-item {REF} --harness claude --branch fix-15",
    ),
    "sessions pause": (f"the-loop sessions pause --work-item {REF}",),
    "sessions resume": (f"the-loop sessions resume --work-item {REF}",),
    "sessions stop": (f"the-loop sessions stop --work-item {REF}",),
    "sessions cleanup": (
        f"the-loop sessions cleanup --work-item {REF} --dry-run",
        f"the-loop sessions cleanup --work-item {REF}",
    ),
    "sessions reset": (
        "the-loop sessions reset --all --dry-run",
        f"the-loop sessions reset --work-item {REF}",
    ),
    "check": (
        "the-loop check",
        f"the-loop check --work-item {REF} --format json",
    ),
    "done": (
        "the-loop done requirements    # in the agent's checkout, requirements.md committed",
        "the-loop done design --format json",
    ),
    "events": (
        "the-loop events --type 'session.*' --since 1h",
        f"the-loop events --work-item {REF} --follow",
        "the-loop events --types",
    ),
    "state": (
        "the-loop state check",
        "the-loop state paths --format json",
    ),
    "state check": (
        "the-loop state check",
        "the-loop state check --no-discover --checkout ~/work/app",
    ),
    "state paths": ("the-loop state paths",),
    "state attributes": ("the-loop state attributes --format json",),
    "poll": (
        "the-loop poll --once",
        "the-loop poll --once --format json",
        "the-loop poll    # the daemon: a cycle every polling.intervalSeconds",
    ),
    "poll status": ("the-loop poll status", "the-loop poll status --format json"),
    "poll stop": ("the-loop poll stop",),
    "webhook": (
        "the-loop webhook --print-setup",
        "THE_LOOP_GH_WEBHOOK_SECRET=... the-loop webhook",
        "the-loop webhook --insecure",
    ),
    "serve": ("the-loop serve", "the-loop serve --port 0", "the-loop serve --host ::1"),
    "serve status": ("the-loop serve status", "the-loop serve status --format json"),
    "serve stop": ("the-loop serve stop",),
    "serve link": ("the-loop serve link", 'xdg-open "$(the-loop serve link)"'),
    "webhook status": ("the-loop webhook status", "the-loop webhook status --format json"),
    "webhook stop": ("the-loop webhook stop",),
    "completion": (
        "the-loop completion bash > ~/.local/share/bash-completion/completions/the-loop",
        'eval "$(the-loop completion zsh)"    # in ~/.zshrc, after compinit',
        "the-loop completion fish > ~/.config/fish/completions/the-loop.fish",
    ),
    "config": ("the-loop config check",),
    "config check": (
        "the-loop config check",
        "the-loop config check --config ci.yaml --format json",
    ),
    "docs": (
        "the-loop docs",
        "the-loop docs config",
        "the-loop docs poll --format json",
    ),
}


def epilog(lines: tuple[str, ...]) -> str:
    """The help epilog for ``lines``: ``examples:`` then each command, indented."""
    return "examples:\n" + "".join(f"  {line}\n" for line in lines)
