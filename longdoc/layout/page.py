"""One recognized page → its blocks in reading order.

::

    lines ─► drop blank ─► furniture apart ─► floats apart (tables, figures,
             captions from the layout model's regions; see floats.py)
    body  ─► segments of a visual line rejoined ─► OCR padding off
          ─► margin notes, oversized lines apart ─► entries reach their numbers
          ─► mend gutters (clip pokes, split merged lines) ─► XY-cut order
          ─► code listings apart (code.py) ─► segment the rest ─► classify
          ─► join across columns
          ─► place side notes and oversized lines ─► place floats
    all   ─► number: top furniture, body, bottom furniture
"""

from __future__ import annotations

from longdoc.layout.blocks import Draft, classify, join_across_columns, measure, segment
from longdoc.layout.code import take_listings
from longdoc.layout.contents import close_entry_gaps
from longdoc.layout.floats import place_floats, take_floats
from longdoc.layout.geometry import LineBox, depad, enclosing, norm_box, typical_line_height, v_overlap
from longdoc.layout.gutters import find_gutters, mend
from longdoc.layout.order import reading_order, row_by_row
from longdoc.layout.segments import rejoin
from longdoc.layout.sidenotes import find_margin_strips, group_notes, pick_anchor
from longdoc.layout.text import join_lines
from longdoc.model import BBox, Block, BlockKind, Page

#: narrowest column gutter, in typical line heights (and never under 3 pt)
GUTTER_LINES = 0.4
MIN_GUTTER_PT = 3.0
#: narrowest column of text, in typical line heights
COLUMN_LINES = 3.0
#: a line taller than this many typical line heights that has at least
#: OVERSIZED_NEIGHBOURS lines beside it is laid out apart (see _oversized)
OVERSIZED_LINES = 3.0
OVERSIZED_NEIGHBOURS = 2


def layout_page(rec: Page, furniture: dict[int, BlockKind], *, exact_lines: bool = False) -> list[Block]:
    """Blocks of one recognized page (its ``lines``) in reading order.

    ``furniture`` maps indexes of ``rec.lines`` to HEADER / FOOTER /
    PAGE_NUMBER (from :func:`~longdoc.layout.furniture.find_furniture`).
    ``exact_lines``: the lines come from a text layer (exact boxes, cut
    only where the PDF left a gap): segments of one visual line are joined
    back unless a whitespace channel runs between them
    (:mod:`~longdoc.layout.segments`), and no line is split at an estimated
    column gutter, so no word leaves its line or its order. OCR lines are
    whole visual lines already; one merged across a column gutter is split
    there (:mod:`~longdoc.layout.gutters`).

    Result: every non-blank line of ``rec.lines`` in exactly one block; ``order``
    runs 0..k-1 and ``id`` is ``f"p{page}-b{order}"``. Furniture lines each
    become their own block: those in the top half of the page come first
    (orders 0…), those in the bottom half last, the body in between. Side
    notes follow the block they sit beside, with ``anchor`` set to its id;
    a line much taller than the text with lines beside it (a box over
    several lines, a drop cap) becomes a PARAGRAPH of its own next to the
    block it sits beside. A line the engine ran across a column gutter
    (one line of each column in one box) is split in two new Lines at the
    gutter (:mod:`~longdoc.layout.gutters`); all other blocks hold the
    engine's own Line objects.
    Regions from the layout model (``rec.regions``) take their tables,
    figures and captions out of the body first (:mod:`~longdoc.layout.floats`):
    a TABLE block carries ``cells``; each float goes after the body block
    above it in its column. The lines of a table region whose grid does not
    fit them, and running text in a figure region, stay in the body and are
    read column by column.
    Lines set in a fixed-pitch font (``Line.pitch``) that form a listing
    become a CODE block (:mod:`~longdoc.layout.code`: its lines one per
    line, indentation as spaces), never joined into a paragraph, a list or a
    heading.
    Blank lines are dropped; an empty page gives ``[]``. Block text comes
    from :func:`~longdoc.layout.text.join_lines` (LIST: one line per item;
    CODE: :func:`~longdoc.layout.code.code_text`).
    """
    lines = [LineBox.of(i, l) for i, l in enumerate(rec.lines) if l.text.strip()]
    if not lines:
        return []
    # row by row: a running head and the page number on its row are read
    # left to right whichever way the scan is skewed
    furn = row_by_row([l for l in lines if l.idx in furniture])
    body = [l for l in lines if l.idx not in furniture]
    floats, body, columnar = take_floats(body, rec.regions, typical_line_height(lines))
    flow = place_floats(_body(rec, body, exact_lines, columnar), floats, typical_line_height(lines))
    mid = rec.height / 2
    top = [_furniture_draft(l, furniture) for l in furn if l.cy < mid]
    bottom = [_furniture_draft(l, furniture) for l in furn if l.cy >= mid]
    return _number([*top, *flow, *bottom], rec.number)


def _body(rec: Page, body: list[LineBox], exact_lines: bool, columnar: set[int]) -> list[Draft]:
    """The body's blocks in reading order (the steps in the module
    docstring); lines in ``columnar`` (indexes) are text in columns, never
    a table read row by row."""
    if not body:
        return []
    body = depad(body, typical_line_height(body))
    if exact_lines:  # a text layer cut these where the PDF left a gap: whole visual lines again
        body = rejoin(body, typical_line_height(body))
    h = typical_line_height(body)
    gutter = max(MIN_GUTTER_PT, GUTTER_LINES * h)
    min_column = COLUMN_LINES * h

    strips = find_margin_strips(body, rec.width, gutter)
    in_margin = {l.idx for strip in strips for l in strip}
    flowing = [l for l in body if l.idx not in in_margin]
    oversized = _oversized(flowing, h)
    regular = close_entry_gaps([l for l in flowing if l.idx not in oversized], h, columnar)
    if not exact_lines:  # an OCR line merged across a gutter is split there
        regular = mend(regular, find_gutters(regular, h), h, gutter)
    ordered = reading_order(regular, gutter, min_column, columnar)
    metrics = measure(ordered, h, rec.height, rec.number, exact=exact_lines)
    runs = [run for piece in take_listings(ordered, metrics)
            for run in ([piece] if isinstance(piece, Draft) else segment(piece, metrics))]
    main = join_across_columns(classify(runs, metrics))
    notes = [
        Draft(BlockKind.SIDENOTE, note, join_lines([l.text for l in note]))
        for strip in strips
        for note in group_notes(reading_order(strip, gutter, min_column), h)
    ]
    floats = [Draft(BlockKind.PARAGRAPH, [l], l.text.strip()) for l in flowing if l.idx in oversized]
    return _place_beside(main, notes + floats, h)


def _furniture_draft(l: LineBox, furniture: dict[int, BlockKind]) -> Draft:
    return Draft(furniture[l.idx], [l], l.text.strip())


def _oversized(lines: list[LineBox], h: float) -> set[int]:
    """Lines much taller than the text (a box the engine drew over several
    lines, a drop cap) that sit beside other lines: kept out of the XY-cut,
    where they would glue rows of both columns into one band."""
    tall = [l for l in lines if l.h > OVERSIZED_LINES * h]
    return {
        t.idx for t in tall if sum(1 for o in lines if o is not t and v_overlap(o, t) > 0) >= OVERSIZED_NEIGHBOURS
    }


def _place_beside(main: list[Draft], extra: list[Draft], h: float) -> list[Draft]:
    """Main blocks with each extra block placed beside the block it sits
    next to (:func:`~longdoc.layout.sidenotes.pick_anchor`): a side note
    right after it (blocks sharing a neighbour top to bottom); an oversized
    line before it when it starts at that block's top (a drop cap), after it
    otherwise. Extras with no main block at all come last."""
    boxes = [(str(i), _box(d)) for i, d in enumerate(main)]
    before: dict[int, list[Draft]] = {}
    loose: list[Draft] = []
    for d in sorted(extra, key=lambda n: _box(n)[1]):
        anchor = pick_anchor(_box(d), boxes)
        if anchor is None:
            loose.append(d)
        elif d.kind is not BlockKind.SIDENOTE and _box(d)[1] <= _box(main[int(anchor)])[1] + h:
            before.setdefault(int(anchor), []).append(d)
        else:
            main[int(anchor)].notes.append(d)
    flow: list[Draft] = []
    for i, d in enumerate(main):
        flow.extend(before.get(i, []))
        flow.append(d)
        flow.extend(d.notes)
    return flow + loose


def _box(d: Draft) -> tuple[float, float, float, float]:
    b = enclosing(d.lines)
    return (b.x0, b.y0, b.x1, b.y1)


def _line_box(lines: list[LineBox]) -> BBox:
    """Box enclosing the lines as the engine drew them (normalized)."""
    boxes = [norm_box(l.line.bbox) for l in lines]
    return BBox(
        x0=min(b[0] for b in boxes), y0=min(b[1] for b in boxes), x1=max(b[2] for b in boxes), y1=max(b[3] for b in boxes)
    )


def _number(drafts: list[Draft], page: int) -> list[Block]:
    ids = {id(d): f"p{page}-b{n}" for n, d in enumerate(drafts)}
    anchors = {id(n): ids[id(d)] for d in drafts for n in d.notes if n.kind is BlockKind.SIDENOTE}
    return [
        Block(
            id=ids[id(d)],
            kind=d.kind,
            bbox=_line_box(d.lines),
            order=n,
            text=d.text,
            lines=[l.line for l in d.lines],
            source_pages=[page],
            level=d.level,
            anchor=anchors.get(id(d)),
            cells=d.cells,
        )
        for n, d in enumerate(drafts)
    ]
