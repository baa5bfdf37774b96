"""Rendering a reset: irreversible facts on their own lines, a dry run never in the past tense."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from the_loop.commands.render import Result, Stderr, TextLine

if TYPE_CHECKING:
    from the_loop.dispatch.workspace import Workspace
    from the_loop.reset import ResetOutcome
    from the_loop.sessions.session import Session

END_FAILED = "could not end the session"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _removals(outcome: ResetOutcome) -> str:
    """The pieces a reset removes, then the sections another release wrote, by name."""
    listed = [piece for piece in outcome.removed if piece != "workspace"]
    if not outcome.foreign:
        return ", ".join(listed)
    older = f"{_plural(len(outcome.foreign), 'section')} an older release wrote: "
    older += ", ".join(outcome.foreign)
    if not listed:
        return older
    joiner = ", and " if len(listed) > 1 else " and "
    return ", ".join(listed) + joiner + older


def describe_checkout(workspace: Workspace, session: Session) -> str:
    """What removing a live item's checkout would lose, or "" when it has none we would remove."""
    from the_loop.errors import TheLoopError

    paths = [Path(endpoint.cwd) for endpoint in session.endpoints() if endpoint.cwd]
    for path in paths:
        if not path.is_dir() or not workspace.contains(path):
            continue
        try:
            status = workspace.status(path)
        except TheLoopError:
            return "would remove the workspace checkout — its git status could not be read"
        if status.clean:
            return "would remove the workspace checkout — it holds no uncommitted or unpushed work"
        losses: list[str] = []
        if status.uncommitted_files:
            losses.append(_plural(status.uncommitted_files, "uncommitted file"))
        if status.unpushed_commits:
            losses.append(_plural(status.unpushed_commits, "unpushed commit"))
        return f"would remove the workspace checkout — {' and '.join(losses)} would be lost"
    return ""


def _item_lines(outcome: ResetOutcome, preview: str) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for one item."""
    ref = outcome.ref
    out: list[str] = []
    err: list[str] = []
    harness = f"{outcome.harness} " if outcome.harness else ""
    listed = _removals(outcome)
    if outcome.dry_run:
        if outcome.was_live:
            out.append(f"{ref}: would end a live {harness}session")
        if preview:
            out.append(f"{ref}: {preview}")
        if listed:
            out.append(f"{ref}: would remove {listed}")
    else:
        if outcome.ended:
            out.append(f"{ref}: ended a live {harness}session")
        if "workspace" in outcome.removed:
            out.append(f"{ref}: removed the workspace checkout — uncommitted work in it is gone")
        if listed:
            out.append(f"{ref}: reset — removed {listed}")
    err.extend(f"{ref}: error: {error}" for error in outcome.errors)
    if not outcome.found:
        err.append(f"{ref}: nothing to reset")
    return out, err


def _summary(outcomes: list[ResetOutcome], dry_run: bool) -> str:
    done = sum(1 for outcome in outcomes if outcome.ok)
    failed = sum(1 for outcome in outcomes if outcome.errors)
    if dry_run:
        return f"would reset {_plural(done, 'work item')} (dry run — nothing was changed)"
    tail = f", {failed} failed" if failed else ""
    return f"reset {_plural(done, 'work item')}{tail}"


def reported(
    outcomes: list[ResetOutcome],
    previews: dict[str, str],
    problems: list[str],
    *,
    dry_run: bool,
    exit_code: int,
) -> Result:
    """The result: one item per outcome (with its checkout preview), the text lines."""
    items: list[dict[str, Any]] = []
    for outcome in outcomes:
        entry = outcome.to_dict()
        if outcome.ref in previews:
            entry["checkout"] = previews[outcome.ref]
        items.append(entry)

    def text() -> list[TextLine]:
        lines: list[TextLine] = []
        for outcome in outcomes:
            out, err = _item_lines(outcome, previews.get(outcome.ref, ""))
            lines += [*out, *(Stderr(line) for line in err)]
        lines.append(_summary(outcomes, dry_run))
        return lines

    return Result(
        items=items,
        text=text,
        summary={"dryRun": dry_run},
        errors=tuple(problems),
        exit_code=exit_code,
    )
