"""Capture the real Claude Code's screens and hook payloads, offline, against the fake API.

    .venv/bin/python scripts/capture_agent_screens.py OUT [SCENARIO ...]

Runs the pinned agent (``make agent``; ``THE_LOOP_TEST_CLAUDE`` names another) in tmux
(120x40) with a private HOME per scenario, and writes to ``OUT/<scenario>/``: the
screens (``*.txt``, from ``tmux capture-pane -p``), the hook payloads in order
(``hooks.jsonl``), the requests the fake saw (``requests.txt``) and what was observed
(``notes.txt``). With no scenario named, runs them all. The screens kept in
``tests/screens/claude-<version>/`` came from here; rerun it when the pin moves.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fake_anthropic import (  # noqa: E402 - after the path
    FakeAnthropic,
    Reply,
    after_tool_result,
    api_error,
    bash,
    rate_limited,
    running_fake_anthropic,
    text,
    tool_use,
    user_says,
    write_file,
)
from tests.helpers.claude_agent import (  # noqa: E402
    AgentHome,
    AgentPane,
    agent_env,
    agent_pane,
    claude_argv,
    git_repo,
    hook_logging_settings,
    hook_names,
    make_agent_home,
    read_hook_log,
)
from tests.helpers.tmuxsock import wait_until  # noqa: E402


class Capture:
    """One scenario's world: its directory, repository, HOME, fake, pane and hook log."""

    def __init__(
        self, out: Path, stack: ExitStack, env: dict[str, str] | None, state: dict[str, Any]
    ) -> None:
        self.out = out
        self.repo = git_repo(out / "repo")
        state.setdefault("trusted", [self.repo])
        self.home: AgentHome = make_agent_home(out / "home", **state)
        self.hook_log = out / "hooks.jsonl"
        self.settings = out / "hook-settings.json"
        self.settings.write_text(json.dumps(hook_logging_settings(self.hook_log)))
        self.fake: FakeAnthropic = stack.enter_context(running_fake_anthropic())
        self.pane: AgentPane = stack.enter_context(agent_pane())
        self.env = env
        self.notes: list[str] = []

    def start(self, *args: str) -> None:
        argv = claude_argv(*args, settings=self.settings)
        self.pane.start(argv, self.repo, agent_env(self.home, self.fake.url, extra=self.env))

    def restart(self, *args: str) -> None:
        """The agent again, in the same pane, HOME and fake."""
        argv = claude_argv(*args, settings=self.settings)
        env = agent_env(self.home, self.fake.url, extra=self.env)
        self.pane.respawn(argv, self.repo, env)

    def save(self, name: str, screen: str | None = None) -> str:
        screen = self.pane.screen() if screen is None else screen
        (self.out / name).write_text(screen, encoding="utf-8")
        return screen

    def note(self, *parts: object) -> None:
        line = " ".join(str(part) for part in parts)
        self.notes.append(line)
        print(f"  {line}")

    def event(self, name: str, count: int = 1, timeout: float = 15.0) -> bool:
        return wait_until(lambda: hook_names(self.hook_log).count(name) >= count, timeout)

    def exit(self) -> None:
        self.pane.say("/exit")
        wait_until(self.pane.dead, timeout=15)

    def finish(self) -> None:
        lines = [
            f"{r.method} {r.path} model={r.model} tools={len(r.tools)} "
            f"last_user={r.last_user_text()[-80:]!r}"
            for r in self.fake.requests
        ]
        (self.out / "requests.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (self.out / "notes.txt").write_text("\n".join(self.notes) + "\n", encoding="utf-8")
        names = hook_names(self.hook_log)
        (self.out / "events.txt").write_text(" ".join(names) + "\n", encoding="utf-8")


SCENARIOS: dict[str, Callable[[Path], None]] = {}


def scenario(function: Callable[[Path], None]) -> Callable[[Path], None]:
    SCENARIOS[function.__name__] = function
    return function


@contextmanager
def capture(out: Path, env: dict[str, str] | None = None, **state: Any) -> Iterator[Capture]:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with ExitStack() as stack:
        world = Capture(out, stack, env, state)
        try:
            yield world
        finally:
            world.finish()


def claude_json_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {
        k: after.get(k) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)
    }


@scenario
def turn(out: Path) -> None:
    """A prompt on the command line, its answer, the idle screen, /exit."""
    with capture(out) as c:
        c.fake.script(text("Hello from the fake, turn one."), when=user_says("say hello"))
        c.start("say hello")
        c.pane.wait_for("Hello from the fake, turn one.")
        c.event("Stop")
        c.save("idle.txt", c.pane.wait_idle())
        session = read_hook_log(c.hook_log)[0]["session_id"]
        c.note("transcript:", c.home.transcript(c.repo, session).exists())
        c.exit()
        c.save("after-exit.txt")
        c.note("exit status:", c.pane.exit_status())


@scenario
def working(out: Path) -> None:
    """A turn held by the fake; a paste + Enter while it runs (queued)."""
    gate = threading.Event()
    with capture(out) as c:
        c.fake.script(text("Finished the slow work.", gate=gate), when=user_says("slow"))
        c.fake.script(text("Answer to the queued message."), when=user_says("queued message"))
        c.start("do the slow thing")
        c.pane.wait_for("esc to interrupt")
        c.save("working.txt", c.pane.settle(1.0))
        c.pane.paste("this is a queued message pasted mid-turn")
        c.save("working-queued.txt", c.pane.wait_for("Queued"))
        c.note("hooks before the turn ends:", hook_names(c.hook_log))
        gate.set()
        c.pane.wait_for("Answer to the queued message.")
        c.event("Stop", 2)
        c.save("working-after.txt", c.pane.wait_idle())
        c.note("turns:", [t.last_user_text()[-40:] for t in c.fake.turns()])


@scenario
def interrupt(out: Path) -> None:
    """Esc while a turn runs."""
    gate = threading.Event()
    with capture(out) as c:
        c.fake.script(text("never shown", gate=gate), when=user_says("slow"))
        c.start("do the slow thing")
        c.pane.wait_for("esc to interrupt")
        c.pane.settle(1.0)
        c.pane.keys("Escape")
        c.save("interrupted-mid-turn.txt", c.pane.wait_idle())
        gate.set()


def _permission(out: Path, name: str, answer: str, screen: str) -> None:
    with capture(out) as c:
        c.fake.script(bash("touch made-by-agent.txt", "Create a file"), when=user_says("a file"))
        c.fake.script(text("Made the file."), when=after_tool_result())
        c.start("--permission-mode", "default", "make a file")
        c.pane.wait_for("Do you want to proceed?")
        c.save(screen, c.pane.settle())
        c.note("Notification within 10 s:", c.event("Notification", 1, 10))
        c.pane.keys(answer)
        c.save(f"after-{name}.txt", c.pane.wait_idle())
        c.event("Stop", 1, 3)
        c.note("file made:", (c.repo / "made-by-agent.txt").exists())
        c.note("requests:", len(c.fake.turns()))


@scenario
def permission_yes(out: Path) -> None:
    _permission(out, "yes", "1", "permission-bash.txt")


@scenario
def permission_no(out: Path) -> None:
    _permission(out, "no", "4", "permission-bash-no.txt")


@scenario
def permission_escape(out: Path) -> None:
    _permission(out, "escape", "Escape", "permission-bash-escape.txt")


@scenario
def permission_paste(out: Path) -> None:
    """A bracketed paste while the permission prompt shows, then Enter."""
    with capture(out) as c:
        c.fake.script(bash("touch made-by-agent.txt", "Create a file"), when=user_says("a file"))
        c.fake.script(text("Made it after the paste."), when=after_tool_result())
        c.start("--permission-mode", "default", "make a file")
        c.pane.wait_for("Do you want to proceed?")
        c.pane.settle()
        c.pane.paste("a comment pasted during the prompt, option 4", enter=False)
        c.save("permission-after-paste.txt", c.pane.settle())
        c.pane.keys("Enter")
        c.save("permission-after-paste-enter.txt", c.pane.wait_idle())
        c.note("file made:", (c.repo / "made-by-agent.txt").exists())
        c.note("turns:", [t.last_user_text()[-40:] for t in c.fake.turns()])


@scenario
def auto_mode_check(out: Path) -> None:
    """Auto mode (the default) asked to run a command its server-side safety check must
    see: through a gateway that does not pass the check on, it stops at a dialog."""
    with capture(out) as c:
        command = "git status && printf done > made-by-agent.txt && git add made-by-agent.txt"
        c.fake.script(bash(command, "Stage a file"), when=user_says("a file"))
        c.fake.script(text("Staged it."), when=after_tool_result())
        c.start("stage a file")
        c.pane.wait_for("Auto mode can't check actions", timeout=30)
        c.save("auto-mode-check.txt", c.pane.settle())
        c.note("file made:", (c.repo / "made-by-agent.txt").exists())
        c.note("events:", hook_names(c.hook_log))


@scenario
def permission_edit(out: Path) -> None:
    with capture(out) as c:
        target = c.repo / "hello.txt"
        c.fake.script(write_file(str(target), "hello\n"), when=user_says("write a file"))
        c.fake.script(text("Wrote it."), when=after_tool_result())
        c.start("--permission-mode", "default", "write a file")
        c.pane.wait_for("Do you want to create hello.txt?")
        c.save("permission-edit.txt", c.pane.settle())
        c.pane.keys("1")
        c.pane.wait_for("Wrote it.")
        c.note("written:", target.exists())


@scenario
def question(out: Path) -> None:
    """The AskUserQuestion tool."""
    asked = {
        "questions": [
            {
                "question": "Which approach should I take?",
                "header": "Approach",
                "multiSelect": False,
                "options": [
                    {"label": "Small fix", "description": "Patch only the failing line."},
                    {"label": "Refactor", "description": "Rewrite the module."},
                ],
            }
        ]
    }
    with capture(out) as c:
        c.fake.script(tool_use("AskUserQuestion", asked), when=user_says("ask me"))
        c.fake.script(text("Going with your choice."), when=after_tool_result())
        c.start("--permission-mode", "default", "ask me something")
        c.pane.wait_for("Which approach should I take?")
        c.save("question.txt", c.pane.settle())
        c.note("Notification within 10 s:", c.event("Notification", 1, 10))
        c.pane.keys("1")
        c.pane.wait_for("Going with your choice.")
        result = c.fake.turns()[-1].tool_results()
        c.note("tool result:", result[0].get("content") if result else None)


@scenario
def limit(out: Path) -> None:
    """A 429 the agent is told not to retry, then one it retries."""
    with capture(out) as c:
        c.fake.script(rate_limited(), when=user_says("hello"))
        c.start("hello there")
        c.pane.wait_for("429")
        c.save("rate-limit-429.txt", c.pane.wait_idle())
        c.event("StopFailure")
        c.exit()
    with capture(out.with_name("retrying")) as c:
        retry = api_error(429, "rate_limit_error", "Rate limited.", headers=(("retry-after", "2"),))
        c.fake.script(retry, when=user_says("hello"), times=2)
        c.fake.script(text("Through at last."), when=user_says("hello"))
        c.start("hello there")
        c.save("retrying.txt", c.pane.wait_for("retrying in"))
        c.pane.wait_for("Through at last.", timeout=40)
        c.note("requests:", len(c.fake.turns()))


def usage_limited(reset: float, claim: str) -> Reply:
    """The API's answer to a subscriber at a plan's usage limit: a 429 whose headers say
    the unified limit is rejected, which of its windows, and when it resets."""
    headers = (
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-reset", str(int(reset))),
        ("anthropic-ratelimit-unified-representative-claim", claim),
        ("x-should-retry", "false"),
    )
    message = "This request would exceed your account's rate limit. Please try again later."
    return api_error(429, "rate_limit_error", message, headers=headers)


def _subscriber(c: Capture, zone: str, auto_continue: bool | None) -> None:
    """Start the agent signed in with a subscription's token (no API key), in ``zone``,
    with its own continue at the limit as ``auto_continue`` says (None: its default)."""
    settings = hook_logging_settings(c.hook_log)
    if auto_continue is not None:
        settings["autoContinueAtUsageLimit"] = auto_continue
    c.settings.write_text(json.dumps(settings))
    extra = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-fake-subscriber", "TZ": zone}
    env = agent_env(c.home, c.fake.url, extra=extra)
    env.pop("ANTHROPIC_API_KEY")
    c.pane.start(claude_argv("hello there", settings=c.settings), c.repo, env)


@scenario
def usage_limit(out: Path) -> None:
    """A subscriber's plan limit: its dialog (the agent's own continue off), the dialog
    answered with its first option, a weekly limit's date, and the agent's own continue."""
    with capture(out) as c:
        c.fake.script(usage_limited(time.time() + 3600, "five_hour"), when=user_says("hello"))
        _subscriber(c, "Europe/Paris", auto_continue=False)
        c.save("limit-dialog.txt", c.pane.wait_for("Stop and wait for limit to reset"))
        c.event("StopFailure")
        c.pane.keys("1")
        c.save("limit-waiting.txt", c.pane.wait_idle())
        c.note(
            "hooks:",
            [
                (e["hook_event_name"], e.get("error"), e.get("last_assistant_message"))
                for e in read_hook_log(c.hook_log)
            ],
        )
    with capture(out.with_name("usage_limit_weekly")) as c:
        c.fake.script(usage_limited(time.time() + 3 * 86400, "seven_day"), when=user_says("hello"))
        _subscriber(c, "America/New_York", auto_continue=False)
        c.save("limit-weekly.txt", c.pane.wait_for("Stop and wait for limit to reset"))
    with capture(out.with_name("usage_limit_auto")) as c:
        c.fake.script(usage_limited(time.time() + 3600, "five_hour"), when=user_says("hello"))
        _subscriber(c, "UTC", auto_continue=None)
        c.save("limit-auto.txt", c.pane.wait_for("Continuing automatically at"))


@scenario
def busy(out: Path) -> None:
    """A turn the fake holds (the busy line alone changes), then a long Bash call."""
    gate = threading.Event()
    with capture(out) as c:
        c.fake.script(text("Held, then answered.", gate=gate), when=user_says("hold on"))
        c.fake.script(bash("sleep 8; echo slept", "Sleep a while"), when=user_says("sleep"))
        c.fake.script(text("Slept well."), when=after_tool_result())
        c.start("hold on")
        c.pane.wait_for("esc to interrupt")
        time.sleep(2)
        c.save("busy-early.txt")
        time.sleep(12)
        c.save("busy-later.txt")
        gate.set()
        c.pane.wait_for("Held, then answered.")
        c.pane.wait_idle()
        c.pane.say("now sleep")
        c.pane.wait_for("sleep 8")
        time.sleep(5)
        c.save("busy-tool.txt")
        c.pane.wait_for("Slept well.", timeout=30)


@scenario
def paste(out: Path) -> None:
    """A bracketed paste of 24,000 characters, then Enter; and of three short lines."""
    line = "The quick brown fox jumps over the lazy dog, again and again, line {:05d}.\n"
    body = "".join(line.format(i) for i in range(400))[:24000]
    with capture(out) as c:
        c.fake.script(text("Got the long text."), when=user_says("line 00001"))
        c.fake.script(text("Got three lines."), when=user_says("line two"))
        c.start()
        c.pane.wait_idle()
        c.pane.settle()
        c.pane.paste(body, enter=False)
        c.save("big-paste.txt", c.pane.wait_for("[Pasted text"))
        c.pane.keys("Enter")
        c.pane.wait_for("Got the long text.")
        c.event("Stop")
        sent = c.fake.turns()[-1].last_user_text()
        c.note("turns:", len(c.fake.turns()), "whole text sent:", body.strip() in sent)
        c.pane.paste("line one\nline two\nline three", enter=False)
        c.save("small-paste.txt", c.pane.wait_for("line three"))
        c.pane.keys("Enter")
        c.pane.wait_for("Got three lines.")
        c.note("prompts:", [e["prompt"][:60] for e in read_hook_log(c.hook_log) if "prompt" in e])


@scenario
def resume(out: Path) -> None:
    """--resume of a session with a turn, of one without, and of an unknown id."""
    with capture(out) as c:
        c.fake.script(text("First answer."), when=user_says("first question"))
        c.fake.script(text("Second answer."), when=user_says("second question"))
        c.start("first question")
        c.pane.wait_for("First answer.")
        c.event("Stop")
        session = read_hook_log(c.hook_log)[0]["session_id"]
        c.exit()
        c.restart("--resume", session)
        c.save("resume.txt", c.pane.wait_idle())
        c.pane.say("second question")
        c.pane.wait_for("Second answer.")
        c.event("Stop", 2)
        c.exit()
        c.note("resumed session id kept:", {e["session_id"] for e in read_hook_log(c.hook_log)})
        c.restart()
        c.event("SessionStart", 3)
        empty = read_hook_log(c.hook_log)[-1]["session_id"]
        c.exit()
        c.note("transcript of a session without a turn:", c.home.transcript(c.repo, empty).exists())
        c.restart("--resume", empty)
        wait_until(c.pane.dead, timeout=15)
        c.note("resume without a turn: exit", c.pane.exit_status())


@scenario
def dialogs(out: Path) -> None:
    """The trust and API-key dialogs: their screens, keys and what they write."""
    with capture(out / "trust", trusted=[]) as c:
        c.start("hello there")
        c.pane.wait_for("Yes, I trust this folder")
        c.save("trust.txt", c.pane.settle())
        before = c.home.claude_json()
        c.pane.choose("Yes, I trust this folder")
        c.pane.wait_for("OK from the fake.")
        c.note("changes:", json.dumps(claude_json_changes(before, c.home.claude_json())))
    with capture(out / "trust-refused", trusted=[]) as c:
        c.start("hello there")
        c.pane.wait_for("Yes, I trust this folder")
        c.pane.settle()
        c.pane.keys("Enter")
        wait_until(c.pane.dead, timeout=15)
        c.save("trust-refused.txt")
        c.note("exit status:", c.pane.exit_status())
    with capture(out / "api-key", api_key_approved=False) as c:
        c.start("hello there")
        c.pane.wait_for("Do you want to use this API key?")
        c.save("api-key.txt", c.pane.settle())
        before = c.home.claude_json()
        c.pane.choose("Yes", key="Up")
        c.pane.wait_for("OK from the fake.")
        c.note("changes:", json.dumps(claude_json_changes(before, c.home.claude_json())))


@scenario
def first_run(out: Path) -> None:
    """The bypass warning, the auto-mode notice and the onboarding of a new HOME."""
    with capture(out / "bypass", env={"IS_SANDBOX": "1"}) as c:
        c.start("--dangerously-skip-permissions", "hello there")
        c.pane.wait_for("Yes, I accept")
        c.save("bypass-warning.txt", c.pane.settle())
        c.pane.choose("Yes, I accept")
        c.pane.wait_for("OK from the fake.")
        c.note("settings:", c.home.settings_path.read_text())
    with capture(out / "notice", auto_notice_seen=False) as c:
        c.start()
        c.pane.wait_for("Auto mode is now")
        c.save("notice.txt", c.pane.wait_idle())
        c.note("hasSeenAutoDefaultNotice:", c.home.claude_json().get("hasSeenAutoDefaultNotice"))
    with capture(out / "onboarding", onboarded=False, trusted=[]) as c:
        c.start("hello there")
        c.pane.wait_for("Choose the text style")
        c.save("onboarding-theme.txt", c.pane.settle())
        before = c.home.claude_json()
        c.pane.keys("Enter")
        c.pane.wait_for("Press Enter to continue")
        c.save("onboarding-security.txt", c.pane.settle())
        c.pane.keys("Enter")
        c.pane.wait_for("Yes, I trust this folder")
        c.pane.choose("Yes, I trust this folder")
        c.pane.wait_for("OK from the fake.")
        changes = claude_json_changes(before, c.home.claude_json())
        c.note("changes:", json.dumps({k: changes[k] for k in changes if k != "projects"}))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or list(SCENARIOS)
    failed = 0
    for name in names:
        print(f"{name}:")
        started = time.monotonic()
        try:
            SCENARIOS[name](out / name)
        except Exception:
            failed += 1
            traceback.print_exc()
        print(f"  ({time.monotonic() - started:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
