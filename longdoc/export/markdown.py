"""Markdown view of one page.

- title → ``#``, heading level L → ``#`` × (L+1) (capped at 6);
- list → one ``- item`` per line of the block (numbered markers are kept as
  written, so an ordered list keeps its numbers);
- side note → a blockquote right after the paragraph it sits beside;
- caption → italics; figure → a ``<!-- figure -->`` marker followed by the
  labels drawn in it as visible text, one per line (the text a reader sees
  in a picture is never only in a comment); everything else → text.
- code → a fenced block (```` ``` ````, longer than any run of backticks in
  the code), its lines and indentation as they are.
- table with cells → a pipe table (its first row as the header row), or an
  HTML ``<table>`` when a cell spans rows or columns (Markdown cannot say
  so); a table without cells → its text.
- A page starts with ``<!-- page N -->`` so a reader can map text back.
Furniture (headers, footers, page numbers) is left out; it is in the JSON.
With ``furniture=True`` (export.furniture keep) it is kept as plain text
where it stands: headers before the page's body, footers after.
"""

from __future__ import annotations

import html
import re

from longdoc.model import Block, BlockKind, Page, TableCell

_BULLET = re.compile(r"^\s*(?:[-*•·◦▪‣–]\s+)")


def list_items(block: Block) -> list[str]:
    """A list block's items as Markdown (``- item``)."""
    items = [ln for ln in block.text.split("\n") if ln.strip()]
    return [f"- {_BULLET.sub('', item).strip()}" if _BULLET.match(item) else f"- {item.strip()}" for item in items]


def code_markdown(code: str) -> str:
    """``code`` as a fenced block: a fence of backticks longer than any run
    of backticks inside (three at least); blank lines at either end dropped,
    indentation kept."""
    code = code.strip("\n").rstrip()
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def block_markdown(block: Block) -> str:
    if block.kind is BlockKind.CODE:
        return code_markdown(block.text) if block.text.strip() else ""
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
        return "\n".join(list_items(block))
    if kind is BlockKind.SIDENOTE:
        return "\n".join(f"> {ln}" for ln in text.split("\n"))
    if kind is BlockKind.CAPTION:
        return f"*{text}*"
    if kind is BlockKind.FIGURE:
        return "\n".join(["<!-- figure -->", *(ln.strip() for ln in text.split("\n") if ln.strip())])
    if kind is BlockKind.TABLE and block.cells:
        return table_markdown(block.cells)
    return text


def table_markdown(cells: list[TableCell]) -> str:
    """A pipe table, or HTML when a cell spans (see the module docstring)."""
    if any(c.row_span > 1 or c.col_span > 1 for c in cells):
        return _table_html(cells)
    n_cols = max(c.col for c in cells) + 1
    grid: dict[int, list[str]] = {}
    for c in cells:
        grid.setdefault(c.row, [""] * n_cols)[c.col] = _pipe_cell(c.text)
    rows = [grid[r] for r in sorted(grid)]
    out = [_pipe_row(rows[0]), _pipe_row(["---"] * n_cols)]
    out.extend(_pipe_row(row) for row in rows[1:])
    return "\n".join(out)


def _pipe_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _pipe_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table_html(cells: list[TableCell]) -> str:
    rows: dict[int, list[TableCell]] = {}
    for c in cells:
        rows.setdefault(c.row, []).append(c)
    out = ["<table>"]
    for r in range(max(c.row + c.row_span for c in cells)):
        tag = "th" if r == 0 else "td"
        tds = []
        for c in sorted(rows.get(r, []), key=lambda c: c.col):
            span = (f' rowspan="{c.row_span}"' if c.row_span > 1 else "") + (f' colspan="{c.col_span}"' if c.col_span > 1 else "")
            tds.append(f"<{tag}{span}>{html.escape(' '.join(c.text.split()), quote=False)}</{tag}>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def page_markdown(page: Page, *, furniture: bool = False) -> str:
    parts = [f"<!-- page {page.number} -->"]
    if page.error is not None:
        parts.append(f"<!-- page {page.number} failed: {page.error.code} -->")
    for block in page.main_blocks(furniture=furniture):
        md = block_markdown(block)
        if md:
            parts.append(md)
    return "\n\n".join(parts)
