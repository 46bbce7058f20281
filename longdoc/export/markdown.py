"""Markdown view of a page, and of the document page by page.

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

A list, table or code listing continued over a page break (a block whose
``continues`` names the part before it) is one list, table or fenced block
in the document's Markdown (:class:`MarkdownJoiner`): the items, rows or
lines printed on the next page go on directly under those of the page
before — no blank line, no header row or rule again (a pipe table's rows;
inside the same ``<table>`` for an HTML one; inside the same fence for a
listing) — and that page's ``<!-- page N -->`` comes right after the list,
table or listing ends, since a blank line or a comment between them would
end a pipe table, split a list in two or put the comment in the code. One page
alone (:func:`page_markdown`, the per-page result) shows its own part: a
list's items, a table's rows under an empty header row (or an HTML table
of its rows).
"""

from __future__ import annotations

import html
import re

from longdoc.export.text import block_text
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
    code = block_text(BlockKind.CODE, code)
    fence = _fence_for(code)
    return f"{fence}\n{code}\n{fence}"


def _fence_for(code: str) -> str:
    """Backticks longer than any run of them in ``code``, three at least."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


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
        return table_markdown(block.cells, header=block.continues is None)
    return text


def table_markdown(cells: list[TableCell], *, header: bool = True) -> str:
    """A pipe table, or HTML when a cell spans (see the module docstring).
    Its first row is the header row; with ``header`` False (a later part
    of a table, alone) every row is a body row, under an empty header row."""
    if spans(cells):
        return f"<table>\n{table_rows_markdown(cells, as_html=True, header=header)}\n</table>"
    n_cols = max(c.col for c in cells) + 1
    rows = _pipe_rows(cells, n_cols)
    if header:
        return "\n".join([rows[0], _pipe_row(["---"] * n_cols), *rows[1:]])
    return "\n".join([_pipe_row([""] * n_cols), _pipe_row(["---"] * n_cols), *rows])


def spans(cells: list[TableCell]) -> bool:
    """Whether a cell spans rows or columns (the table is written in HTML)."""
    return any(c.row_span > 1 or c.col_span > 1 for c in cells)


def table_rows_markdown(cells: list[TableCell], *, as_html: bool, header: bool = False) -> str:
    """A table's rows alone, to go on under rows written before: pipe rows,
    or with ``as_html`` ``<tr>`` rows (the first a ``<th>`` row with
    ``header``)."""
    if not as_html:
        return "\n".join(_pipe_rows(cells, max(c.col for c in cells) + 1))
    rows: dict[int, list[TableCell]] = {}
    for c in cells:
        rows.setdefault(c.row, []).append(c)
    out = []
    for r in range(min(rows), max(c.row + c.row_span for c in cells)):
        tag = "th" if header and r == min(rows) else "td"
        tds = []
        for c in sorted(rows.get(r, []), key=lambda c: c.col):
            span = (f' rowspan="{c.row_span}"' if c.row_span > 1 else "") + (f' colspan="{c.col_span}"' if c.col_span > 1 else "")
            tds.append(f"<{tag}{span}>{html.escape(' '.join(c.text.split()), quote=False)}</{tag}>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    return "\n".join(out)


def _pipe_rows(cells: list[TableCell], n_cols: int) -> list[str]:
    grid: dict[int, list[str]] = {}
    for c in cells:
        grid.setdefault(c.row, [""] * n_cols)[c.col] = _pipe_cell(c.text)
    return [_pipe_row(grid[r]) for r in sorted(grid)]


def _pipe_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _pipe_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def page_markdown(page: Page, *, furniture: bool = False) -> str:
    """One page's Markdown: its marker, then its blocks (a later part of a
    list or table as it stands alone)."""
    parts = _marker(page)
    for block in page.main_blocks(furniture=furniture):
        md = block_markdown(block)
        if md:
            parts.append(md)
    return "\n\n".join(parts)


def _marker(page: Page) -> list[str]:
    parts = [f"<!-- page {page.number} -->"]
    if page.error is not None:
        parts.append(f"<!-- page {page.number} failed: {page.error.code} -->")
    return parts


class MarkdownJoiner:
    """The document's Markdown, page by page: ``page(p)`` gives the text to
    append for each page in order, ``close()`` what ends it. A page without
    a list, table or listing continued from the page before gives what
    :func:`page_markdown` gives (after a blank line); one whose first block
    goes on from the one that ended the text so far gives its
    items, rows or lines first, directly under it, and its marker after
    them (see the module docstring). Holds the last list, table or listing
    written and the markers waiting for it to end."""

    def __init__(self, *, furniture: bool = False) -> None:
        self.furniture = furniture
        self._started = False
        self._open: Block | None = None      # the list, table or listing the text ends with
        self._html = False                   # the open table is an HTML one (its "</table>" not written yet)
        self._fence = ""                     # the open listing's fence (its closing one not written yet)
        self._markers: list[str] = []        # markers waiting for the open list or table to end

    def page(self, page: Page) -> str:
        blocks = [(b, md) for b in page.main_blocks(furniture=self.furniture) if (md := block_markdown(b))]
        out = ""
        if blocks and self._goes_on(blocks[0][0]):
            out, blocks = "\n" + self._rows(blocks[0][0]), blocks[1:]
        self._markers += _marker(page)
        if out and not blocks:
            return out              # the list or table may go on over the next page too
        return out + self._end(blocks)

    def close(self) -> str:
        return self._end([])

    def _goes_on(self, block: Block) -> bool:
        open_ = self._open
        if open_ is None or block.continues != open_.id or block.kind is not open_.kind:
            return False
        if block.kind is BlockKind.CODE:   # inside the open fence, unless a longer run of backticks needs its own
            return len(_fence_for(block.text)) <= len(self._fence)
        return block.kind is BlockKind.LIST or (bool(block.cells) and (self._html or not spans(block.cells or [])))

    def _rows(self, block: Block) -> str:
        self._open = block
        if block.kind is BlockKind.LIST:
            return "\n".join(list_items(block))
        if block.kind is BlockKind.CODE:
            return block_text(BlockKind.CODE, block.text)
        return table_rows_markdown(block.cells or [], as_html=self._html)

    def _end(self, blocks: list[tuple[Block, str]]) -> str:
        """The open table's "</table>" or listing's fence, the waiting
        markers, then ``blocks`` after a blank line; a list, table or
        listing last among them stays open."""
        out = "\n</table>" if self._html else f"\n{self._fence}" if self._fence else ""
        self._open, self._html, self._fence = None, False, ""
        parts = [*self._markers, *(md for _, md in blocks)]
        self._markers = []
        if not parts:
            return out
        text = "\n\n".join(parts)
        last = blocks[-1][0] if blocks else None
        if last is not None and (last.kind is BlockKind.LIST or (last.kind is BlockKind.TABLE and last.cells)):
            self._open = last
            self._html = last.kind is BlockKind.TABLE and spans(last.cells or [])
            if self._html:
                text = text.removesuffix("\n</table>")
        elif last is not None and last.kind is BlockKind.CODE:
            self._open, self._fence = last, _fence_for(last.text)
            text = text.removesuffix(f"\n{self._fence}")
        out += ("\n\n" if self._started else "") + text
        self._started = True
        return out
