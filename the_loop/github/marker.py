"""The marker every comment the-loop posts carries, defined once for poster and poller.

:func:`the_loop.github.poster.post_issue_comment` puts it after the text of every body it
posts; the poller settles a comment that carries it as the-loop's own, so it never
runs the-loop's own words as a command. An HTML comment: invisible on GitHub.
"""

from __future__ import annotations

AGENT_COMMENT_MARKER = "<!-- the-loop:agent-comment -->"


def carries_marker(body: str) -> bool:
    """Whether ``body`` holds the marker: the-loop's own words (or its agent's), which the
    poller settles and never pastes back, be it a comment, a review or an inline comment."""
    return AGENT_COMMENT_MARKER in body
