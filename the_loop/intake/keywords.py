"""The keyword grammar: which lines of a comment body ask the-loop to act.

A keyword line starts (after at most three spaces) with ``<prefix>``, one or more
spaces or tabs, then a verb, both matched case-insensitively in ASCII only; the
verb is not followed by a word character, ``:`` or ``-``. Lines inside a fenced
code block, a ``>`` quote or a multi-line HTML comment, and lines indented as code
(four spaces or a tab), never command. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

DEFAULT_PREFIX = "the-loop"
#: The verbs that decide a spec lane's gate or skip one of its phases ([decision 028]).
SPEC_VERBS = ("approve", "changes", "skip")
VERBS = ("start", "pause", "resume", "stop", "cleanup", "allow", "deny", "budget", *SPEC_VERBS)
#: The verbs that answer the agent's permission prompt: never a session's life.
ANSWERS = ("allow", "deny")
#: The verbs that act on the item's ledger or its lane, never on its session's life: at
#: first sight they are history (the ledger and the repository file they acted on travel
#: with the item).
LEDGER_VERBS = (*ANSWERS, "budget", *SPEC_VERBS)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)\Z")
_QUOTE = re.compile(r" {0,3}>")
_HTML_OPEN, _HTML_CLOSE = "<!--", "-->"
_BAD_PREFIX = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class KeywordScan:
    """The distinct verbs of one comment, in the order they first appear."""

    verbs: tuple[str, ...] = ()

    @property
    def is_keyword(self) -> bool:
        """True when at least one line is a keyword line (the comment is never pasted)."""
        return bool(self.verbs)

    @property
    def ambiguous(self) -> bool:
        """True when two different verbs appear: neither runs."""
        return len(self.verbs) > 1

    @property
    def verb(self) -> str | None:
        """The one verb to run; None for no keyword or an ambiguous comment."""
        return self.verbs[0] if len(self.verbs) == 1 else None


@dataclass(frozen=True)
class KeywordGrammar:
    """The grammar for one ``routing.control.keywordPrefix``."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not self.prefix or _BAD_PREFIX.search(self.prefix):
            raise ValueError(
                f"invalid keyword prefix {self.prefix!r}: it must be one word, "
                "without spaces or control characters"
            )

    def scan(self, body: str) -> KeywordScan:
        """The verbs of ``body``'s keyword lines (the same verb twice counts once)."""
        pattern = _keyword_line(self.prefix)
        verbs: list[str] = []
        for line in commanding_lines(body):
            match = pattern.match(line)
            if match is not None:
                verb = match.group(1).lower()
                if verb not in verbs:
                    verbs.append(verb)
        return KeywordScan(tuple(verbs))

    def arguments(self, body: str, verb: str) -> str:
        """What follows ``verb`` on its first keyword line (``"+5"`` of ``budget +5``)."""
        pattern = _keyword_line(self.prefix)
        for line in commanding_lines(body):
            match = pattern.match(line)
            if match is not None and match.group(1).lower() == verb:
                return line[match.end() :].strip()
        return ""


@functools.lru_cache(maxsize=16)
def _keyword_line(prefix: str) -> re.Pattern[str]:
    # ``(?ai:...)``: ASCII-only case folding, so ``ſtop`` (long s) is not ``stop``;
    # the look-ahead stays Unicode, so ``stopé`` is one word, not ``stop``.
    verbs = "|".join(VERBS)
    return re.compile(rf" {{0,3}}(?ai:{re.escape(prefix)})[ \t]+(?ai:({verbs}))(?![\w:-])")


def commanding_lines(body: str) -> list[str]:
    """The lines of ``body`` that may command: outside fences, quotes and HTML comments.

    A quote runs on over the non-blank lines after a ``>`` line (Markdown's lazy
    continuation shows them inside the quote), up to a blank line; an HTML comment
    opened inside a quote ends with it.
    """
    lines: list[str] = []
    fence: str | None = None
    in_html_comment = in_quote = False
    for line in _LINE_BREAK.split(body):
        if fence is not None:
            fence = None if _closes_fence(line, fence) else fence
            continue
        if in_html_comment:
            in_html_comment = _html_comment_open(line, inside=True)
            continue
        fence = _opens_fence(line)
        if fence is not None:
            in_quote = False
            continue
        in_quote = bool(_QUOTE.match(line)) or (in_quote and bool(line.strip()))
        if not in_quote:
            lines.append(line)
            in_html_comment = _html_comment_open(line, inside=False)
    return lines


def _opens_fence(line: str) -> str | None:
    """The fence a line opens (its run of backticks or tildes), else None."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    fence, info = match.group(1), match.group(2)
    if fence[0] == "`" and "`" in info:
        return None  # CommonMark: a backtick fence's info string holds no backtick
    return fence


def _closes_fence(line: str, fence: str) -> bool:
    """True for a line of at least as many of the fence's characters, and nothing else."""
    stripped = line.strip(" \t")
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def _html_comment_open(line: str, *, inside: bool) -> bool:
    """Whether an HTML comment is still open at the end of ``line``."""
    position = 0
    while True:
        if inside:
            end = line.find(_HTML_CLOSE, position)
            if end < 0:
                return True
            inside, position = False, end + len(_HTML_CLOSE)
        else:
            start = line.find(_HTML_OPEN, position)
            if start < 0:
                return False
            inside, position = True, start + len(_HTML_OPEN)
