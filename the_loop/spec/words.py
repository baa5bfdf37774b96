"""What the spec lane says ([decision 028]): the phase's paste into the agent's session,
the gate's comment on the ticket, the paste that sends a phase back, the line a fresh
session's first prompt gets, and the review comments appended to an artifact. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from the_loop.spec.artifacts import ARTIFACT_NAMES, REQUIRED_SECTIONS, section_span

#: The heading the review comments of an artifact go under.
REVIEW_HEADING = "Review comments"

#: What each phase asks of the agent, after "Write".
_WORK = {
    "requirements": "the requirements of this work item: the problem, what must hold, and "
    "how a person will tell it holds",
    "design": "the design that meets the approved requirements, with its testing plan",
    "tasks": "the tasks that carry out the approved design, small and in order",
}


@dataclass(frozen=True)
class ReviewEntry:
    """One person's comment (or review) made while a gate was open, as it is appended:
    who, when, its link (what it is found by), what it decided (``""``: nothing), and
    its words as a reviewer sees them."""

    login: str
    at: str
    link: str
    body: str
    decided: str = ""


def artifact_name(phase: str) -> str | None:
    return ARTIFACT_NAMES.get(phase)


def phase_paste(spec_dir: str, phase: str) -> str:
    """What the agent is told when ``phase`` starts: what to write, where, and how to say
    it is done."""
    name = ARTIFACT_NAMES.get(phase)
    if name is None:
        return (
            f"[the-loop] Spec lane: the tasks are approved or done; the phase now is "
            f"implementation. Carry out {spec_dir}/tasks.md on your branch and deliver it as "
            "a pull request (its reviews and CI failures will be pasted here). When the work "
            "is delivered, run `the-loop done implementation` in your checkout."
        )
    sections = ", ".join(f"`## {section}`" for section in REQUIRED_SECTIONS[phase])
    return (
        f"[the-loop] Spec lane: the phase now is {phase}. Write {_WORK[phase]} in "
        f"{spec_dir}/{name} in your checkout, with the sections {sections}, commit it on "
        f"your branch and push the branch. Then run `the-loop done {phase}` in your "
        f"checkout: it checks the "
        f"file and opens the gate, where a person approves it or asks for changes. Do not "
        f"start the next phase before that."
    )


def changes_paste(
    spec_dir: str, phase: str, *, by: str, what: str, entries: Sequence[ReviewEntry]
) -> str:
    """What the agent is told when a person sends ``phase`` back: who, what to change,
    and every review comment of the gate."""
    name = ARTIFACT_NAMES.get(phase, "")
    lines = [
        f"[the-loop] Spec lane: @{by} asked for changes to {phase} ({spec_dir}/{name}).",
    ]
    if what.strip():
        lines += ["", "What to change:", *(f"> {line}" for line in what.strip().splitlines())]
    if entries:
        lines += ["", f"The review comments of the gate (also appended to {name}):"]
        for entry in entries:
            lines += ["", _said_by(entry), *_quoted(entry.body)]
    lines += [
        "",
        f"Revise {spec_dir}/{name}, keeping its `## {REVIEW_HEADING}` section, commit it, "
        f"push the branch, then run `the-loop done {phase}` again.",
    ]
    return "\n".join(lines)


def gate_comment(ref: str, phase: str, artifact: str, link: str, round_: int) -> str:
    """The marked comment that opens ``phase``'s gate: what is ready, where, how to decide."""
    where = f"[{artifact}]({link})" if link else f"`{artifact}`"
    again = f" (round {round_})" if round_ > 1 else ""
    return "\n".join(
        [
            f"the-loop: the **{phase}** document of {ref} is ready for review{again}: {where}.",
            "",
            "To decide, a person with write access comments one of these on its own line:",
            "- `the-loop approve`: it passes and the next phase starts;",
            "- `the-loop changes <what to change>`: it goes back to the agent with every "
            "comment made while this gate is open;",
            f"- `the-loop skip {phase}`: it is skipped.",
            "",
            "An approving or changes-requested review of the pull request holding it decides "
            "too. Nothing else does: other comments are kept and appended to the document "
            "under `## Review comments` when it is decided.",
        ]
    )


def lane_line(spec_dir: str, phase: str, status: str) -> str:
    """What a fresh session's first prompt says of the lane the item is in."""
    files = ", ".join(f"{spec_dir}/{name}" for name in ARTIFACT_NAMES.values())
    return (
        f"[the-loop] This work item follows the spec lane (requirements, design, tasks, "
        f"implementation). Its documents are {files} in your checkout, and its state is "
        f"{spec_dir}/work-item-state.json. The current phase is {phase} ({status})."
    )


def with_review_comments(text: str, entries: Sequence[ReviewEntry]) -> str | None:
    """``text`` with each of ``entries`` not yet in it appended under ``## Review
    comments`` (the section made at the end when there is none); None when every entry
    is already there (its :func:`entry_mark`, not merely its link, which a later comment
    may quote), so an entry is appended exactly once."""
    fresh = [entry for entry in entries if entry_mark(entry.link) not in text]
    if not fresh:
        return None
    block: list[str] = []
    for entry in fresh:
        quoted = (f"  {line}" for line in _quoted(entry.body))
        block += ["", f"- {_said_by(entry)}", f"  {entry_mark(entry.link)}", "", *quoted]
    lines = text.splitlines()
    span = section_span(text, REVIEW_HEADING)
    if span is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", f"## {REVIEW_HEADING}", *block]
        return "\n".join(lines) + "\n"
    end = span[1]
    while end > span[0] + 1 and not lines[end - 1].strip():
        end -= 1
    rest = lines[end:]
    return "\n".join([*lines[:end], *block, *([""] if rest else []), *rest]) + "\n"


def entry_mark(link: str) -> str:
    """The hidden line an appended entry is found by. A comment's own words never hold
    one: what a reader cannot see, HTML comments among it, is dropped from them first."""
    return f"<!-- the-loop:review-comment {link} -->"


def _said_by(entry: ReviewEntry) -> str:
    decided = f", {entry.decided}" if entry.decided else ""
    return f"@{entry.login} at {entry.at} ([link]({entry.link})){decided}:"


def _quoted(body: str) -> list[str]:
    lines = body.strip().splitlines()
    return [f"> {line}".rstrip() for line in lines] if lines else ["> (no words)"]
