"""The close side of ``sessions reset``: a dispatcher built on first need, tmux asked once.

``LazyClose`` ends a live session through the dispatcher's close path and raises
``HarnessStillRunning`` when that path left the agent running; ``RunningHarnesses``
tells whether a closed record's harness still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from the_loop.errors import CloseIncomplete, TheLoopError

if TYPE_CHECKING:
    from the_loop.dispatch.dispatcher import Dispatcher
    from the_loop.dispatch.disposal import CheckoutDisposal
    from the_loop.dispatch.factory import Adapters
    from the_loop.sessions.session import Session


class LazyClose:
    """The close callable: builds the dispatcher on the first live session, once.

    ``checkouts`` says, per ref, what each close did with the item's checkouts.
    """

    def __init__(
        self,
        build: Callable[[], Dispatcher],
        on_unavailable: Callable[[str], None],
        *,
        force: bool = False,
    ) -> None:
        self._build = build
        self._on_unavailable = on_unavailable
        self._force = force
        self._dispatcher: Dispatcher | None = None
        self._problem = ""
        self.checkouts: dict[str, tuple[CheckoutDisposal, ...]] = {}

    def __call__(self, session: Session) -> bool:
        if self._dispatcher is None and not self._problem:
            try:
                self._dispatcher = self._build()
            except TheLoopError as error:
                self._problem = str(error)
                self._on_unavailable(self._problem)
        if self._dispatcher is None:
            raise TheLoopError(f"the dispatcher is unavailable: {self._problem}")
        from the_loop.dispatch.teardown import SessionCloseError

        try:
            report = self._dispatcher.close_session(session, reason="reset", force=self._force)
        except SessionCloseError as error:
            self.checkouts[session.ref] = error.checkouts
            raise
        self.checkouts[session.ref] = report.checkouts
        removed = report.checkout_removed
        running = [
            endpoint.tmux_target
            for endpoint in session.endpoints()
            if endpoint.tmux_target
            and self._dispatcher.tmux.liveness(endpoint.tmux_target) == "live"
        ]
        if running:
            raise HarnessStillRunning(session, running, checkout_removed=removed)
        return removed


class HarnessStillRunning(CloseIncomplete):
    """The close path left an agent running (``killHarnessOnClose`` is false).

    ``checkout_removed`` says whether the close removed a checkout all the same.
    """

    def __init__(self, session: Session, targets: list[str], *, checkout_removed: bool) -> None:
        super().__init__(
            f"the agent still runs in tmux {', '.join(targets)} "
            "(routing.tmux.killHarnessOnClose is false); "
            f"`the-loop sessions cleanup --work-item {session.ref}` ends it",
            checkout_removed=checkout_removed,
        )


class RunningHarnesses:
    """Whether a closed record's harness still runs in tmux (one tmux call, made lazily)."""

    def __init__(self, adapters: Adapters) -> None:
        self._adapters = adapters
        self._live: set[str] | None = None
        self._asked = False

    def __call__(self, session: Session) -> bool:
        targets = {endpoint.tmux_target for endpoint in session.endpoints() if endpoint.tmux_target}
        if not targets:
            return False
        if not self._asked:
            self._asked = True
            self._live = self._adapters.tmux.live_sessions()
        return bool(self._live and targets & self._live)
