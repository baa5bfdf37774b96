"""A failed spawn undoes only what it made and nobody adopted; a refused one touches nothing.

Real tmux (a private socket) and real git (a bare remote), as in the dispatcher's
integration tests; a registry subclass lets someone else act at the moment the spawn
registers, the way a concurrent command would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import tmux_socket  # noqa: F401 - fixture
from tests.test_dispatcher_integration import REF, TARGET, Env
from the_loop.errors import TheLoopError
from the_loop.portable.control import PAUSE, START, STOP
from the_loop.sessions.registry import SessionRegistry
from the_loop.sessions.session import Session

CHECKOUT_PARTS = (".worktrees", "github.com", "octo", "app", REF.slug)


class InterruptedRegistry(SessionRegistry):
    """A registry that runs ``meanwhile`` once, just before the spawn's registration."""

    def __init__(self, root: Path, meanwhile: Callable[[Session], None], **kwargs: object) -> None:
        super().__init__(root, **kwargs)  # type: ignore[arg-type]
        self.meanwhile: Callable[[Session], None] | None = meanwhile

    def register(self, session: Session, force: bool = False) -> Session:
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            meanwhile(session)
        return super().register(session, force)


@pytest.fixture
def env(tmp_path: Path, tmux_socket: str) -> Env:  # noqa: F811 - the imported fixture
    return Env(tmp_path, tmux_socket)


def interrupt(env: Env, meanwhile: Callable[[Session], None]) -> None:
    env.registry = InterruptedRegistry(
        env.tmp_path / "state" / "local", meanwhile, events=env.events
    )


def checkout(env: Env) -> Path:
    return env.root.joinpath(*CHECKOUT_PARTS)


def test_a_failed_spawn_keeps_a_checkout_a_live_record_adopted_meanwhile(env: Env) -> None:
    def register_by_hand(session: Session) -> None:
        SessionRegistry.register(env.registry, Session(REF, "claude", "by-hand", cwd=session.cwd))

    interrupt(env, register_by_hand)
    dispatcher = env.dispatcher()

    with pytest.raises(TheLoopError, match="registering the session failed"):
        dispatcher.spawn(REF)

    assert dispatcher.tmux.liveness(TARGET) == "absent"
    assert (checkout(env) / ".git").exists()
    record = env.registry.find_by_work_item(REF)
    assert record is not None and record.harness_session_id == "by-hand"


def test_a_failed_spawn_keeps_a_command_recorded_meanwhile(env: Env) -> None:
    env.control.record(REF, PAUSE, actor="octocat")

    def stop_then_fail(_session: Session) -> None:
        env.control.record(REF, STOP, actor="bob")
        raise OSError(28, "No space left on device")

    interrupt(env, stop_then_fail)
    dispatcher = env.dispatcher()

    with pytest.raises(TheLoopError, match="No space left on device"):
        dispatcher.spawn(REF)

    recorded = env.control.get(REF)
    assert recorded is not None and (recorded.command, recorded.actor) == (STOP, "bob")
    assert dispatcher.tmux.liveness(TARGET) == "absent"
    assert not checkout(env).exists()


def test_a_failed_spawn_rolls_back_its_own_start_when_nobody_wrote_since(env: Env) -> None:
    previous = env.control.record(REF, PAUSE, actor="octocat")

    def fail(_session: Session) -> None:
        raise OSError(28, "No space left on device")

    interrupt(env, fail)
    with pytest.raises(TheLoopError):
        env.dispatcher().spawn(REF)

    assert env.control.get(REF) == previous


def test_a_spawn_refused_for_a_live_record_touches_nothing_and_hints_at_attach(
    env: Env,
) -> None:
    dispatcher = env.dispatcher()
    first = dispatcher.spawn(REF, actor="alice")
    portable = env.store.path_for(REF).read_bytes()

    with pytest.raises(TheLoopError) as refused:
        dispatcher.spawn(REF, actor="bob")

    message = str(refused.value)
    assert f"`the-loop sessions attach --work-item '{REF.ref}'`" in message
    assert "`the-loop sessions list`" in message
    assert "reset" not in message and "<ref>" not in message
    assert env.store.path_for(REF).read_bytes() == portable
    assert env.registry.find_by_work_item(REF) == first.session
    assert dispatcher.liveness(first.session) == "live"
    assert first.checkout is not None and (first.checkout / ".git").exists()
    recorded = env.control.get(REF)
    assert recorded is not None and (recorded.command, recorded.actor) == (START, "alice")
