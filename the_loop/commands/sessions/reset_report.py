"""Rendering a reset: irreversible facts on their own lines, a dry run never in the past tense."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from the_loop.commands.render import Result, Stderr, TextLine
from the_loop.commands.sessions.checkout_lines import checkout_line, plural

if TYPE_CHECKING:
    from the_loop.dispatch.disposal import CheckoutDisposal
    from the_loop.reset import ResetOutcome

END_FAILED = "could not end the session"

Checkouts = dict[str, tuple["CheckoutDisposal", ...]]


def _removals(outcome: ResetOutcome) -> str:
    """The pieces a reset removes, then the sections another release wrote, by name."""
    listed = [piece for piece in outcome.removed if piece != "workspace"]
    if not outcome.foreign:
        return ", ".join(listed)
    older = f"{plural(len(outcome.foreign), 'section')} an older release wrote: "
    older += ", ".join(outcome.foreign)
    if not listed:
        return older
    joiner = ", and " if len(listed) > 1 else " and "
    return ", ".join(listed) + joiner + older


def _left_line(ref: str, left: tuple[str, ...], *, dry_run: bool) -> str:
    """What the reset leaves in tmux, and what ends it."""
    verb = "would keep" if dry_run else "kept"
    return (
        f"{ref}: {verb} tmux {', '.join(left)} for the transcript (a reset never ends one); "
        f"`the-loop sessions cleanup --work-item '{ref}'` ends it"
    )


def _item_lines(
    outcome: ResetOutcome, checkouts: tuple[CheckoutDisposal, ...], left: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for one item; ``checkouts`` what its close did (or
    would do) with each checkout, ``left`` the tmux sessions the reset leaves."""
    ref = outcome.ref
    out: list[str] = []
    err: list[str] = []
    harness = f"{outcome.harness} " if outcome.harness else ""
    listed = _removals(outcome)
    if outcome.dry_run:
        if outcome.was_live:
            out.append(f"{ref}: would end a live {harness}session")
        out += [checkout_line(ref, done, dry_run=True) for done in checkouts]
        if listed:
            out.append(f"{ref}: would remove {listed}")
    else:
        if outcome.ended:
            out.append(f"{ref}: ended a live {harness}session")
        out += [checkout_line(ref, done) for done in checkouts]
        if listed:
            out.append(f"{ref}: reset — removed {listed}")
    if left:
        out.append(_left_line(ref, left, dry_run=outcome.dry_run))
    err.extend(f"{ref}: error: {error}" for error in outcome.errors)
    if not outcome.found:
        err.append(f"{ref}: nothing to reset")
    return out, err


def _summary(outcomes: list[ResetOutcome], dry_run: bool) -> str:
    done = sum(1 for outcome in outcomes if outcome.ok)
    failed = sum(1 for outcome in outcomes if outcome.errors)
    if dry_run:
        return f"would reset {plural(done, 'work item')} (dry run — nothing was changed)"
    tail = f", {failed} failed" if failed else ""
    return f"reset {plural(done, 'work item')}{tail}"


def reported(
    outcomes: list[ResetOutcome],
    checkouts: Checkouts,
    problems: list[str],
    *,
    left: dict[str, tuple[str, ...]] | None = None,
    dry_run: bool,
    exit_code: int,
) -> Result:
    """The result: one item per outcome (with what was done with its checkouts), the lines.

    The items are built only when JSON is asked for, as the renderer writes them.
    """
    kept = left or {}

    def item(outcome: ResetOutcome) -> dict[str, Any]:
        entry = outcome.to_dict()
        entry["checkouts"] = [done.to_dict() for done in checkouts.get(outcome.ref, ())]
        entry["tmuxKept"] = list(kept.get(outcome.ref, ()))
        return entry

    def text() -> list[TextLine]:
        lines: list[TextLine] = []
        for outcome in outcomes:
            out, err = _item_lines(
                outcome, checkouts.get(outcome.ref, ()), kept.get(outcome.ref, ())
            )
            lines += [*out, *(Stderr(line) for line in err)]
        lines.append(_summary(outcomes, dry_run))
        return lines

    return Result(
        items=map(item, outcomes),
        text=text,
        summary={"dryRun": dry_run},
        errors=tuple(problems),
        exit_code=exit_code,
    )
