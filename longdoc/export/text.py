"""Plain-text view: main text in reading order, furniture left out unless kept.

Furniture (headers, footers, page numbers) is kept where it stands on the
page with ``furniture=True`` (export.furniture keep).

Blocks are separated by a blank line; pages by a form feed (``\\f``) on its
own line, as pdftotext does. A code block's lines come as they are, their
indentation kept. A figure contributes the labels drawn in it (one per
line), as every block contributes the text a reader sees. A failed page
contributes nothing but its form feed; the JSON export says why it failed.
"""

from __future__ import annotations

from longdoc.model import BlockKind, Page

PAGE_SEPARATOR = "\n\f\n"


def block_text(kind: BlockKind, text: str) -> str:
    """A block's text as plain text: a code block's keeps the indentation
    of its first line (only blank lines at either end and trailing spaces
    go); any other block's is stripped."""
    if kind is BlockKind.CODE:
        return text.strip("\n").rstrip() if text.strip() else ""
    return text.strip()


def page_text(page: Page, *, furniture: bool = False) -> str:
    """The main text of one page (no trailing separator); with
    ``furniture``, its headers, footers and page numbers too."""
    parts = [block_text(b.kind, b.text) for b in page.main_blocks(furniture=furniture)]
    return "\n\n".join(p for p in parts if p)
