"""The review comments appended to a spec document: under their section, each once."""

from __future__ import annotations

from the_loop.spec.words import ReviewEntry, with_review_comments

ONE = ReviewEntry("alice", "2026-12-06T10:00:00Z", "https://x/15#issuecomment-1", "add X\nand Y")
TWO = ReviewEntry("bob", "2026-12-06T10:01:00Z", "https://x/15#issuecomment-2", "", "approved")


def test_a_document_without_the_section_gets_it_at_its_end() -> None:
    written = with_review_comments("# Design\n\n## Design\n\nText.\n\n\n", [ONE])
    assert written is not None
    assert written.endswith(
        "Text.\n\n## Review comments\n\n"
        "- @alice at 2026-12-06T10:00:00Z ([link](https://x/15#issuecomment-1)):\n"
        "  <!-- the-loop:review-comment https://x/15#issuecomment-1 -->\n\n"
        "  > add X\n  > and Y\n"
    )


def test_entries_go_at_the_end_of_the_section_before_the_next_one() -> None:
    text = "## Design\n\n## Review comments\n\n- earlier\n\n## Testing plan\n\nPlan.\n"
    written = with_review_comments(text, [TWO])
    assert written is not None
    before, after = written.split("## Testing plan")
    assert before.rstrip().endswith("  > (no words)") and "- earlier" in before
    assert after == "\n\nPlan.\n"


def test_an_entry_already_there_is_never_appended_again() -> None:
    once = with_review_comments("## Tasks\n", [ONE])
    assert once is not None
    assert with_review_comments(once, [ONE]) is None
    twice = with_review_comments(once, [ONE, TWO])
    assert twice is not None and twice.count("issuecomment-1)") == 1
    assert twice.count("issuecomment-2)") == 1


def test_a_heading_inside_a_fence_is_not_the_section() -> None:
    text = "## Design\n\n```\n## Review comments\n```\n"
    written = with_review_comments(text, [ONE])
    assert written is not None and written.count("## Review comments") == 2
    assert written.index("issuecomment-1") > written.index("```\n", 12)


def test_a_comment_quoting_another_ones_link_does_not_stand_for_it() -> None:
    quoting = ReviewEntry(
        "bob",
        "2026-12-06T09:59:00Z",
        "https://x/15#issuecomment-0",
        "as [alice said](https://x/15#issuecomment-1)",
    )
    first = with_review_comments("## Tasks\n", [quoting])
    assert first is not None
    written = with_review_comments(first, [ONE])
    assert written is not None and "> add X" in written
