"""A stand-in agent for the spec lane, run through the ``command`` harness in its checkout.

It writes its first prompt and everything pasted into its pane to one file, and acts on
the lane's pastes as an agent told them would: for ``the phase now is <phase>`` it writes
the phase's document with its required sections, commits it and runs ``the-loop done
<phase>``; for ``asked for changes to <phase>`` it revises the document (one more line
per round), commits and runs ``done`` again. Every ``done`` it ran, and what it said, is
written to the file too. The lane's words are the only thing it reads, as a real agent
reads them.

Run as ``python spec_agent.py OUT PROMPT``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SECTIONS = {
    "requirements": ("Problem", "Requirements", "Acceptance criteria"),
    "design": ("Design", "Testing plan"),
    "tasks": ("Tasks",),
}
STARTS = re.compile(r"Spec lane: the phase now is (\w+)\. Write .*? in (\S+\.md) in your checkout")
CHANGES = re.compile(r"Spec lane: @\S+ asked for changes to (\w+) \((\S+\.md)\)")
IMPLEMENTATION = "Spec lane: the tasks are approved or done; the phase now is implementation"


def main() -> None:
    out, prompt = Path(sys.argv[1]), sys.argv[2]
    with out.open("a", encoding="utf-8") as log:
        log.write(f"PROMPT {prompt}\n")
    rounds: dict[str, int] = {}
    for line in sys.stdin:
        with out.open("a", encoding="utf-8") as log:
            log.write(line)
        if IMPLEMENTATION in line:
            done(out, "implementation")
            continue
        started, sent_back = STARTS.search(line), CHANGES.search(line)
        if started is not None:
            phase, path = started.group(1), started.group(2)
            rounds[phase] = 1
            write(Path(path), phase, rounds[phase])
            done(out, phase)
        elif sent_back is not None:
            phase, path = sent_back.group(1), sent_back.group(2)
            rounds[phase] = rounds.get(phase, 1) + 1
            revise(Path(path), phase, rounds[phase])
            done(out, phase)


def write(path: Path, phase: str, round_: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = [f"# {phase}", ""]
    for section in SECTIONS[phase]:
        body += [f"## {section}", "", f"The {section.lower()} of this item.", ""]
    body.append(f"Written in round {round_}.")
    path.write_text("\n".join(body) + "\n", encoding="utf-8")
    commit(path, f"{phase}: round {round_}")


def revise(path: Path, phase: str, round_: int) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"\nRevised in round {round_}.\n", encoding="utf-8")
    commit(path, f"{phase}: round {round_}")


def commit(path: Path, message: str) -> None:
    git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@example.com"]
    subprocess.run([*git, "add", "--", str(path)], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", message, "--", str(path)], check=True)
    subprocess.run([*git, "push", "--quiet", "origin", "HEAD"], check=True)


def done(out: Path, phase: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "the_loop", "done", phase],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )
    with out.open("a", encoding="utf-8") as log:
        said = (ran.stdout + ran.stderr).strip().replace("\n", " | ")
        log.write(f"DONE {phase} {ran.returncode} {said}\n")


if __name__ == "__main__":
    main()
