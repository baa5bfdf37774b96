"""The board in a real browser (issue 30): Debian's Chromium (``/usr/bin/chromium``; CI
installs it) driven by Playwright, against ``the-loop serve`` on a state root whose
records the CLI wrote. The one-time link, the rows and their pull requests, the
timeline by mouse and by keyboard, a blocked agent on top of attention within a second
of its event (no reload), the server gone, the 401 page, and no console error.

The screenshots are kept as test artifacts in ``test-artifacts/`` at the checkout's
root (ignored by git; ``$THE_LOOP_TEST_ARTIFACTS`` names another place), where a run
of ``make check`` or CI leaves them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, sync_playwright

from tests.helpers.world import World
from the_loop.api.token import COOKIE
from the_loop.eventlog.log import EventLog
from the_loop.portable.poll import Ledger, PollState
from the_loop.ref import WorkItemRef

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parent.parent
BOARD = REPO / "the_loop" / "api" / "board" / "index.html"
ITEM = "github:octo/app#15"
PULL = "github:octo/app#16"
OTHER = "github:octo/app#20"
#: Words an agent could show, which must reach the page as text.
MARKUP = '<img src="x" onerror="window.injected = 1">Allow Bash(rm -rf build)?'
DESK = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
#: How long the page may take to do what it is asked (a loaded CI machine included).
WAIT_MS = 10_000
LINK_PREFIX = "serve: open the board (once, within ten minutes): "
#: What the child must not inherit: another config, root, token, tmux or repository.
_FOREIGN = ("THE_LOOP_", "GITHUB_TOKEN", "GH_TOKEN", "TMUX", "GIT_")


@dataclass
class Board:
    """A page on the board in a context of its own; every console error and page error."""

    context: BrowserContext
    page: Page
    errors: list[str] = field(default_factory=list[str])

    def row(self, ref: str) -> str:
        return f'#board > li[data-ref="{ref}"]'


@dataclass
class Served:
    """A running ``the-loop serve`` on ``world``'s state root, and the link it printed."""

    world: World
    base: str
    link: str
    process: subprocess.Popen[str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("board-root")) as running:
        yield running


@contextlib.contextmanager
def serving(place: Path) -> Iterator[Served]:
    """Two items with sessions (one with a linked pull request), then ``serve --port 0``
    until SIGTERM."""
    world = World(place / "home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(world.home))
        for name in [name for name in os.environ if name.startswith(_FOREIGN)]:
            patch.delenv(name)
        patch.chdir(place)
        for ref in (ITEM, OTHER):
            argv = ["sessions", "register", "--work-item", ref, "--harness", "command"]
            assert world.run_cli([*argv, "--harness-session-id", f"s-{ref[-2:]}"])[0] == 0
        linked = ["sessions", "link-pr", "--work-item", ITEM, "--pull-request", "16"]
        assert world.run_cli(linked)[0] == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    env["HOME"] = str(world.home)
    argv = [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "serve"]
    process = subprocess.Popen(
        [*argv, "--port", "0"],
        cwd=place,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        link = _printed_link(_lines(process), process)
        yield Served(world, link.partition("/login?")[0], link, process)
    finally:
        stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("serve did not stop within 20 s of SIGTERM") from None


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The child's stderr, line by line, read to its end on a thread (its pipe never fills)."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _printed_link(lines: queue.Queue[str], process: subprocess.Popen[str]) -> str:
    said: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            if process.poll() is not None:
                break
            continue
        said.append(line)
        if line.startswith(LINK_PREFIX):
            return line.removeprefix(LINK_PREFIX).strip()
    raise AssertionError(f"serve printed no link (exit {process.poll()}): {''.join(said)}")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"no {CHROMIUM}: apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield browser
        finally:
            browser.close()


def fresh_link(served: Served) -> str:
    """A new link, as ``the-loop serve link`` prints it."""
    code, out, err = served.world.run_cli(["serve", "link"])
    assert code == 0, err
    return out.strip()


def open_board(chromium: Browser, link: str, viewport: dict[str, int] = DESK) -> Board:
    context = chromium.new_context(
        viewport={"width": viewport["width"], "height": viewport["height"]}
    )
    page = context.new_page()
    board = Board(context, page)

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            board.errors.append(f"console: {message.text} ({message.location})")

    page.on("console", console)
    page.on("pageerror", lambda error: board.errors.append(f"page error: {error}"))
    page.goto(link)
    return board


@pytest.fixture
def board(chromium: Browser, served: Served) -> Iterator[Board]:
    """The board opened through a fresh link, live, its rows drawn."""
    opened = open_board(chromium, fresh_link(served))
    try:
        opened.page.wait_for_selector('#connection[data-state="live"]', timeout=WAIT_MS)
        opened.page.wait_for_selector(opened.row(ITEM), timeout=WAIT_MS)
        yield opened
    finally:
        opened.context.close()


def test_the_printed_link_opens_the_board_once_and_leaves_no_code_in_the_address(
    chromium: Browser, served: Served
) -> None:
    first = open_board(chromium, served.link)
    try:
        first.page.wait_for_selector(first.row(ITEM), timeout=WAIT_MS)
        assert first.page.url == served.base + "/"
        [cookie] = [c for c in first.context.cookies() if c.get("name") == COOKIE]
        assert cookie.get("httpOnly") is True
        assert cookie.get("sameSite") == "Strict"
        assert first.errors == []
    finally:
        first.context.close()

    again = open_board(chromium, served.link)
    try:
        assert again.page.locator("main#unauthorized").is_visible()
        assert again.page.locator("#board").count() == 0
        assert ITEM not in again.page.content()
        assert [c for c in again.context.cookies() if c.get("name") == COOKIE] == []
    finally:
        again.context.close()


def test_a_browser_without_the_cookie_gets_the_401_page_and_no_data(
    chromium: Browser, served: Served
) -> None:
    stranger = open_board(chromium, served.base + "/")
    try:
        page = stranger.page
        assert page.locator("main#unauthorized").is_visible()
        assert page.locator("#board").count() == 0
        answer = page.request.get(served.base + "/api/v1/sessions")
        assert answer.status == 401
        assert ITEM not in answer.text()
    finally:
        stranger.context.close()


def test_each_work_item_is_a_row_and_its_pull_request_sits_inside_it(board: Board) -> None:
    page = board.page
    refs = page.eval_on_selector_all(
        "#board > li[data-ref]", "rows => rows.map(r => r.dataset.ref)"
    )
    assert sorted(refs) == [ITEM, OTHER]
    assert page.locator(f'{board.row(ITEM)} [data-pr="{PULL}"]').count() == 1
    assert page.locator(f"{board.row(OTHER)} [data-pr]").count() == 0
    ticket = page.locator(f"{board.row(ITEM)} a").first.get_attribute("href") or ""
    pull = page.locator(f'[data-pr="{PULL}"] a').get_attribute("href") or ""
    assert ticket.startswith("https://github.com/octo/app/") and ticket.endswith("/15")
    assert pull.startswith("https://github.com/octo/app/") and pull.endswith("/16")
    assert page.get_attribute(board.row(ITEM), "tabindex") == "0"
    assert board.errors == []


def test_a_click_or_enter_opens_the_items_timeline_and_escape_closes_it(board: Board) -> None:
    page, timeline = board.page, board.page.locator("#timeline")

    page.locator(f"{board.row(ITEM)} .item-title").click()
    timeline.locator('li[data-event="session.pr_linked"]').wait_for(timeout=WAIT_MS)
    assert timeline.is_visible()
    assert ITEM in (timeline.locator("#timeline-heading").text_content() or "")
    page.keyboard.press("Escape")
    timeline.wait_for(state="hidden", timeout=WAIT_MS)
    assert page.evaluate("document.activeElement.dataset.ref") == ITEM

    page.focus(board.row(OTHER))
    page.keyboard.press("Enter")
    timeline.locator('li[data-event="session.registered"]').wait_for(timeout=WAIT_MS)
    assert OTHER in (timeline.locator("#timeline-heading").text_content() or "")
    assert timeline.locator('li[data-event="session.pr_linked"]').count() == 0
    page.keyboard.press("Escape")
    timeline.wait_for(state="hidden", timeout=WAIT_MS)
    assert board.errors == []


def test_the_board_reads_at_a_desk_and_on_a_phone_without_console_errors(
    chromium: Browser, served: Served, tmp_path_factory: pytest.TempPathFactory
) -> None:
    del tmp_path_factory
    default = Path(__file__).resolve().parents[1] / "test-artifacts"
    shots = Path(os.environ.get("THE_LOOP_TEST_ARTIFACTS") or default)
    shots.mkdir(parents=True, exist_ok=True)
    for name, viewport in (("desk", DESK), ("phone", PHONE)):
        shown = open_board(chromium, fresh_link(served), viewport)
        try:
            page = shown.page
            page.wait_for_selector('#connection[data-state="live"]', timeout=WAIT_MS)
            page.wait_for_selector(f'[data-pr="{PULL}"]', timeout=WAIT_MS)
            assert page.locator("#attention").is_visible()
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            assert wide <= viewport["width"], f"{name}: {wide}px wide"
            page.screenshot(path=str(shots / f"board-{name}.png"), full_page=True)
            assert shown.errors == []
        finally:
            shown.context.close()
    print(f"board screenshots: {shots}")


def test_a_blocked_agent_tops_attention_within_a_second_of_its_event(
    board: Board, served: Served
) -> None:
    """As the poller does: the blocked episode kept in the item's ledger, then the event."""
    page, world = board.page, served.world
    page.evaluate("window.sameDocument = true")
    page.wait_for_selector("#attention li", timeout=WAIT_MS)
    since = time.time()
    episode = {"on": "permission", "since": since, "at": since, "key": "board-test", "comment": 0}

    def keep(ledger: Ledger) -> None:
        ledger["blocked"] = episode

    PollState(world.store, registry=world.registry).change(WorkItemRef.parse(OTHER), keep)
    written = time.monotonic()
    EventLog(world.layout.event_log, source="poll").emit(
        "session.blocked",
        "warning",
        work_item=OTHER,
        blocked_on="permission",
        prompt=MARKUP,
        comment_id=None,
        resets_at=None,
    )
    page.wait_for_function(
        """ref => {
            const top = document.querySelector("#attention li[data-kind]");
            return top !== null && top.dataset.ref === ref && top.dataset.kind === "blocked";
        }""",
        arg=OTHER,
        timeout=WAIT_MS,
        polling=20,
    )
    took = time.monotonic() - written
    assert took < 1.0, f"the board showed the block {took:.2f}s after its event"
    assert page.evaluate("window.sameDocument") is True
    page.wait_for_selector(f'{board.row(OTHER)}[data-agent="blocked"]', timeout=WAIT_MS)
    assert board.errors == []


def test_what_an_agent_said_shows_as_text_never_as_markup(board: Board, served: Served) -> None:
    EventLog(served.world.layout.event_log, source="poll").emit(
        "session.unblocked", work_item=OTHER, blocked_on="permission", how=MARKUP
    )
    page = board.page
    page.focus(board.row(OTHER))
    page.keyboard.press("Enter")
    said = page.locator('#timeline li[data-event="session.unblocked"]')
    said.wait_for(timeout=WAIT_MS)
    assert MARKUP in (said.text_content() or "")
    assert page.locator("#timeline img").count() == 0
    page.wait_for_timeout(200)  # an image that failed would have said so by now
    assert page.evaluate("window.injected") is None
    assert board.errors == []


def test_the_board_says_the_server_is_gone_when_it_stops(
    chromium: Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with serving(tmp_path_factory.mktemp("board-gone")) as alone:
        shown = open_board(chromium, alone.link)
        try:
            connection = shown.page.locator("#connection")
            shown.page.wait_for_selector('#connection[data-state="live"]', timeout=WAIT_MS)
            stop(alone.process)
            shown.page.wait_for_selector('#connection[data-state="gone"]', timeout=WAIT_MS)
            assert connection.is_visible()
            assert "gone" in (connection.text_content() or "")
        finally:
            shown.context.close()


def test_the_board_page_ships_in_the_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["the_loop"]
    relative = BOARD.relative_to(REPO / "the_loop").as_posix()

    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)
