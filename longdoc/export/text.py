"""Plain-text view: main text in reading order, furniture left out.

Blocks are separated by a blank line; pages by a form feed (``\\f``) on its
own line, as pdftotext does. A figure contributes the labels drawn in it
(one per line), as every block contributes the text a reader sees. A
failed page contributes nothing but its form feed; the JSON export says
why it failed.
"""

from __future__ import annotations

from longdoc.model import Page

PAGE_SEPARATOR = "\n\f\n"


def page_text(page: Page) -> str:
    """The main text of one page (no trailing separator)."""
    parts = [b.text.strip() for b in page.main_blocks()]
    return "\n\n".join(p for p in parts if p)
