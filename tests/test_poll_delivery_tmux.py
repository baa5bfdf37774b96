"""`TmuxRunner.deliver` on a real tmux server: the paste and the pane mark in one command
list, a per-delivery buffer that is gone afterwards, and text that tmux could misread."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.dispatch.process import DispatchError
from the_loop.dispatch.tmux import PaneDead, TmuxRunner
from the_loop.intake.delivery import DELIVERED_MARK
from the_loop.intake.ports import ItemFacts
from the_loop.intake.prompt import render_prompt
from the_loop.ref import WorkItemRef

NAME = "loop-github-octo-app-15"


def test_a_delivery_pastes_the_text_as_is_marks_the_pane_and_leaves_no_buffer(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    out = tmp_path / "read.txt"
    tmux = TmuxRunner(socket=tmux_socket, timeout=30)
    tmux.spawn(NAME, tmp_path, ["bash", "-c", f'exec cat > "{out}"'])
    assert tmux.pane_option(NAME, DELIVERED_MARK) is None
    text = "> the-loop stop; then\n> a last line ending in a semicolon;"
    tmux.deliver(NAME, "the-loop-x-1001-1", text, (DELIVERED_MARK, "1001"))
    assert wait_until(lambda: out.exists() and out.read_text().endswith("semicolon;\n"))
    assert out.read_text() == text + "\n"
    assert tmux.pane_option(NAME, DELIVERED_MARK) == "1001"
    buffers = tmux._tmux("list-buffers", "-F", "#{buffer_name}", check=False).stdout  # pyright: ignore[reportPrivateUsage]
    assert "the-loop-x-1001-1" not in buffers


def test_the_prompt_fills_title_url_and_body_and_leaves_other_braces_alone() -> None:
    facts = ItemFacts(
        WorkItemRef.parse("github:octo/app#15"), "Fix {it}", "https://x/15", "Body\x1b[31m"
    )
    prompt = render_prompt("{title} at {url}: {body} {work_item}", facts)
    assert prompt == "Fix {it} at https://x/15: Body[31m {work_item}"


def test_a_24000_character_review_arrives_whole_through_the_buffer_not_the_command_line(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    out = tmp_path / "read.txt"
    tmux = TmuxRunner(socket=tmux_socket, timeout=30)
    tmux.spawn(NAME, tmp_path, ["bash", "-c", f'exec cat > "{out}"'])
    lines = [f"> line {n:05d} " + "x" * 70 for n in range(300)]
    text = "\n".join([*lines, "> the end"])
    assert len(text) > 24_000
    tmux.deliver(NAME, "the-loop-x-review-7-1", text, (DELIVERED_MARK, "review-7"))
    assert wait_until(lambda: out.exists() and out.read_text().endswith("end\n"), timeout=20)
    assert out.read_text() == text + "\n"
    assert tmux.pane_option(NAME, DELIVERED_MARK) == "review-7"


def test_a_dead_pane_gets_no_paste_and_the_server_and_the_other_agent_survive(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
) -> None:
    """tmux 3.3a segfaults on a paste into a pane remain-on-exit kept: the check and the
    paste are one command list, so a dead pane is never pasted into."""
    out = tmp_path / "other.txt"
    tmux = TmuxRunner(socket=tmux_socket, timeout=30)
    other = "loop-github-octo-app-16"
    tmux.spawn(other, tmp_path, ["bash", "-c", f'exec cat > "{out}"'])
    tmux.spawn(NAME, tmp_path, ["bash", "-c", "exit 3"])
    assert wait_until(lambda: tmux.liveness(NAME) == "dead")
    for attempt in range(1, 4):
        with pytest.raises(PaneDead, match="has exited"):
            tmux.deliver(NAME, f"the-loop-x-1001-{attempt}", "hello", (DELIVERED_MARK, "1001"))
    assert tmux.pane_option(NAME, DELIVERED_MARK) is None
    buffers = tmux._tmux("list-buffers", "-F", "#{buffer_name}", check=False).stdout  # pyright: ignore[reportPrivateUsage]
    assert "the-loop-x-1001" not in buffers
    assert tmux.liveness(NAME) == "dead" and tmux.liveness(other) == "live"
    tmux.deliver(other, "the-loop-y-5-1", "still here", (DELIVERED_MARK, "5"))
    assert wait_until(lambda: out.exists() and out.read_text() == "still here\n")


@pytest.mark.parametrize("root", ["/srv/state", "/srv/odd #{x},}y} root", "/srv/a#[b]##[c]"])
def test_a_session_another_state_root_started_gets_no_paste_ours_and_an_untagged_one_do(
    tmp_path: Path,
    tmux_socket: str,  # noqa: F811 - the imported fixture
    root: str,
) -> None:
    """The owner check is in the paste's own command list (no instant between the check
    and the paste), compared as tmux's format sees it: a root holding ``#``, ``,`` or
    ``}`` is still told from another."""
    ours = TmuxRunner(socket=tmux_socket, timeout=30, owner=root)
    theirs = TmuxRunner(socket=tmux_socket, timeout=30, owner=root + "-other")
    untagged = TmuxRunner(socket=tmux_socket, timeout=30)
    outputs = {name: tmp_path / f"{name}.txt" for name in ("mine", "foreign", "bare")}
    ours.spawn("loop-mine", tmp_path, ["bash", "-c", f'exec cat > "{outputs["mine"]}"'])
    theirs.spawn("loop-foreign", tmp_path, ["bash", "-c", f'exec cat > "{outputs["foreign"]}"'])
    untagged.spawn("loop-bare", tmp_path, ["bash", "-c", f'exec cat > "{outputs["bare"]}"'])
    with pytest.raises(DispatchError, match=f"belongs to the state root {re.escape(root)}-other"):
        ours.deliver("loop-foreign", "the-loop-x-7-1", "not for them", (DELIVERED_MARK, "7"))
    assert ours.pane_option("loop-foreign", DELIVERED_MARK) is None
    buffers = ours._tmux("list-buffers", "-F", "#{buffer_name}", check=False).stdout  # pyright: ignore[reportPrivateUsage]
    assert "the-loop-x-7-1" not in buffers
    for name in ("mine", "bare"):
        ours.deliver(f"loop-{name}", f"the-loop-x-{name}-1", f"for {name}", (DELIVERED_MARK, "8"))
        out, said = outputs[name], f"for {name}\n"
        assert wait_until(lambda: out.read_text() == said), name  # noqa: B023 - used at once
        assert ours.pane_option(f"loop-{name}", DELIVERED_MARK) == "8"
    assert outputs["foreign"].read_text() == ""
