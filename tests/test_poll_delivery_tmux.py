"""`TmuxRunner.deliver` on a real tmux server: the paste and the pane mark in one command
list, a per-delivery buffer that is gone afterwards, and text that tmux could misread."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tmuxsock import tmux_socket, wait_until  # noqa: F401 - fixture
from the_loop.dispatch.tmux import TmuxRunner
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
