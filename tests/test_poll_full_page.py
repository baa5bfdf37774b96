"""A comment that starts a new page after a full last page is read: the full page
answers 304 with the Link it had, which names no next page, so it is asked again in
full (`poll --once` against the loopback fake, real tmux)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_github import FakeGitHub, serve
from tests.helpers.machines import BOT, REPO, TOKEN, Machine
from tests.helpers.tmuxsock import private_tmux_socket


@pytest.mark.parametrize("per_page", [5, 100])
def test_a_comment_on_a_new_page_after_a_full_last_page_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_page: int
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    fake = FakeGitHub(tokens={TOKEN: BOT}, max_per_page=per_page)
    with serve(fake) as github, private_tmux_socket() as socket:
        github.add_issue(REPO, 15, labels=("the-loop",))
        pages = 3 if per_page == 5 else 1
        for i in range(per_page * pages):
            github.add_comment(REPO, 15, f"chatter {i}", login="alice")
        machine = Machine(
            tmp_path / "m", name="m", socket=socket, github=github, remote=None, claim="never"
        )
        machine.poll()  # first sight: the thread baselined
        machine.poll()  # the same window again: its pages cached, the last one full
        github.advance(5)
        github.add_comment(REPO, 15, "the-loop start", login="alice")  # a page of its own
        machine.poll()
        assert machine.live(15), "the comment on the new page was never read"


def test_an_idle_cycle_over_a_full_last_page_asks_it_once_more_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    fake = FakeGitHub(tokens={TOKEN: BOT}, max_per_page=5)
    with serve(fake) as github, private_tmux_socket() as socket:
        github.add_issue(REPO, 15, labels=("the-loop",))
        for i in range(10):
            github.add_comment(REPO, 15, f"chatter {i}", login="alice")
        machine = Machine(
            tmp_path / "m", name="m", socket=socket, github=github, remote=None, claim="never"
        )
        machine.poll()
        machine.poll()
        before = len(github.logged("GET", f"/repos/{REPO}/issues/comments"))
        machine.poll()
        asked = github.logged("GET", f"/repos/{REPO}/issues/comments")[before:]
        # page 1 (304), page 2 (304, full, no next), page 2 again in full
        assert [r.status for r in asked] == [304, 304, 200]


def test_a_full_last_page_asked_again_and_unchanged_is_still_not_modified() -> None:
    from the_loop.github.client import GitHubClient
    from the_loop.github.etags import MemoryEtagCache

    with serve(FakeGitHub(tokens={TOKEN: BOT}, max_per_page=5)) as github:
        github.add_issue(REPO, 15)
        for i in range(10):
            github.add_comment(REPO, 15, f"chatter {i}", login="alice")
        path = f"/repos/{REPO}/issues/comments"
        with GitHubClient(github.url, TOKEN, etags=MemoryEtagCache()) as client:
            first = client.get_all_pages(path, {"per_page": 100})
            again = client.get_all_pages(path, {"per_page": 100})
            github.add_comment(REPO, 15, "a new page", login="alice")
            grown = client.get_all_pages(path, {"per_page": 100})
        assert (len(first.items), first.not_modified) == (10, False)
        assert (len(again.pages), again.not_modified) == (2, True)
        assert (len(grown.pages), grown.not_modified) == (3, False)  # the new page read
