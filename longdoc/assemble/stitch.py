"""Cross-page stitching: what a page break cuts is joined once, on its first
page; a list or table continued over a page break keeps its later items or
rows on the page they are printed on, marked as parts of the same list or
table.

::

    page N      … tail ─────────┐            page N      … tail + cut piece (source_pages [N, N+1])
    page N+1    cut piece ──────┘ runs on?   page N+1    items/rows (continues = tail's id)
                items/rows of the tail's list/table         …

*Tail* = the last block of page N that is not furniture, a side note, a
footnote, a figure, a caption or a table; *head* = the first such block of
page N+1. Three things can happen at a seam:

- **join** (the break cut a paragraph or a list item): the head's piece
  is appended to the tail — PARAGRAPH or LIST both, when :func:`runs_on`
  says the text runs on. The joined block keeps the tail's id, kind and
  box (its box on page N); its lines are the tail's then the piece's (each
  Line keeps its own ``page``); its text is ``join_pair(tail, piece)``. When the
  head is a LIST that starts with the cut item's end and goes on with new
  items, only that first item's lines move; the rest stays on page N+1.
  Side notes anchored to a head that moved whole are re-anchored to the
  joined block.
- **list continued**: a LIST tail and, after any joined piece, a LIST head
  that starts new items: the head stays where it is, with ``continues`` =
  the tail's id.
- **code continued**: a CODE tail and a CODE head (a listing printed over
  a page break): the head stays where it is, with ``continues`` = the
  tail's id; each page keeps the lines printed on it.
- **table continued**: a TABLE with cells that ends page N (only furniture,
  side notes and footnotes after it) and a TABLE with cells that starts
  page N+1 (only furniture, side notes and captions before it) with the
  same number of columns (:func:`tables_continue`). The head stays on its
  page with ``continues`` = the tail's id; its first row is left out when
  it repeats the table's header row (the first part's first row), its rows
  are renumbered from 0, its text rebuilt from its cells; every cell of
  every part records its page (``TableCell.page``).

Markdown writes a continued list, table or listing as one (:mod:`longdoc.export.markdown`),
the docling export a list or table as one group or table item; text, JSON and the per-page
results keep each page's own blocks.

Chains: when page N+1 holds nothing else of the main text after a join
(a paragraph longer than a page), the joined block stays open and page
N+2's head may join it too. Only the page owning the open block and the
pages it has swallowed are held (the latter reduced to furniture and the
like), and a chain is closed after ``max_chain_pages`` pages, so memory
does not grow with page count. A continued list or table holds no page:
each part is on its own page.

Never joined or continued: across a FAILED page, across a gap in page
numbers (a page range that skips pages), or into a heading, table, code or
any other kind (a code block only continues a code block). Pages come out in
input order, each exactly once; input pages are not modified (changed pages
are copies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from longdoc.layout.tables import table_text
from longdoc.layout.text import has_list_marker, join_pair, runs_on
from longdoc.model import FURNITURE_KINDS, BBox, Block, BlockKind, Page, PageStatus, TableCell

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
    """Yield ``pages`` in order, stitched over their page breaks (see the
    module docstring). Consumes ``pages`` lazily, holding one page (plus
    the pages an open chain has swallowed, at most ``max_chain_pages`` in
    all; a longer chain is cut there, its text kept in two blocks). Raises
    ``ValueError`` if ``max_chain_pages`` < 2."""
    if max_chain_pages < 2:
        raise ValueError("max_chain_pages must be at least 2")
    held: list[Page] = []  # held[0] owns the open tail; the rest were swallowed whole
    headers: dict[str, list[str]] = {}  # the last table part's id -> its table's header row
    for page in pages:
        seam = _seam(held[0], held[-1], page, headers) if held else None
        if seam is not None:
            owner, rest, open_tail = seam
            held[0] = owner
            if open_tail is not None and not _closes_chain(rest) and len(held) + 1 < max_chain_pages:
                held.append(rest)
            else:
                yield from held
                held = [rest]
            continue
        yield from held
        held = [page]
    yield from held


def stitched_page(load: Callable[[int], Page | None], number: int) -> Page | None:
    """Page ``number`` as :func:`stitch` leaves it, stitched with its
    neighbours: the page before it and the pages after it as far as its
    last block runs on (``load(n)`` gives page n, or None where there is
    none, or none yet). None when ``load(number)`` is None. The page before
    is taken as where the document starts, so page ``number`` is as in the
    whole document's stitching unless the page before was swallowed whole by
    a chain (a list item longer than a page: then page ``number``'s items
    are not marked as continuing it)."""
    def pages() -> Iterator[Page]:
        before = load(number - 1) if number > 1 else None
        if before is not None:
            yield before
        n = number
        while (page := load(n)) is not None:
            yield page
            n += 1

    for page in stitch(pages()):
        if page.number == number:
            return page
    return None


def continues(tail: Block, head: Block) -> bool:
    """Whether ``head`` (top of the next page) goes on from ``tail``: joined
    to it (:func:`joins`), new items of its list (:func:`new_items`) or the
    rest of its listing (:func:`code_continues`)."""
    return new_items(tail, head) or code_continues(tail, head) or joins(tail, head)


def joins(tail: Block, head: Block) -> bool:
    """Whether ``head`` starts with the end of what the break cut in
    ``tail``: both PARAGRAPH or LIST and the head's text runs on from the
    tail's (:func:`~longdoc.layout.text.runs_on`: a broken word "exam-",
    or no sentence end and a lowercase start, or CJK on both sides; never
    a head that starts with a list marker). CODE never joins."""
    if tail.kind not in FLOWING or head.kind not in FLOWING:
        return False
    return runs_on(tail.text, head.text)


def new_items(tail: Block, head: Block) -> bool:
    """Whether ``head`` starts new items of the list ``tail``: both LIST,
    the head's text starting with a list marker."""
    return tail.kind is BlockKind.LIST and head.kind is BlockKind.LIST and has_list_marker(head.text)


def code_continues(tail: Block, head: Block) -> bool:
    """Whether ``head`` goes on with the listing ``tail``: both CODE."""
    return tail.kind is BlockKind.CODE and head.kind is BlockKind.CODE


def tables_continue(tail: Block, head: Block) -> bool:
    """Whether the table ``head`` (top of the next page) continues the
    table ``tail``: both have cells and the same number of columns."""
    if tail.kind is not BlockKind.TABLE or head.kind is not BlockKind.TABLE or not tail.cells or not head.cells:
        return False
    return _n_cols(tail.cells) == _n_cols(head.cells)


def _seam(owner: Page, last: Page, page: Page, headers: dict[str, list[str]]) -> tuple[Page, Page, Block | None] | None:
    """What the break before ``page`` does: None when nothing goes on over
    it; else (owner, page) as changed, and the joined tail when the head
    was joined whole (a chain may go on from it)."""
    if owner.status is not PageStatus.OK or page.status is not PageStatus.OK or page.number != last.number + 1:
        return None
    tail, head = _edge(owner, TABLE_TAIL_PAST, last=True), _edge(page, TABLE_HEAD_PAST, last=False)
    if tail is not None and head is not None and tables_continue(tail, head):
        return *_continue_table(owner, page, tail, head, headers), None
    tail, head = _edge(owner, LOOKED_PAST, last=True), _edge(page, LOOKED_PAST, last=False)
    if tail is None or head is None:
        return None
    if new_items(tail, head) or code_continues(tail, head):
        return owner, _replace(page, head, head.model_copy(update={"continues": tail.id})), None
    if not joins(tail, head):
        return None
    owner, page, joined, whole = _join(owner, page, tail, head)
    if not whole:
        return owner, page, None
    head = _edge(page, LOOKED_PAST, last=False)
    if head is not None and new_items(joined, head):
        return owner, _replace(page, head, head.model_copy(update={"continues": joined.id})), None
    return owner, page, joined


def _edge(page: Page, past: frozenset[BlockKind], *, last: bool) -> Block | None:
    """The last (or first) block of ``page`` whose kind is not in ``past``."""
    for b in sorted(page.blocks, key=lambda b: b.order, reverse=last):
        if b.kind not in past:
            return b
    return None


def _closes_chain(rest: Page) -> bool:
    """Whether ``rest`` (a page whose head was joined whole) holds other
    text, so that the open block cannot run on over it."""
    return any(b.kind not in LOOKED_PAST for b in rest.blocks)


def _n_cols(cells: list[TableCell]) -> int:
    return max(c.col + c.col_span for c in cells)


def _row_texts(cells: list[TableCell], row: int) -> list[str]:
    return [" ".join(c.text.split()).casefold() for c in sorted(cells, key=lambda c: c.col) if c.row == row]


def _continue_table(owner: Page, page: Page, tail: Block, head: Block,
                    headers: dict[str, list[str]]) -> tuple[Page, Page]:
    """(owner with the tail's cells on its page, page with the head marked
    as the tail's next part: its repeated header row left out, its rows
    from 0, its cells on its page). ``headers`` is left holding the head's
    table header only."""
    tail_cells = tail.cells or []
    header = headers.get(tail.id) or _row_texts(tail_cells, min(c.row for c in tail_cells))
    cells = head.cells or []
    first = min(c.row for c in cells)
    skip = first + 1 if _row_texts(cells, first) == header and any(c.row > first for c in cells) else first
    kept = [c.model_copy(update={"row": c.row - skip, "page": page.number}) for c in cells if c.row >= skip]
    headers.clear()
    headers[head.id] = header
    if all(c.page == owner.number for c in tail_cells):
        owner_cells = tail_cells
    else:
        owner_cells = [c.model_copy(update={"page": owner.number}) for c in tail_cells]
    owner = _replace(owner, tail, tail.model_copy(update={"cells": owner_cells}))
    part = head.model_copy(update={"cells": kept, "text": table_text(kept), "continues": tail.id})
    return owner, _replace(page, head, part)


def _join(owner: Page, page: Page, tail: Block, head: Block) -> tuple[Page, Page, Block, bool]:
    """(owner with the head's cut piece joined to its tail, page without
    it, the joined block, whether the head went whole). A LIST head that
    goes on with new items after the piece keeps them, as the tail's next
    part."""
    split = _split_item(head) if head.kind is BlockKind.LIST else None
    piece, remainder = split if split is not None else (head, None)
    joined = tail.model_copy(update={
        "text": join_pair(tail.text, piece.text),
        "lines": [*tail.lines, *piece.lines],
        "source_pages": sorted({*tail.source_pages, *piece.source_pages}),
    })
    owner = _replace(owner, tail, joined)
    if remainder is not None:
        return owner, _replace(page, head, remainder.model_copy(update={"continues": tail.id})), joined, False
    rest: list[Block] = []
    for n, b in enumerate(x for x in sorted(page.blocks, key=lambda b: b.order) if x is not head):
        changes: dict[str, object] = {}
        if b.order != n:
            changes["order"] = n
        if b.anchor == head.id:
            changes["anchor"] = tail.id
        rest.append(b.model_copy(update=changes) if changes else b)
    return owner, page.model_copy(update={"blocks": rest}), joined, True


def _split_item(head: Block) -> tuple[Block, Block] | None:
    """A LIST head that starts with the rest of a cut item and goes on with
    new items, as (the cut item's piece, the rest of the list); None when it
    holds one item only or its lines do not show where the next starts."""
    first, sep, items = head.text.partition("\n")
    if not sep or not items.strip():
        return None
    cut = next((i for i, line in enumerate(head.lines) if i and has_list_marker(line.text)), None)
    if cut is None:
        return None
    piece_lines, rest_lines = head.lines[:cut], head.lines[cut:]
    piece = head.model_copy(update={"text": first, "lines": piece_lines,
                                    "source_pages": sorted({ln.page for ln in piece_lines})})
    rest = head.model_copy(update={"text": items, "lines": rest_lines,
                                   "bbox": BBox.enclosing([ln.bbox for ln in rest_lines])})
    return piece, rest


def _replace(page: Page, old: Block, new: Block) -> Page:
    return page.model_copy(update={"blocks": [new if b is old else b for b in page.blocks]})
