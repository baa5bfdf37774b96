"""A blocked agent, said once on the ticket; its end, said in the same comment.

Each round asks every active session's agent what it is doing (the ``agent`` port).
When it waits on a dialog — a permission prompt, a question, its trust, API-key or
bypass dialogs, a notice, a usage limit — one marked comment says what it waits for
(the dialog's text quoted as untrusted data) and how to answer; the episode is kept in
the item's ledger (``blocked``: on what, since when, the notice's id), so a second round,
a second reader or a restarted poller never says it twice (:mod:`once`). When the block
ends, the notice is edited to say how: answered here (``allow``/``deny``), in the pane,
the limit reset, or the agent exited. With ``trustCheckouts`` the folder-trust dialog is
answered, not said; with ``resumeAfterLimit`` the usage limit's dialog is answered with
its wait, and said (:mod:`usage_limit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from the_loop.agent.state import BLOCKED, EXITED, AgentState
from the_loop.errors import TheLoopError
from the_loop.intake.delivery import visible_text
from the_loop.intake.events import AGENT_COMMENT_MARKER
from the_loop.intake.once import edit_notice, keep, kept, new_nonce, say_once
from the_loop.intake.ports import LiveSession
from the_loop.intake.usage_limit import answer_limit_dialog, limit_words
from the_loop.portable.poll import Ledger

if TYPE_CHECKING:
    from the_loop.intake.context import IntakeView

#: The ledger key of the open blocked episode.
BLOCKED_KEY = "blocked"
#: How long a prompt answered here may stay on the screen before its answer counts as lost.
ANSWER_TAKES_SECONDS = 30.0
_HOW_TO = {
    "permission": (
        "An authorized user answers with a comment `{prefix} allow` (run it once) or "
        "`{prefix} deny`; anyone at the machine can answer in the pane "
        "(`the-loop sessions attach`). Other comments wait until it is answered."
    ),
    "trust": (
        "Answer it in the pane (`the-loop sessions attach`), or let the-loop answer it for "
        "the checkouts it makes: `routing.harnesses.claude.trustCheckouts: true`."
    ),
    "auto-mode": (
        "Its requests go through a gateway that does not pass auto mode's safety check on. "
        "Answer it in the pane (`the-loop sessions attach`), or run the agent in a mode "
        "without that check: `routing.harnesses.claude.args: [--permission-mode, default]` "
        "(each prompt is then said here, for `{prefix} allow` or `{prefix} deny`). "
        "Comments wait until then."
    ),
}
_HOW_TO_OTHER = (
    "Answer it in the pane (`the-loop sessions attach`); `the-loop doctor` says how to "
    "settle the first-run dialogs once for every session. Comments wait until then."
)


def attend(session: LiveSession, intake: IntakeView) -> AgentState | None:
    """Ask the agent what it does; say a new block once, and the end of one; answer the
    trust dialog when the settings say so. The state, for the delivery that follows."""
    ports = intake.ports
    if ports.agent is None:
        return None
    state = ports.agent(session)
    if state is None:
        return None  # tmux could not say: the episode stays as it was
    episode = _episode(intake, session)
    if state.state == BLOCKED:
        if _answer_trust(session, state, intake):
            return state
        answer_limit_dialog(session, state, intake)
        if episode is not None and shows_episode(episode, state):
            episode = _named_by_its_hook(intake, session, episode, state)
            if not _answer_lost(intake, episode):
                if not episode.get("comment"):  # a crash or a refusal cut its notice short
                    _say(session, intake, episode)
                return state  # the same block: said already
            _end(session, intake, episode, "the answer sent here did not take")
            _begin(session, intake, state)
            return state
        if episode is not None:
            _end(session, intake, episode, "the agent went on to another dialog")
        _begin(session, intake, state)
    elif episode is not None:
        _end(session, intake, episode, _how_it_ended(episode, state))
    return state


def _how_it_ended(episode: dict[str, Any], state: AgentState) -> str:
    if episode.get("answered"):
        return str(episode["answered"])
    if state.state == EXITED:
        return "the agent exited"
    return "the limit reset" if episode.get("on") == "limit" else "it was answered in the pane"


def answered(intake: IntakeView, session: LiveSession, how: str) -> None:
    """Remember that the open episode was answered here (``how``), for its end's note."""

    def change(ledger: Ledger) -> None:
        episode = ledger.get(BLOCKED_KEY)
        if isinstance(episode, dict):
            episode["answered"] = how
            episode["answered_at"] = intake.ports.clock()

    intake.ports.ledger.change(session.ref, change)


def open_episode(intake: IntakeView, session: LiveSession) -> dict[str, Any] | None:
    """The open blocked episode of ``session``'s item (None when it is not blocked)."""
    return _episode(intake, session)


def _episode(intake: IntakeView, session: LiveSession) -> dict[str, Any] | None:
    return kept(intake, session.ref, BLOCKED_KEY)


def _answer_lost(intake: IntakeView, episode: dict[str, Any]) -> bool:
    """Whether the prompt answered here still shows :data:`ANSWER_TAKES_SECONDS` after:
    its keys did not take, so it is said again (and may be answered again)."""
    at = episode.get("answered_at")
    return isinstance(at, int | float) and intake.ports.clock() - at > ANSWER_TAKES_SECONDS


def shows_episode(episode: dict[str, Any], state: AgentState) -> bool:
    """Whether ``state`` shows the dialog of ``episode`` (an episode written before
    episodes had identities is told by what it blocked on)."""
    if "key" not in episode:
        return episode.get("on") == state.blocked_on
    key = episode.get("key")
    if key == state.episode:
        return True
    # A prompt told by its text, now named by its hook: the same one, unless it was
    # answered here meanwhile (the same command asked again is then a new prompt).
    return bool(state.shown) and key == state.shown and not episode.get("answered")


def _named_by_its_hook(
    intake: IntakeView, session: LiveSession, episode: dict[str, Any], state: AgentState
) -> dict[str, Any]:
    """A prompt first seen on the screen before its hook said it, now named by its hook:
    the same episode, kept under the hook's name from now on (so a second prompt with
    the same text is another episode)."""
    if episode.get("key") == state.episode:
        return episode
    old = episode.get("key")

    def change(ledger: Ledger) -> None:
        kept_now: Any = ledger.get(BLOCKED_KEY)
        if isinstance(kept_now, dict) and kept_now.get("key") == old:  # pyright: ignore[reportUnknownMemberType]
            kept_now["key"] = state.episode  # what else changed since it was read stays

    intake.ports.ledger.change(session.ref, change)
    return episode | {"key": state.episode}


def _answer_trust(session: LiveSession, state: AgentState, intake: IntakeView) -> bool:
    ports = intake.ports
    if state.blocked_on != "trust" or not intake.settings.trust_checkouts or not state.dialog:
        return False
    if ports.answer is None:
        return False
    try:
        ports.answer(session.tmux_target, state.dialog, "yes")
    except TheLoopError as error:
        ports.warn(f"{session.ref.ref}: could not answer the folder-trust dialog: {error}")
        return False
    ports.emit("session.trust_answered", work_item=session.ref.ref, dialog=state.dialog)
    return True


def _begin(session: LiveSession, intake: IntakeView, state: AgentState) -> None:
    ports, ref = intake.ports, session.ref
    prefix = intake.settings.policy.grammar.prefix
    how = _HOW_TO.get(state.blocked_on, _HOW_TO_OTHER).format(prefix=prefix)
    headline = (
        f"the-loop: the agent is blocked on a {_NAMES.get(state.blocked_on, 'dialog')} "
        "and waits for a person. What it shows (the agent's words, untrusted):"
    )
    if state.blocked_on == "limit":
        headline, how = limit_words(state, intake)
    shown, _ = visible_text(state.prompt)
    body = "\n".join([AGENT_COMMENT_MARKER, headline, "", *fenced(shown[:1500]), "", how])
    record: dict[str, Any] = {"on": state.blocked_on, "since": state.since, "at": ports.clock()}
    record["key"] = state.episode
    record |= {"comment": 0, "dialog": state.dialog, "nonce": new_nonce()}
    record["body"] = body
    keep(intake, ref, BLOCKED_KEY, record)  # before the POST: a crash after it finds it
    comment = _say(session, intake, record)
    ports.emit(
        "session.blocked",
        "warning",
        work_item=ref.ref,
        blocked_on=state.blocked_on,
        prompt=state.prompt[:500],
        comment_id=comment,
        resets_at=state.limit.iso() if state.limit is not None else None,
    )


def fenced(text: str) -> list[str]:
    """``text`` as a fenced code block, its fence longer than any run of backticks in it:
    on GitHub nothing in it renders (no mention, no link, no markup), whatever it says."""
    run, longest = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *text.split("\n"), fence]


def _say(session: LiveSession, intake: IntakeView, episode: dict[str, Any]) -> int | None:
    """Post the episode's notice once (see :func:`~the_loop.intake.once.say_once`)."""
    return say_once(session, intake, BLOCKED_KEY, episode, "blocked notice")


def _end(session: LiveSession, intake: IntakeView, episode: dict[str, Any], how: str) -> None:
    ports, ref = intake.ports, session.ref
    keep(intake, ref, BLOCKED_KEY, None)
    on = _NAMES.get(str(episode.get("on")), "dialog")
    body = f"{AGENT_COMMENT_MARKER}\nthe-loop: the agent was blocked on a {on}; {how}."
    edit_notice(intake, ref, episode, body)
    ports.emit("session.unblocked", work_item=ref.ref, blocked_on=episode.get("on"), how=how)


_NAMES = {
    "trust": "folder-trust dialog",
    "api-key": "API-key approval dialog",
    "permission": "permission prompt",
    "question": "question",
    "bypass-warning": "bypass-permissions warning",
    "auto-mode": "dialog of auto mode's safety check",
    "notice": "notice",
    "limit": "usage limit",
    "unknown": "dialog",
}
