"""The state root layout and its declared generated paths."""

from __future__ import annotations

from pathlib import Path

from the_loop.config.file import Config
from the_loop.layout import GENERATED_PATHS, StateLayout, layout_from_config, legacy_layout


def test_the_default_layout_puts_everything_under_the_root() -> None:
    layout = StateLayout(Path("/s"))
    assert layout.portable_dir == Path("/s/portable")
    assert layout.portable_index == Path("/s/portable/index.json")
    assert layout.local_dir == Path("/s/local")
    assert layout.event_log == Path("/s/logs/events.jsonl")
    assert layout.pidfile == Path("/s/gh-webhook.pid")
    assert layout.poll_pidfile == Path("/s/poll.pid")
    assert layout.local_locks_dir == Path("/s/locks/local")
    assert layout.portable_locks_dir == Path("/s/locks/portable")
    assert legacy_layout(layout).poll_state == Path("/s/sessions/poll-state.json")


def test_overridden_directories_keep_their_locks_beside_them() -> None:
    layout = StateLayout(Path("/s")).with_overrides(
        local_dir=Path("/r/reg"), portable_dir=Path("/p/port")
    )
    assert layout.local_dir == Path("/r/reg")
    assert layout.local_locks_dir == Path("/r/reg.locks")
    assert layout.portable_locks_dir == Path("/p/port.locks")


def test_the_config_sets_root_registry_log_and_pidfiles() -> None:
    config = Config(
        {
            "state": {"root": "/x"},
            "routing": {"registryDir": "/y"},
            "eventLog": {"path": "/z/e.jsonl"},
            "webhook": {"pidfile": "hook.pid"},
        }
    )
    layout = layout_from_config(config)
    assert layout.root == Path("/x")
    assert layout.local_dir == Path("/y")
    assert layout.event_log == Path("/z/e.jsonl")
    assert layout.pidfile == Path("/x/hook.pid")


def test_the_state_root_is_never_tilde_expanded() -> None:
    layout = layout_from_config(Config({"state": {"root": "~/st"}}))
    assert layout.root == Path("~/st")


def test_every_generated_path_is_declared_once() -> None:
    wheres = [path.where for path in GENERATED_PATHS]
    assert len(wheres) == len(set(wheres))
    assert {path.portable for path in GENERATED_PATHS} == {True, False}
