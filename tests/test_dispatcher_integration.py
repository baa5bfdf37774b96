"""The dispatcher against real tmux (a private socket per test) and real git (a bare remote).

The agent is a stand-in run through the ``command`` harness: it prints its session id,
work item, model and effort, then sleeps until it is ended.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gitrepo import git, make_remote
from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from tests.helpers.world import World
from the_loop.config.file import Config
from the_loop.dispatch.dispatcher import Dispatcher
from the_loop.dispatch.factory import build_dispatcher
from the_loop.errors import TheLoopError
from the_loop.eventlog.query import query_events
from the_loop.fsio import write_json
from the_loop.portable.control import START, STOP
from the_loop.ref import WorkItemRef
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

REF = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")
TARGET = "loop-github-octo-app-15"
PR_TARGET = "loop-github-octo-lib-7"
#: Placeholders are elements of their own, so bash sees them as arguments, never as code.
AGENT = [
    "bash",
    "-c",
    'echo "agent $0 $1 model=$2 effort=$3"; sleep 300',
    "{session_id}",
    "{work_item}",
    "{model}",
    "{effort}",
]
STATE_FILE = f"docs/specs/{REF.slug}/work-item-state.json"


class Env(World):
    """One test's remote, workspace root, stores (the shared world) and tmux socket."""

    def __init__(self, tmp_path: Path, socket: str) -> None:
        super().__init__(tmp_path, source="test")
        self.tmp_path = tmp_path
        self.socket = socket
        self.root = tmp_path / "workspaces"
        self.events_path = self.layout.event_log
        self.remote: Path | None = None
        self._registry: SessionRegistry | None = None

    @property
    def registry(self) -> SessionRegistry:
        """The world's registry, unless a test put another in its place."""
        return self.stores.registry if self._registry is None else self._registry

    @registry.setter
    def registry(self, registry: SessionRegistry) -> None:
        self._registry = registry

    def dispatcher(
        self,
        files: dict[str, str] | None = None,
        on_warning: Callable[[str], None] | None = None,
        **routing: Any,
    ) -> Dispatcher:
        """A dispatcher on this env; ``routing`` entries are merged over the test defaults."""
        if self.remote is None:
            branches = {"feature": {"FEATURE.md": "feature work\n"}}
            self.remote = make_remote(self.tmp_path, files=files, branches=branches)
        settings: dict[str, Any] = {
            "defaultHarness": "command",
            "harnesses": {"command": {"argv": AGENT}},
            "workspace": {"root": str(self.root), "repositories": {"octo/app": str(self.remote)}},
            "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 5},
            "dispatchTimeoutSeconds": 60,
        }
        for key, value in routing.items():
            if isinstance(value, dict) and isinstance(settings.get(key), dict):
                settings[key] = {**settings[key], **value}
            else:
                settings[key] = value
        config = Config({"routing": settings})
        return build_dispatcher(
            config,
            registry=self.registry,
            control_store=self.control,
            events=self.events,
            on_warning=on_warning,
        )

    def events_named(self, name: str) -> list[dict[str, Any]]:
        if not self.events_path.exists():
            return []
        return [e for e in query_events(self.events_path).events if e["event"] == name]


@pytest.fixture
def env(tmp_path: Path, tmux_socket: str) -> Env:  # noqa: F811 - the imported fixture
    return Env(tmp_path, tmux_socket)


def shows(dispatcher: Dispatcher, target: str, text: str) -> bool:
    return text in dispatcher.tmux.capture(target)


def worktrees(env: Env) -> str:
    return git(env.root / "github.com" / "octo" / "app", "worktree", "list")


# -- spawn ---------------------------------------------------------------------------


def test_a_spawned_session_runs_live_in_tmux_inside_its_own_worktree(env: Env) -> None:
    dispatcher = env.dispatcher()

    result = dispatcher.spawn(REF, actor="alice")

    checkout = env.root / ".worktrees" / "github.com" / "octo" / "app" / REF.slug
    assert result.checkout == checkout and result.created_checkout is True
    assert (checkout / "README.md").is_file()
    assert str(checkout) in worktrees(env)
    session = result.session
    assert (session.harness, session.tmux_target, session.cwd) == ("command", TARGET, str(checkout))
    assert session.is_live and session.harness_session_id
    assert env.registry.find_by_work_item(REF) == session
    assert dispatcher.liveness(session) == "live"
    expected = f"agent {session.harness_session_id} {REF.ref}"
    assert wait_until(lambda: shows(dispatcher, TARGET, expected))
    control = env.control.get(REF)
    assert control is not None
    assert (control.command, control.source, control.actor) == (START, "cli", "alice")
    [spawned] = env.events_named("session.spawned")
    assert spawned["tmux_target"] == TARGET and spawned["cwd"] == str(checkout)


def test_spawn_without_a_workspace_runs_in_the_spawn_workdir(env: Env) -> None:
    workdir = env.tmp_path / "here"
    workdir.mkdir()
    dispatcher = env.dispatcher(workspace={"root": ""}, spawnWorkdir=str(workdir))
    result = dispatcher.spawn(REF)
    assert result.checkout is None and result.created_checkout is False
    assert result.session.cwd == str(workdir)
    assert dispatcher.close_session(result.session).checkout_removed is False
    assert workdir.is_dir()


def test_the_clone_strategy_gives_each_item_a_full_clone_that_close_removes(env: Env) -> None:
    dispatcher = env.dispatcher(workspace={"strategy": "clone"})
    result = dispatcher.spawn(REF, branch="feature")
    clone = env.root / ".work-items" / REF.slug / "github.com" / "octo" / "app"
    assert result.checkout == clone
    assert (clone / ".git").is_dir()
    assert git(clone, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"

    assert dispatcher.close_session(result.session).checkout_removed is True
    assert not clone.exists()
    assert not (env.root / ".work-items" / REF.slug).exists()


def test_two_refs_sharing_a_slug_never_share_a_tmux_session(env: Env) -> None:
    first = WorkItemRef.parse("github:octo-a/b#1")
    second = WorkItemRef.parse("github:octo/a-b#1")
    assert first.slug == second.slug
    remote = str(make_remote(env.tmp_path, name="shared"))
    repositories = {"octo-a/b": remote, "octo/a-b": remote}
    dispatcher = env.dispatcher(workspace={"repositories": repositories})

    one = dispatcher.spawn(first).session
    two = dispatcher.spawn(second).session

    assert one.tmux_target == f"loop-{first.slug}"
    assert two.tmux_target == f"loop-{second.disambiguated_slug}"
    assert dispatcher.liveness(one) == "live" and dispatcher.liveness(two) == "live"
    assert one.cwd != two.cwd
    dispatcher.close_session(two, keep_tmux=False)
    assert dispatcher.liveness(one) == "live"
    assert Path(one.cwd).is_dir()


# -- frozen choices --------------------------------------------------------------------


def test_model_and_effort_from_the_state_file_in_the_checkout_reach_the_agent(env: Env) -> None:
    state = {"version": 2, "workItem": REF.ref, "model": "opus", "effort": "high"}
    files = {"README.md": "# app\n", STATE_FILE: json.dumps(state)}
    write_json(env.store.path_for(REF), {"ref": REF.ref, "graph": {"model": "sonnet"}})
    dispatcher = env.dispatcher(files=files, model="haiku", effort="low")

    session = dispatcher.spawn(REF).session

    assert (session.model, session.effort) == ("opus", "high")
    assert wait_until(lambda: shows(dispatcher, TARGET, "model=opus effort=high"))
    stored = env.registry.find_by_work_item(REF)
    assert stored is not None and (stored.model, stored.effort) == ("opus", "high")


def test_one_unusable_pull_request_entry_does_not_cost_the_agent_its_frozen_choices(
    env: Env,
) -> None:
    bad = {"ref": "github:octo/lib#7", "repository": "../etc"}
    state = {"version": 2, "model": "opus", "effort": "high", "pullRequests": [bad]}
    files = {"README.md": "# app\n", STATE_FILE: json.dumps(state)}
    warnings: list[str] = []
    dispatcher = env.dispatcher(files=files, on_warning=warnings.append, model="haiku")

    session = dispatcher.spawn(REF).session

    assert (session.model, session.effort) == ("opus", "high")
    assert any("pullRequests[0] skipped" in warning for warning in warnings)


def test_the_retired_graph_section_is_the_fallback_per_field(env: Env) -> None:
    state = {"version": 2, "workItem": REF.ref, "model": "opus"}
    files = {"README.md": "# app\n", STATE_FILE: json.dumps(state)}
    graph = {"frozenGraph": {"model": "sonnet", "effort": "medium"}}
    write_json(env.store.path_for(REF), {"ref": REF.ref, "graph": graph})
    dispatcher = env.dispatcher(files=files, model="haiku", effort="low")

    session = dispatcher.spawn(REF).session

    assert (session.model, session.effort) == ("opus", "medium")
    assert wait_until(lambda: shows(dispatcher, TARGET, "model=opus effort=medium"))


def test_config_defaults_apply_when_nothing_was_frozen(env: Env) -> None:
    dispatcher = env.dispatcher(model="haiku", effort="low")
    session = dispatcher.spawn(REF).session
    assert (session.model, session.effort) == ("haiku", "low")
    assert wait_until(lambda: shows(dispatcher, TARGET, "model=haiku effort=low"))


# -- close -----------------------------------------------------------------------------


def test_close_ends_the_harness_keeps_the_transcript_and_removes_the_worktree(env: Env) -> None:
    dispatcher = env.dispatcher()
    result = dispatcher.spawn(REF)
    assert wait_until(lambda: shows(dispatcher, TARGET, "agent "))

    assert dispatcher.close_session(result.session, reason="done").checkout_removed is True

    record = env.registry.find_by_work_item(REF, include_closed=True)
    assert record is not None and record.status == "closed"
    assert dispatcher.liveness(record) == "dead"
    assert dispatcher.tmux.pane_pids(TARGET) == []
    assert "agent " in dispatcher.tmux.capture(TARGET)
    assert result.checkout is not None and not result.checkout.exists()
    assert str(result.checkout) not in worktrees(env)
    assert [e["tmux_target"] for e in env.events_named("session.retained")] == [TARGET]
    assert [e["path"] for e in env.events_named("workspace.cleaned")] == [str(result.checkout)]
    assert env.events_named("session.closed")[0]["reason"] == "done"


def test_close_keeps_the_worktree_when_configured_and_then_returns_false(env: Env) -> None:
    dispatcher = env.dispatcher(workspace={"keepCheckoutOnClose": True})
    result = dispatcher.spawn(REF)
    assert dispatcher.close_session(result.session).checkout_removed is False
    assert result.checkout is not None and (result.checkout / "README.md").is_file()
    assert env.events_named("workspace.cleaned") == []


def test_close_kills_the_tmux_session_when_it_is_not_kept(env: Env) -> None:
    dispatcher = env.dispatcher(tmux={"keepSessionOnClose": False})
    result = dispatcher.spawn(REF)
    assert dispatcher.close_session(result.session).checkout_removed is True
    assert dispatcher.tmux.liveness(TARGET) == "absent"
    assert env.events_named("session.retained") == []


def test_keep_tmux_false_overrides_the_config_for_one_close(env: Env) -> None:
    dispatcher = env.dispatcher()
    result = dispatcher.spawn(REF)
    dispatcher.close_session(result.session, keep_tmux=False)
    assert dispatcher.tmux.liveness(TARGET) == "absent"


def test_close_with_kill_harness_off_keeps_the_agent_running(env: Env) -> None:
    dispatcher = env.dispatcher(tmux={"killHarnessOnClose": False})
    result = dispatcher.spawn(REF)
    dispatcher.close_session(result.session)
    assert dispatcher.tmux.liveness(TARGET) == "live"


def test_close_ends_every_pr_endpoint_with_its_own_tmux_session(env: Env) -> None:
    dispatcher = env.dispatcher()
    result = dispatcher.spawn(REF)
    assert result.checkout is not None
    dispatcher.tmux.spawn(PR_TARGET, result.checkout, ["bash", "-c", "echo pr-agent; sleep 300"])
    endpoint = Session(PR, "command", "pr-id", cwd=str(result.checkout), tmux_target=PR_TARGET)
    env.registry.save_endpoint(REF, endpoint)

    assert dispatcher.close_session(result.session).checkout_removed is True

    assert dispatcher.tmux.liveness(PR_TARGET) == "dead"
    assert dispatcher.tmux.liveness(TARGET) == "dead"
    record = env.registry.find_by_work_item(REF, include_closed=True)
    assert record is not None
    assert [item.status for item in record.endpoints()] == ["closed", "closed"]
    retained = [e["tmux_target"] for e in env.events_named("session.retained")]
    assert retained == [PR_TARGET, TARGET]


def test_a_pr_endpoint_session_is_killed_too_when_tmux_is_not_kept(env: Env) -> None:
    dispatcher = env.dispatcher()
    result = dispatcher.spawn(REF)
    assert result.checkout is not None
    dispatcher.tmux.spawn(PR_TARGET, result.checkout, ["bash", "-c", "sleep 300"])
    endpoint = Session(PR, "command", "pr-id", cwd=str(result.checkout), tmux_target=PR_TARGET)
    env.registry.save_endpoint(REF, endpoint)
    dispatcher.close_session(result.session, keep_tmux=False)
    assert dispatcher.tmux.liveness(PR_TARGET) == "absent"
    assert dispatcher.tmux.liveness(TARGET) == "absent"


def test_an_already_gone_tmux_session_and_checkout_are_success(env: Env) -> None:
    dispatcher = env.dispatcher()
    result = dispatcher.spawn(REF)
    assert result.checkout is not None
    dispatcher.tmux.kill(TARGET)
    dispatcher.workspace.remove(result.checkout)

    assert dispatcher.close_session(result.session).checkout_removed is False

    record = env.registry.find_by_work_item(REF, include_closed=True)
    assert record is not None and record.status == "closed"
    assert env.events_named("session.retained") == []


# -- spawn failures leave nothing behind -----------------------------------------------


def assert_nothing_left(env: Env, dispatcher: Dispatcher) -> None:
    assert env.registry.find_by_work_item(REF, include_closed=True) is None
    assert dispatcher.tmux.liveness(TARGET) == "absent"
    assert not (env.root / ".worktrees" / "github.com" / "octo" / "app" / REF.slug).exists()
    assert not (env.root / ".work-items").exists()


def test_a_missing_harness_binary_fails_the_spawn_and_restores_control(env: Env) -> None:
    env.control.record(REF, STOP, source="comment", actor="bob")
    previous = env.control.get(REF)
    missing = ["no-such-agent-binary-for-the-loop", "{session_id}"]
    dispatcher = env.dispatcher(harnesses={"command": {"argv": missing}})

    with pytest.raises(TheLoopError, match="no-such-agent-binary-for-the-loop") as raised:
        dispatcher.spawn(REF, actor="alice")

    assert raised.value.exit_code == 1
    assert_nothing_left(env, dispatcher)
    assert env.control.get(REF) == previous
    [failed] = env.events_named("session.spawn_failed")
    assert failed["step"] == "harness" and failed["work_item"] == REF.ref


def test_a_branch_that_does_not_exist_fails_the_spawn_and_clears_its_start(env: Env) -> None:
    dispatcher = env.dispatcher()
    with pytest.raises(TheLoopError, match="no-such-branch"):
        dispatcher.spawn(REF, branch="no-such-branch")
    assert_nothing_left(env, dispatcher)
    assert env.control.get(REF) is None
    assert not env.store.path_for(REF).exists()
    [failed] = env.events_named("session.spawn_failed")
    assert failed["step"] == "checkout"


def test_a_live_tmux_session_holding_the_name_is_refused_and_left_alone(env: Env) -> None:
    dispatcher = env.dispatcher()
    dispatcher.tmux.spawn(TARGET, env.tmp_path, ["bash", "-c", "echo squatter; sleep 300"])

    with pytest.raises(TheLoopError, match=r"sessions cleanup --work-item 'github:octo/app#15'"):
        dispatcher.spawn(REF)

    assert dispatcher.tmux.liveness(TARGET) == "live"
    assert wait_until(lambda: shows(dispatcher, TARGET, "squatter"))
    assert env.registry.find_by_work_item(REF, include_closed=True) is None
    assert not (env.root / ".worktrees").exists()
    assert env.control.get(REF) is None


def test_a_failure_after_tmux_started_kills_it_and_removes_the_new_checkout(env: Env) -> None:
    blocked = env.tmp_path / "blocked"
    blocked.write_text("a file where the registry directory should be\n")
    env.registry = SessionRegistry(blocked / "local", locks_dir=env.tmp_path / "locks")
    dispatcher = env.dispatcher()

    with pytest.raises(TheLoopError, match="registering the session failed"):
        dispatcher.spawn(REF)

    [failed] = env.events_named("session.spawn_failed")
    assert failed["step"] == "register"

    assert dispatcher.tmux.liveness(TARGET) == "absent"
    assert not (env.root / ".worktrees" / "github.com" / "octo" / "app" / REF.slug).exists()
    assert env.control.get(REF) is None


def test_a_live_record_is_refused_without_touching_its_tmux_session(env: Env) -> None:
    dispatcher = env.dispatcher()
    first = dispatcher.spawn(REF)
    with pytest.raises(TheLoopError, match="already has a live"):
        dispatcher.spawn(REF)
    assert env.registry.find_by_work_item(REF) == first.session
    assert dispatcher.liveness(first.session) == "live"
    assert first.checkout is not None and first.checkout.is_dir()


def test_a_closed_record_is_replaced_by_a_new_spawn(env: Env) -> None:
    dispatcher = env.dispatcher()
    first = dispatcher.spawn(REF)
    dispatcher.close_session(first.session)
    second = dispatcher.spawn(REF)
    assert second.session.harness_session_id != first.session.harness_session_id
    assert dispatcher.liveness(second.session) == "live"
    assert second.created_checkout is True


# -- resume, attach, build -------------------------------------------------------------


def test_resume_restarts_a_dead_harness_with_the_same_session_id(env: Env) -> None:
    dispatcher = env.dispatcher()
    session = dispatcher.spawn(REF).session
    env.registry.pause(REF)
    dispatcher.tmux.kill(TARGET)

    resumed = dispatcher.resume_session(session, actor="alice")

    assert resumed.status == "active"
    assert resumed.harness_session_id == session.harness_session_id
    assert dispatcher.liveness(resumed) == "live"
    assert wait_until(lambda: shows(dispatcher, TARGET, f"agent {session.harness_session_id}"))


def test_resume_leaves_a_live_harness_running(env: Env) -> None:
    dispatcher = env.dispatcher()
    session = dispatcher.spawn(REF).session
    env.registry.pause(REF)
    pids = dispatcher.tmux.pane_pids(TARGET)
    assert dispatcher.resume_session(session).status == "active"
    assert dispatcher.tmux.pane_pids(TARGET) == pids


def test_attach_argv_targets_the_private_socket_and_the_exact_session(env: Env) -> None:
    dispatcher = env.dispatcher()
    session = dispatcher.spawn(REF).session
    argv = dispatcher.attach_argv(session, read_only=True)
    assert argv == ["tmux", "-L", env.socket, "attach-session", "-r", "-t", f"={TARGET}"]
    with pytest.raises(TheLoopError, match="no tmux session"):
        dispatcher.attach_argv(Session(PR, "command", "x"), read_only=False)


def test_a_missing_tmux_binary_means_no_dispatcher(env: Env) -> None:
    with pytest.raises(TheLoopError, match="tmux binary"):
        env.dispatcher(tmux={"binary": "no-such-tmux-for-the-loop"})


def test_the_test_server_is_private(env: Env) -> None:
    dispatcher = env.dispatcher()
    dispatcher.spawn(REF)
    listed = subprocess.run(
        ["tmux", "-L", env.socket, "list-sessions", "-F", "#{session_name}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert listed.stdout.split() == [TARGET]
