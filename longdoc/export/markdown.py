"""Markdown view of one page.

- title → ``#``, heading level L → ``#`` × (L+1) (capped at 6);
- list → one ``- item`` per line of the block (numbered markers are kept as
  written, so an ordered list keeps its numbers);
- side note → a blockquote right after the paragraph it sits beside;
- caption → italics; figure → an HTML comment; everything else → text.
- A page starts with ``<!-- page N -->`` so a reader can map text back.
Furniture (headers, footers, page numbers) is left out; it is in the JSON.
"""

from __future__ import annotations

import re

from longdoc.model import Block, BlockKind, Page

_BULLET = re.compile(r"^\s*(?:[-*•·◦▪‣–]\s+)")


def _list_items(block: Block) -> list[str]:
    items = [ln for ln in block.text.split("\n") if ln.strip()]
    return [f"- {_BULLET.sub('', item).strip()}" if _BULLET.match(item) else f"- {item.strip()}" for item in items]


def block_markdown(block: Block) -> str:
    text = block.text.strip()
    if not text and block.kind is not BlockKind.FIGURE:
        return ""
    kind = block.kind
    if kind is BlockKind.TITLE:
        return f"# {text}"
    if kind is BlockKind.HEADING:
        level = min(6, (block.level or 1) + 1)
        return f"{'#' * level} {text}"
    if kind is BlockKind.LIST:
        return "\n".join(_list_items(block))
    if kind is BlockKind.SIDENOTE:
        return "\n".join(f"> {ln}" for ln in text.split("\n"))
    if kind is BlockKind.CAPTION:
        return f"*{text}*"
    if kind is BlockKind.FIGURE:
        return f"<!-- figure{': ' + text if text else ''} -->"
    return text


def page_markdown(page: Page) -> str:
    parts = [f"<!-- page {page.number} -->"]
    if page.error is not None:
        parts.append(f"<!-- page {page.number} failed: {page.error.code} -->")
    for block in page.main_blocks():
        md = block_markdown(block)
        if md:
            parts.append(md)
    return "\n\n".join(parts)
