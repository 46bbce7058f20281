"""Cross-page stitching: a paragraph, list or code listing continued over a
page break becomes one block on the page where it starts.

::

    page N      … tail block ┐            page N      … tail + head (source_pages [N, N+1])
    page N+1    head block ──┘ continues?  page N+1    (head removed, order renumbered)
                …                          …

*Tail* = the last block of page N that is not furniture, a side note, a
footnote, a figure, a caption or a table; *head* = the first such block of
page N+1. They are merged when both are PARAGRAPH or LIST and
:func:`continues` says the text runs on, or when both are CODE. The
merged block keeps the tail's id, kind and box (its box on page N); its
lines are the tail's then the head's (each Line keeps its own ``page``); its
text is ``join_pair(tail, head)``, or ``tail + "\\n" + head`` when the head
starts new items of the tail's list (a LIST has one line per item) or both
are CODE. Side notes on page N+1 anchored to the head are re-anchored to
the merged block.

Chains: when page N+1 holds nothing else of the main text, the merged block
stays open and page N+2's head may join it too. Only the page owning the
open block and the pages it has swallowed are held (the latter reduced to
furniture and the like), and a chain is closed after
``max_chain_pages`` pages, so memory does not grow with page count.

Code: a CODE block that ends page N (the tail) and a CODE block that
starts page N+1 (the head) are one listing continued: the head's lines
follow the tail's (``tail + "\\n" + head``, each part's indentation as
laid out on its page). A code block never joins a paragraph or a list,
either way.

Tables: a TABLE with cells that ends page N (only furniture, side notes
and footnotes after it) and a TABLE with cells that starts page N+1 (only
furniture, side notes and captions before it) with the same number of
columns are one table (:func:`tables_continue`): the head's rows are
appended to the tail's, without the head's first row when it repeats the
tail's header row, and the text is rebuilt from the cells.

Never joined: across a FAILED page, across a gap in page numbers (a page
range that skips pages), or into a heading, table, code or any other kind.
Pages come out in input order, each exactly once; input pages are not
modified (changed pages are copies).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from longdoc.layout.tables import table_text
from longdoc.layout.text import has_list_marker, join_pair, runs_on
from longdoc.model import FURNITURE_KINDS, Block, BlockKind, Page, PageStatus, TableCell

#: kinds that can be continued over a page break
FLOWING = frozenset({BlockKind.PARAGRAPH, BlockKind.LIST})
#: kinds looked past when finding the tail of a page and the head of the next
LOOKED_PAST = FURNITURE_KINDS | {
    BlockKind.SIDENOTE,
    BlockKind.FOOTNOTE,
    BlockKind.FIGURE,
    BlockKind.CAPTION,
    BlockKind.TABLE,
}
#: kinds looked past when finding a table ending page N / starting page N+1
TABLE_TAIL_PAST = FURNITURE_KINDS | {BlockKind.SIDENOTE, BlockKind.FOOTNOTE}
TABLE_HEAD_PAST = FURNITURE_KINDS | {BlockKind.SIDENOTE, BlockKind.CAPTION}
DEFAULT_MAX_CHAIN_PAGES = 16


def stitch(pages: Iterable[Page], *, max_chain_pages: int = DEFAULT_MAX_CHAIN_PAGES) -> Iterator[Page]:
    """Yield ``pages`` in order, with blocks continued over page breaks
    merged (see the module docstring). Consumes ``pages`` lazily, holding
    one page (plus the pages an open chain has swallowed, at most
    ``max_chain_pages`` in all; a longer chain is cut there, its text kept
    in two blocks). Raises ``ValueError`` if ``max_chain_pages`` < 2."""
    if max_chain_pages < 2:
        raise ValueError("max_chain_pages must be at least 2")
    held: list[Page] = []  # held[0] owns the open tail; the rest were swallowed whole
    for page in pages:
        pair = _pair(held[0], held[-1], page) if held else None
        if pair is not None:
            owner, rest = _merge(held[0], page, *pair)
            held[0] = owner
            if _closes_chain(rest, pair[0]) or len(held) + 1 >= max_chain_pages:
                yield from held
                held = [rest]
            else:
                held.append(rest)
            continue
        yield from held
        held = [page]
    yield from held


def continues(tail: Block, head: Block) -> bool:
    """Whether ``head`` (top of the next page) continues ``tail``.

    True when both are CODE (a listing over a page break), when the tail is
    a LIST and the head starts new items of it, or when the head's text runs
    on from the tail's (:func:`~longdoc.layout.text.runs_on`: a broken word
    "exam-", or no sentence end and a lowercase start, or CJK on both
    sides). A CODE block continues only a CODE block.
    """
    if tail.kind is BlockKind.CODE or head.kind is BlockKind.CODE:
        return tail.kind is head.kind
    if tail.kind not in FLOWING or head.kind not in FLOWING:
        return False
    if has_list_marker(head.text):
        return tail.kind is BlockKind.LIST and head.kind is BlockKind.LIST
    return runs_on(tail.text, head.text)


def tables_continue(tail: Block, head: Block) -> bool:
    """Whether the table ``head`` (top of the next page) continues the
    table ``tail``: both have cells and the same number of columns."""
    if tail.kind is not BlockKind.TABLE or head.kind is not BlockKind.TABLE or not tail.cells or not head.cells:
        return False
    return _n_cols(tail.cells) == _n_cols(head.cells)


def _pair(owner: Page, last: Page, page: Page) -> tuple[Block, Block] | None:
    """The (tail, head) that join across the break before ``page``, if any."""
    if owner.status is not PageStatus.OK or page.status is not PageStatus.OK:
        return None
    if page.number != last.number + 1:
        return None
    tail, head = _edge(owner, TABLE_TAIL_PAST, last=True), _edge(page, TABLE_HEAD_PAST, last=False)
    if tail is not None and head is not None and tables_continue(tail, head):
        return tail, head
    tail, head = _edge(owner, LOOKED_PAST, last=True), _edge(page, LOOKED_PAST, last=False)
    if tail is not None and head is not None and continues(tail, head):
        return tail, head
    return None


def _edge(page: Page, past: frozenset[BlockKind], *, last: bool) -> Block | None:
    """The last (or first) block of ``page`` whose kind is not in ``past``."""
    for b in sorted(page.blocks, key=lambda b: b.order, reverse=last):
        if b.kind not in past:
            return b
    return None


def _closes_chain(rest: Page, tail: Block) -> bool:
    """Whether ``rest`` (a page whose head was merged) holds other text, so
    that the open block cannot run on over it."""
    past = TABLE_TAIL_PAST if tail.kind is BlockKind.TABLE else LOOKED_PAST
    return any(b.kind not in past for b in rest.blocks)


def _n_cols(cells: list[TableCell]) -> int:
    return max(c.col + c.col_span for c in cells)


def _joined_cells(tail: list[TableCell], head: list[TableCell]) -> list[TableCell]:
    """The head's rows under the tail's, its first row dropped when it
    repeats the tail's header row."""
    def row_texts(cells: list[TableCell], row: int) -> list[str]:
        return [" ".join(c.text.split()).casefold() for c in sorted(cells, key=lambda c: c.col) if c.row == row]

    first = min(c.row for c in head)
    skip = first + 1 if row_texts(head, first) == row_texts(tail, min(c.row for c in tail)) else first
    offset = max(c.row + c.row_span for c in tail) - skip
    return [*tail, *(c.model_copy(update={"row": c.row + offset}) for c in head if c.row >= skip)]


def _merge(owner: Page, page: Page, tail: Block, head: Block) -> tuple[Page, Page]:
    """(owner with head appended to its tail, page without its head)."""
    if tail.kind is BlockKind.TABLE:
        cells = _joined_cells(tail.cells or [], head.cells or [])
        update: dict[str, object] = {"cells": cells, "text": table_text(cells)}
    elif tail.kind is BlockKind.CODE:
        head_code = head.text.strip("\n")
        update = {"text": f"{tail.text.rstrip()}\n{head_code}"}
    else:
        new_items = tail.kind is BlockKind.LIST and has_list_marker(head.text)
        update = {"text": f"{tail.text.rstrip()}\n{head.text.lstrip()}" if new_items else join_pair(tail.text, head.text)}
    merged = tail.model_copy(
        update={
            **update,
            "lines": [*tail.lines, *head.lines],
            "source_pages": sorted({*tail.source_pages, *head.source_pages}),
        }
    )
    owner_blocks = [merged if b is tail else b for b in owner.blocks]
    rest: list[Block] = []
    for n, b in enumerate(x for x in sorted(page.blocks, key=lambda b: b.order) if x is not head):
        changes: dict[str, object] = {}
        if b.order != n:
            changes["order"] = n
        if b.anchor == head.id:
            changes["anchor"] = tail.id
        rest.append(b.model_copy(update=changes) if changes else b)
    return owner.model_copy(update={"blocks": owner_blocks}), page.model_copy(update={"blocks": rest})
