"""The line each close path prints for a checkout it removed or kept (or, dry, would).

One line per checkout, the same counts in a dry run and a real one, and a real run
never claims a loss that did not happen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.cleanup import CheckoutFate


def plural(count: int, noun: str) -> str:
    """``1 noun`` / ``2 nouns``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def checkout_line(ref: str, disposal: CheckoutFate, *, dry_run: bool = False) -> str:
    """``<ref>: removed the checkout P (clean)`` and its kept, forced and dry-run forms."""
    path = disposal.path
    if not disposal.removed:
        keep = "would keep" if dry_run else "kept"
        return f"{ref}: {keep} the checkout {path}: {_holding(disposal)} — `--force` removes it"
    remove = "would remove" if dry_run else "removed"
    if disposal.clean:
        return f"{ref}: {remove} the checkout {path} (clean)"
    return (
        f"{ref}: {remove} the checkout {path} — {_losses(disposal, dry_run)} ({disposal.forced_by})"
    )


def _holding(disposal: CheckoutFate) -> str:
    """What a kept checkout holds: ``2 uncommitted files, 1 unpushed commit``."""
    if disposal.unreadable:
        return f"its git status could not be read ({disposal.unreadable})"
    held = [
        plural(count, noun)
        for count, noun in (
            (disposal.uncommitted_files, "uncommitted file"),
            (disposal.unpushed_commits, "unpushed commit"),
        )
        if count
    ]
    return ", ".join(held)


def _losses(disposal: CheckoutFate, dry_run: bool) -> str:
    """What a forced removal discards, and where unpushed commits stay when they do."""
    if disposal.unreadable:
        return f"its git status could not be read ({disposal.unreadable})"
    files, commits, branch = (
        disposal.uncommitted_files,
        disposal.unpushed_commits,
        disposal.branch_kept,
    )
    gone = [plural(files, "uncommitted file")] if files else []
    if commits and not branch:
        gone.append(plural(commits, "unpushed commit"))
    pieces: list[str] = []
    if gone:
        single = len(gone) == 1 and (files or commits) == 1
        verb = "would be" if dry_run else "was" if single else "were"
        pieces.append(f"{' and '.join(gone)} {verb} discarded")
    if commits and branch:
        verb = "would stay" if dry_run else "stays" if commits == 1 else "stay"
        pieces.append(
            f"{plural(commits, 'unpushed commit')} {verb} on branch {branch} of the shared clone"
        )
    return "; ".join(pieces)
