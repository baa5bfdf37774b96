"""The dialogs an agent shows that no hook reports, read from its screen by patterns.

The patterns are data (``screens.json`` beside this module), one per dialog, each
pinned by a test against a screen captured from the real agent, so a release that
rewords a dialog fails that test, not the loop. A pattern matches when every one of its
``all`` texts is on the screen; it names what the agent is blocked on (``trust``,
``api-key``, ``permission``, ``question``, ``bypass-warning``, ``auto-mode``,
``notice``, ``limit``)
and, for the dialogs the-loop may answer, the keys that choose each option.
Only the visible screen is read (never the scrollback): a dialog long answered and
scrolled away must not block anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from the_loop.errors import TheLoopError

PATTERNS_FILE = Path(__file__).with_name("screens.json")
#: What an agent can be blocked on, as ``sessions list`` and the events name it.
BLOCKED_ON = (
    "trust",
    "api-key",
    "permission",
    "question",
    "bypass-warning",
    "auto-mode",
    "notice",
    "limit",
    "unknown",
)
#: How many characters of a dialog's text are kept as its prompt.
PROMPT_KEPT = 1500


@dataclass(frozen=True)
class Answer:
    """How the-loop chooses one option of a dialog: ``keys`` sent at once; or ``move``
    sent until the highlighted line (the one starting with ``pointer``) holds ``choose``,
    and only then ``confirm`` (a dialog whose default is the other option is never
    confirmed blind)."""

    keys: tuple[str, ...] = ()
    move: tuple[str, ...] = ()
    choose: str = ""
    pointer: str = ""
    confirm: tuple[str, ...] = ()

    def chosen(self, screen: str) -> bool:
        """Whether the highlighted line of ``screen`` is the option to choose."""
        return any(
            line.strip().startswith(self.pointer) and flat(self.choose) in flat(line)
            for line in screen.splitlines()
        )


@dataclass(frozen=True)
class ScreenPattern:
    """One dialog: its name, what it blocks on, the texts that identify it, how each of
    its options the-loop may choose is chosen (``yes``, ``no``), and the harnesses that
    show it."""

    name: str
    blocked_on: str
    all: tuple[str, ...]
    answers: dict[str, Answer]
    harnesses: tuple[str, ...]

    def matches(self, screen: str) -> bool:
        shown = flat(screen)
        return all(flat(text) in shown for text in self.all)


@dataclass(frozen=True)
class Dialog:
    """A dialog found on a screen: its pattern and the text it shows."""

    pattern: ScreenPattern
    text: str


@cache
def patterns() -> tuple[ScreenPattern, ...]:
    """Every pattern of ``screens.json``, in the order they are tried."""
    try:
        raw = json.loads(PATTERNS_FILE.read_text(encoding="utf-8"))
        return tuple(_pattern(entry) for entry in raw["patterns"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TheLoopError(
            f"the screen patterns {PATTERNS_FILE} cannot be read: {error}"
        ) from error


def _pattern(entry: dict[str, Any]) -> ScreenPattern:
    blocked_on = str(entry["blockedOn"])
    if blocked_on not in BLOCKED_ON:
        raise ValueError(f"pattern {entry.get('name')!r}: unknown blockedOn {blocked_on!r}")
    answers: Any = entry.get("answers") or {}
    texts: Any = entry["all"]
    if not isinstance(answers, dict) or not isinstance(texts, list) or not texts:
        raise TypeError("a pattern needs a non-empty list 'all' and an object 'answers'")
    harnesses: list[Any] = entry.get("harnesses") or []
    return ScreenPattern(
        name=str(entry["name"]),
        blocked_on=blocked_on,
        all=tuple(str(t) for t in cast(list[Any], texts)),
        answers={str(k): _answer(v) for k, v in cast(dict[str, Any], answers).items()},
        harnesses=tuple(str(h) for h in harnesses),
    )


def _answer(entry: Any) -> Answer:
    if not isinstance(entry, dict):
        raise TypeError("an answer must be an object")
    found = cast(dict[str, Any], entry)

    def words(key: str) -> tuple[str, ...]:
        value: Any = found.get(key) or []
        return tuple(str(v) for v in cast(list[Any], value))

    answer = Answer(
        keys=words("keys"),
        move=words("move"),
        choose=str(found.get("choose", "")),
        pointer=str(found.get("pointer", "")),
        confirm=words("confirm"),
    )
    if not answer.keys and not (answer.move and answer.choose and answer.pointer):
        raise ValueError("an answer needs keys, or move, choose, pointer and confirm")
    return answer


@cache
def _input_boxes() -> dict[str, tuple[str, str]]:
    raw = json.loads(PATTERNS_FILE.read_text(encoding="utf-8"))
    boxes: dict[str, Any] = raw.get("inputBox") or {}
    return {str(k): (str(v["pointer"]), str(v["rule"])) for k, v in boxes.items()}


def input_box_rule(harness: str) -> str:
    """The character of ``harness``'s input box rules (``""``: it draws no box)."""
    box = _input_boxes().get(harness)
    return box[1] if box is not None else ""


def has_input_box(harness: str) -> bool:
    """Whether ``harness`` draws an input box the-loop knows (then a paste waits for it)."""
    return harness in _input_boxes()


def at_input_prompt(screen: str, harness: str) -> bool:
    """Whether ``screen`` shows ``harness``'s input box at its bottom (a rule, a line
    starting with its prompt sign and any lines of its text, a rule): then no modal
    dialog is up."""
    return input_text(screen, harness) is not None


#: How many lines at the bottom of a screen may follow the input box (its footer).
_FOOTER_LINES = 3
#: How many lines of text the input box may show (a longer paste shows as a placeholder).
_BOX_LINES = 12


def input_text(screen: str, harness: str) -> str | None:
    """What stands in ``harness``'s input box on ``screen`` (``""``: empty; its lines
    joined with newlines), or None when no input box shows at the bottom."""
    box = _input_boxes().get(harness)
    if box is None:
        return None
    pointer, rule = box
    lines = [line.strip() for line in screen.splitlines() if line.strip()]
    last = len(lines) - 1
    for low in range(last, max(last - _FOOTER_LINES, 0) - 1, -1):
        if not _is_rule(lines[low], rule):
            continue
        for top in range(low - 2, max(low - 2 - _BOX_LINES, -1), -1):
            if _is_rule(lines[top], rule):
                if lines[top + 1].startswith(pointer):
                    text = [lines[top + 1].removeprefix(pointer).strip(), *lines[top + 2 : low]]
                    return "\n".join(text).strip()
                break  # a rule above a line that is not the prompt: no box here
    return None


#: How Claude Code shows a long paste in its input box.
_PASTED_PLACEHOLDER = re.compile(r"\[Pasted text #\d+(?: \+\d+ lines)?\]")
#: How much of the box's text must open the paste for the box to hold it.
_HOLDS_CHARS = 200


@cache
def _interrupted_words() -> dict[str, tuple[str, ...]]:
    raw = json.loads(PATTERNS_FILE.read_text(encoding="utf-8"))
    boxes: dict[str, Any] = raw.get("inputBox") or {}
    return {str(k): tuple(str(w) for w in v.get("interrupted") or ()) for k, v in boxes.items()}


def interrupted_at_prompt(screen: str, harness: str) -> bool:
    """Whether ``screen`` shows ``harness``'s input box right under the line that says its
    last turn was interrupted (Escape): a turn that ended so runs no ``Stop`` hook."""
    words = _interrupted_words().get(harness, ())
    box = _input_boxes().get(harness)
    if not words or box is None or input_text(screen, harness) is None:
        return False
    pointer, rule = box
    lines = [line.strip() for line in screen.splitlines() if line.strip()]
    prompts = [i for i, line in enumerate(lines) if line.startswith(pointer)]
    top = prompts[-1] - 1 if prompts else -1
    if top < 1 or not _is_rule(lines[top], rule):
        return False
    return any(word in lines[top - 1] for word in words)


def box_holds(typed: str, text: str) -> bool:
    """Whether ``typed`` (what the input box shows) is ``text`` (a paste): its
    placeholder, or its opening, blanks and line wrapping aside. A person's own words in
    the box are not, and no Enter is ever pressed on them."""
    if _PASTED_PLACEHOLDER.fullmatch(typed.strip()):
        return True
    shown = "".join(typed.split())[:_HOLDS_CHARS]
    return bool(shown) and "".join(text.split()).startswith(shown)


def _is_rule(line: str, rule: str) -> bool:
    return len(line) >= 10 and set(line) == {rule}


def find_dialog(screen: str, harness: str) -> Dialog | None:
    """The first dialog of ``harness`` (or of every harness) showing on ``screen``; none
    while the harness's input box shows (what the conversation says is no dialog)."""
    if at_input_prompt(screen, harness):
        return None
    for pattern in patterns():
        if pattern.harnesses and harness not in pattern.harnesses:
            continue
        if pattern.matches(screen):
            return Dialog(pattern, dialog_text(screen, pattern))
    return None


def pattern_named(name: str) -> ScreenPattern:
    """The pattern called ``name``; ``KeyError`` when there is none."""
    for pattern in patterns():
        if pattern.name == name:
            return pattern
    raise KeyError(name)


def dialog_text(screen: str, pattern: ScreenPattern) -> str:
    """The screen from the line holding the pattern's first text on, trimmed: what the
    dialog asks, without the conversation above it."""
    lines = [line.rstrip() for line in screen.splitlines()]
    first = flat(pattern.all[0])
    start = next((i for i, line in enumerate(lines) if first[:30] in flat(line)), 0)
    start = max(0, start - 6)  # a permission prompt's tool and command stand above it
    kept = "\n".join(line for line in lines[start:] if line.strip() and not _rule(line))
    return kept[:PROMPT_KEPT]


def _rule(line: str) -> bool:
    """A line drawn only of box characters (a border)."""
    return all(c in "─━═│┃╭╮╰╯┌┐└┘╌▔ " for c in line.strip())


def flat(text: str) -> str:
    """``text`` with runs of blanks and box sides as one space: a dialog reflowed by the
    terminal's width still matches."""
    return " ".join(text.replace("│", " ").replace("┃", " ").split())
