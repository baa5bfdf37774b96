"""Where each phase's artifact lives and the sections it must hold.

``docs/specs/<id>/requirements.md``, ``design.md`` and ``tasks.md``, beside the repository
file (``<id>`` as :class:`WorkItemStateFile` chooses it); ``implementation`` has none (its
work is the pull requests). A section is a level-2 ATX heading (``## Problem``) outside
any fenced code block, matched by its words with case and spacing aside. The file is read
as a regular file only: a link, a FIFO or a directory is no artifact.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from the_loop.fsio import read_regular
from the_loop.repofile.file import WorkItemStateFile

#: Each phase's artifact, in the spec directory.
ARTIFACT_NAMES = {"requirements": "requirements.md", "design": "design.md", "tasks": "tasks.md"}
#: The sections each artifact must hold, as its ``## `` headings.
REQUIRED_SECTIONS: dict[str, tuple[str, ...]] = {
    "requirements": ("Problem", "Requirements", "Acceptance criteria"),
    "design": ("Design", "Testing plan"),
    "tasks": ("Tasks",),
}

_FENCE = re.compile(r" {0,3}(?P<marks>`{3,}|~{3,})(?P<info>.*)\Z")
_HEADING = re.compile(r" {0,3}##(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*\Z")


def artifact_path(state_file: WorkItemStateFile, phase: str) -> Path | None:
    """Where ``phase``'s artifact lives in the checkout, or None for a phase without one."""
    name = ARTIFACT_NAMES.get(phase)
    return None if name is None else state_file.directory / name


def section_headings(text: str) -> list[str]:
    """The words of every level-2 heading of ``text`` outside fenced code blocks, in order."""
    return [words for _, words in _headings(text.splitlines())]


def section_span(text: str, name: str) -> tuple[int, int] | None:
    """The lines of ``text``'s first level-2 section named ``name`` (outside fenced code
    blocks): the heading's index and the index after its last line (the next level-2
    heading, or the end); None when there is none."""
    lines = text.splitlines()
    headings = _headings(lines)
    wanted = _words(name)
    start = next((index for index, words in headings if words == wanted), None)
    if start is None:
        return None
    return start, next((index for index, _ in headings), len(lines))


def _headings(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Each level-2 heading of ``lines`` outside fenced code blocks: its index and words."""
    fence: tuple[str, int] | None = None  # the open fence's character and length
    for index, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening is not None and _closes(opening, fence):
                fence = None
            continue
        if opening is not None and not (opening["marks"][0] == "`" and "`" in opening["info"]):
            fence = (opening["marks"][0], len(opening["marks"]))
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            yield index, _words(heading["text"] or "")


def missing_sections(text: str, phase: str) -> tuple[str, ...]:
    """The sections ``phase``'s artifact must hold that ``text`` does not, in their order."""
    held = set(section_headings(text))
    return tuple(name for name in REQUIRED_SECTIONS.get(phase, ()) if _words(name) not in held)


@dataclass(frozen=True)
class ArtifactCheck:
    """What ``phase``'s artifact holds: its path (None: the phase has none), whether it is
    there, and the required sections it lacks."""

    phase: str
    path: Path | None
    exists: bool
    missing: tuple[str, ...]
    unreadable: str = ""
    #: The lines it was asked to keep that it no longer holds (its review comments' marks).
    lost: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.path is None or (self.exists and not self.missing and not self.lost)

    def problem(self, shown: str) -> str | None:
        """What is missing, in one sentence naming the file as ``shown``; None when nothing."""
        if self.ok:
            return None
        if self.unreadable:
            return f"{shown} cannot be read: {self.unreadable}"
        if not self.exists:
            needed = _listed(REQUIRED_SECTIONS[self.phase])
            return f"{shown} is missing: write it, with the sections {needed}, and commit it"
        if self.missing:
            noun = "section" if len(self.missing) == 1 else "sections"
            return f"{shown} lacks the {noun} {_listed(self.missing)}"
        count = "one" if len(self.lost) == 1 else str(len(self.lost))
        return (
            f"{shown} no longer holds {count} of the review comments the-loop appended to it: "
            "keep its `## Review comments` section as the-loop wrote it (it is in the "
            "branch's history) and commit"
        )


def check_artifact(
    state_file: WorkItemStateFile, phase: str, keeps: Sequence[str] = ()
) -> ArtifactCheck:
    """Read ``phase``'s artifact in ``state_file``'s checkout and say what it lacks: its
    required sections, and which of the lines ``keeps`` it must still hold it does not."""
    path = artifact_path(state_file, phase)
    if path is None:
        return ArtifactCheck(phase, None, exists=False, missing=())
    status, content, problem = read_regular(path)
    if status != "ok":
        missing = REQUIRED_SECTIONS[phase]
        return ArtifactCheck(phase, path, exists=False, missing=missing, unreadable=problem)
    text = content.decode("utf-8", errors="replace")
    lost = tuple(line for line in keeps if line not in text)
    return ArtifactCheck(phase, path, exists=True, missing=missing_sections(text, phase), lost=lost)


def _closes(line: re.Match[str], fence: tuple[str, int]) -> bool:
    """Whether a fence line closes the open ``fence``: its character, at least as long,
    nothing after it."""
    marks = line["marks"]
    return marks[0] == fence[0] and len(marks) >= fence[1] and not line["info"].strip()


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


def _listed(sections: tuple[str, ...]) -> str:
    named = [f"## {name}" for name in sections]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
