"""The agent's first prompt: ``routing.prompt`` with the ticket's title, URL and body.

``{title}``, ``{url}`` and ``{body}`` are replaced (nothing else in the template is
read as a placeholder, so braces in it stay as written); an empty template gives
:data:`DEFAULT_TEMPLATE`. The body is cut at the delivery's limit, control
characters dropped.
"""

from __future__ import annotations

from the_loop.intake.delivery import CUT_AT, clean_text
from the_loop.intake.ports import ItemFacts

DEFAULT_TEMPLATE = (
    "You are working on {url}: {title}\n\n"
    "The ticket says:\n{body}\n\n"
    "Comments on the ticket will be pasted here as they arrive."
)


def render_prompt(template: str, facts: ItemFacts) -> str:
    """``template`` (or the default) with ``{title}``, ``{url}`` and ``{body}`` filled in."""
    values = {
        "{title}": clean_text(facts.title).replace("\n", " "),
        "{url}": clean_text(facts.url).replace("\n", ""),
        "{body}": clean_text(facts.body)[:CUT_AT],
    }
    text = template or DEFAULT_TEMPLATE
    out: list[str] = []
    index = 0
    while index < len(text):
        for placeholder, value in values.items():
            if text.startswith(placeholder, index):
                out.append(value)
                index += len(placeholder)
                break
        else:
            out.append(text[index])
            index += 1
    return "".join(out)
