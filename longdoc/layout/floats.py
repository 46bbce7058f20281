"""Floats: tables, figures and their captions, taken out of the text flow.

The layout model's regions (``page.regions``) say where the tables,
figures and captions are. Their lines leave the body before columns are
found, so a picture with a centred caption between two columns no longer
glues the columns together, and a table's cells are not read as short
paragraphs. Each becomes a block of its own:

- a table → TABLE, with its cells filled from its words
  (:func:`~longdoc.layout.tables.fill_cells`); a table the structure model
  could not read (no cells, or a grid of one row or one column), or whose
  grid does not fit its words (:func:`~longdoc.layout.tables.grid_fit`: a
  page of index columns taken for one table), keeps its lines in the body
  instead, where columns are found and read one after the other;
- a figure → FIGURE, holding the labels drawn inside it (axis labels, a
  legend, the words in a diagram's boxes: short texts scattered over it),
  one per line of its text, row by row.
  Running text the model took for a picture (a contents page, a code
  listing, an index column) stays in the body: the region's *stacks* of
  lines (:func:`text_stacks`: :data:`STACK_LINES` lines or more, each
  right under the one before at the text's pitch, left-aligned or
  overlapping, :data:`STACK_CHARS` characters or more in all) and the
  lines that share their rows (a contents entry's page number, the other
  column of a code listing) leave the figure, and when the stacks hold
  :data:`MOSTLY_TEXT` of the region's characters, all its lines do (the
  region is a page of text; its short bits are text too); a figure left
  with no label is no block at all;
- a caption → CAPTION. The model sometimes calls a caption plain text: a
  text region right above or below a table or figure whose first line
  reads like a caption ("Figure 3.", "Table 2:", "Fig. 1", "图 2"…) is
  taken for one (:func:`caption_like`).

A caption is paired with the table or figure it touches (the nearest one
above or below it that it overlaps horizontally); the pair is one float,
read top to bottom. Each float is then placed in the reading order after
the last body block above it that overlaps it horizontally (its column),
or before the first one below it when there is none above
(:func:`place_floats`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from longdoc.layout.blocks import Draft
from longdoc.layout.contents import entry_share
from longdoc.layout.geometry import LineBox, enclosing, h_overlap, same_row
from longdoc.layout.grid_tables import GridTable, find_grid_tables
from longdoc.layout.order import row_by_row
from longdoc.layout.tables import fill_cells, grid_fit, table_text
from longdoc.layout.text import join_lines
from longdoc.model import BlockKind, Region, RegionKind

#: share of a line's box that must lie in a region for the line to belong to it
INSIDE = 0.6
#: a stack of this many lines or more, with this many characters in all, is
#: running text (a figure's labels are short and scattered)
STACK_LINES = 3
STACK_CHARS = 60
#: the next line of a stack is at most this many line heights below (centre
#: to centre): the pitch of text, not the spacing of axis ticks
STACK_PITCH_LINES = 1.8
#: lines of a stack start within this many line heights of each other (or overlap)
STACK_ALIGN_LINES = 1.0
#: a figure region whose stacks hold this share of its characters is all text
MOSTLY_TEXT = 0.6
#: a table region whose grid does not fit is an index when this share of its lines are entries
ENTRY_SHARE = 0.3
#: a table region whose lines are nearly all index or contents entries, each
#: whole in its line ("lists, 95", "Title . . . 12"), is an index or contents
#: set in columns even when its grid fits them (a cell each): read as text
INDEX_SHARE = 0.8
#: a caption pairs with a table or figure at most this many line heights away
CAPTION_GAP_LINES = 4.0

_KIND = {
    RegionKind.TABLE: BlockKind.TABLE,
    RegionKind.FIGURE: BlockKind.FIGURE,
    RegionKind.FIGURE_CAPTION: BlockKind.CAPTION,
    RegionKind.TABLE_CAPTION: BlockKind.CAPTION,
}
#: which region takes a line inside several
_PRIORITY = [RegionKind.TABLE, RegionKind.FIGURE_CAPTION, RegionKind.TABLE_CAPTION, RegionKind.FIGURE]


@dataclass
class Float:
    """A table or figure with its captions: blocks kept together."""

    drafts: list[Draft] = field(default_factory=list)

    @property
    def box(self) -> tuple[float, float, float, float]:
        b = enclosing([l for d in self.drafts for l in d.lines])
        return (b.x0, b.y0, b.x1, b.y1)


def take_floats(lines: Sequence[LineBox], regions: Sequence[Region],
                h: float) -> tuple[list[Float], list[LineBox], set[int]]:
    """The floats on the page, the lines left for the body, and the indexes
    (``LineBox.idx``) of those among them that a table region whose grid
    does not fit them held, or a figure region as running text: text the
    layout model took for a table or a picture, in columns if in any, to be
    read column by column (:func:`~longdoc.layout.order.reading_order`'s
    ``columnar``)."""
    taken: dict[int, int] = {}  # line idx -> region index
    usable = [r for r in regions if r.kind in _KIND] + _text_captions(lines, regions, h)
    for rank in _PRIORITY:
        for i, region in enumerate(usable):
            if region.kind is not rank:
                continue
            for l in lines:
                if l.idx not in taken and _share_inside(l, region) >= INSIDE:
                    taken[l.idx] = i
    drafts: list[tuple[Region, Draft]] = []
    columnar: set[int] = set()
    for i, region in enumerate(usable):
        inside = sorted((l for l in lines if taken.get(l.idx) == i), key=lambda l: (l.y0, l.x0))
        if _misfit(region, inside, h):
            columnar.update(l.idx for l in inside)
            continue
        draft = _draft(region, inside, h)
        if draft is not None:
            drafts.append((region, draft))
        if region.kind is RegionKind.FIGURE:
            labels = {id(l) for l in draft.lines} if draft is not None else set()
            columnar.update(l.idx for l in inside if id(l) not in labels)
    kept = {id(l) for _, d in drafts for l in d.lines}
    rest = [l for l in lines if id(l) not in kept]
    grids = find_grid_tables([l for l in rest if l.idx not in columnar and l.line.pitch is None], h)
    for table in grids:
        drafts.append((_grid_region(table), Draft(BlockKind.TABLE, table.lines, table_text(table.cells),
                                                  cells=table.cells)))
    kept |= {id(l) for table in grids for l in table.lines}
    return _pair_captions(drafts, h), [l for l in lines if id(l) not in kept], columnar


def _grid_region(table: GridTable) -> Region:
    """The region a table found from its lines' grid stands in (for pairing its caption)."""
    box = enclosing(table.lines)
    return Region(kind=RegionKind.TABLE, bbox=box, score=1.0)


def _misfit(region: Region, inside: list[LineBox], h: float) -> bool:
    """A table region that is an index's or a contents page's columns the
    layout model took for one table: a grid that does not fit the lines
    inside it, many of which (:data:`ENTRY_SHARE`) read as index or
    contents entries (:func:`~longdoc.layout.contents.entry_share`), or
    any grid when nearly all of them do (:data:`INDEX_SHARE`: a cell per
    entry fits, and read row by row it would interleave the columns; a
    real table's cells hold a term and its number apart, not "lists, 95"
    in one). A grid that does not fit a real table (a text layer that ran
    a row's cells into one line: 26-65% of the lines of the dev set's IBM
    tables straddle a column boundary, against 12-39% on indexes) still
    holds its words where they belong."""
    if region.kind is not RegionKind.TABLE or not region.cells or not inside:
        return False
    share = entry_share(inside)
    if share >= INDEX_SHARE:
        return True
    if grid_fit(region.cells, inside, h).trusted():
        return False
    return share >= ENTRY_SHARE


_CAPTION = re.compile(
    r"^\s*(?:fig(?:ure)?|table|tab|chart|exhibit|plate|scheme|graph|map|photo|abbildung|abb|tabelle|"
    r"figura|tabla|tableau|tabela)\.?\s*[0-9IVXivx]+[A-Za-z]?\s*[.:|—–-]|^\s*[图表圖]\s*[0-9一二三四五六七八九十]",
    re.IGNORECASE,
)


def caption_like(text: str) -> bool:
    """Whether a line starts the way captions do ("Figure 3.", "Table 2:")."""
    return bool(_CAPTION.match(text))


def _text_captions(lines: Sequence[LineBox], regions: Sequence[Region], h: float) -> list[Region]:
    """Text regions next to a table or figure that read like its caption,
    relabelled as captions."""
    anchors = [r for r in regions if r.kind in (RegionKind.TABLE, RegionKind.FIGURE)]
    out = []
    for region in regions:
        if region.kind is not RegionKind.TEXT:
            continue
        inside = sorted((l for l in lines if _share_inside(l, region) >= INSIDE), key=lambda l: (l.y0, l.x0))
        if not inside or not caption_like(inside[0].text):
            continue
        near = [a for a in anchors if _touches(region, a, h)]
        if near:
            kind = RegionKind.TABLE_CAPTION if near[0].kind is RegionKind.TABLE else RegionKind.FIGURE_CAPTION
            out.append(region.model_copy(update={"kind": kind}))
    return out


def _touches(caption: Region, other: Region, h: float) -> bool:
    c, b = caption.bbox, other.bbox
    if min(c.x1, b.x1) - max(c.x0, b.x0) <= 0:
        return False
    return max(b.y0 - c.y1, c.y0 - b.y1, 0.0) <= CAPTION_GAP_LINES * h


def _share_inside(l: LineBox, region: Region) -> float:
    b = region.bbox
    w = min(l.x1, b.x1) - max(l.x0, b.x0)
    hh = min(l.y1, b.y1) - max(l.y0, b.y0)
    area = max(l.w, 1e-6) * max(l.h, 1e-6)
    return (w * hh / area) if w > 0 and hh > 0 else 0.0


def _draft(region: Region, inside: list[LineBox], h: float) -> Draft | None:
    """The block a region makes of the lines inside it, or None when they
    stay in the body (see the module docstring)."""
    if not inside:
        return None
    kind = _KIND[region.kind]
    if kind is BlockKind.TABLE:
        cells = region.cells or []
        if len({c.row for c in cells}) < 2 or len({c.col for c in cells}) < 2:
            return None
        filled = fill_cells(cells, inside)
        return Draft(kind, inside, table_text(filled), cells=filled)
    if kind is BlockKind.FIGURE:
        text = {id(l) for l in running_text(inside, h)}
        labels = row_by_row([l for l in inside if id(l) not in text])
        return Draft(kind, labels, "\n".join(l.text.strip() for l in labels)) if labels else None
    return Draft(kind, inside, join_lines([l.text for l in inside]))


def running_text(lines: list[LineBox], h: float) -> list[LineBox]:
    """The lines of a figure region that are running text, not labels: its
    text stacks and every line sharing a row with one of their lines, or
    all its lines when the stacks hold most of its text (see the module
    docstring). ``h``: the page's typical line height."""
    text = {id(l) for stack in text_stacks(lines, h) for l in stack}
    rows = [l for l in lines if id(l) in text]
    if sum(len(l.text.strip()) for l in rows) >= MOSTLY_TEXT * sum(len(l.text.strip()) for l in lines):
        return list(lines)
    return [l for l in lines if id(l) in text or any(same_row(l, o) for o in rows)]


def text_stacks(lines: list[LineBox], h: float) -> list[list[LineBox]]:
    """Stacks of running text among ``lines``: chains of lines each right
    below the one before (its centre at most :data:`STACK_PITCH_LINES` line
    heights lower, left edges within :data:`STACK_ALIGN_LINES` line heights
    or the two overlapping by half the narrower), :data:`STACK_LINES` lines
    or more and :data:`STACK_CHARS` characters or more in all; each stack
    top to bottom."""
    by_y = sorted(lines, key=lambda l: l.cy)
    parent = list(range(len(by_y)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(by_y):
        below = next((j for j in range(i + 1, len(by_y)) if _stacks_on(a, by_y[j], h)), None)
        if below is not None:
            parent[root(below)] = root(i)
    groups: dict[int, list[LineBox]] = {}
    for i, l in enumerate(by_y):
        groups.setdefault(root(i), []).append(l)
    return [g for g in groups.values()
            if len(g) >= STACK_LINES and sum(len(l.text.strip()) for l in g) >= STACK_CHARS]


def _stacks_on(a: LineBox, b: LineBox, h: float) -> bool:
    """``b`` is the next line of text under ``a``."""
    step = b.cy - a.cy
    if step <= 0.5 * h or step > STACK_PITCH_LINES * h or same_row(a, b):
        return False
    return abs(a.x0 - b.x0) <= STACK_ALIGN_LINES * h or h_overlap(a, b) >= 0.5 * min(a.w, b.w)


def _pair_captions(drafts: list[tuple[Region, Draft]], h: float) -> list[Float]:
    """Each caption joined to the table or figure it touches."""
    bodies = [(r, Float([d])) for r, d in drafts if d.kind is not BlockKind.CAPTION]
    loose: list[Float] = []
    for region, draft in drafts:
        if draft.kind is not BlockKind.CAPTION:
            continue
        best = _nearest(region, [(r, f) for r, f in bodies if _matches(region.kind, r.kind)], h)
        if best is None:
            loose.append(Float([draft]))
        else:
            best.drafts.append(draft)
    floats = [f for _, f in bodies] + loose
    for f in floats:
        f.drafts.sort(key=lambda d: enclosing(d.lines).y0)
    return floats


def _matches(caption: RegionKind, body: RegionKind) -> bool:
    return (caption is RegionKind.TABLE_CAPTION) == (body is RegionKind.TABLE) or caption is RegionKind.FIGURE_CAPTION


def _nearest(caption: Region, candidates: list[tuple[Region, Float]], h: float) -> Float | None:
    c = caption.bbox
    best: tuple[float, Float] | None = None
    for region, flt in candidates:
        b = region.bbox
        gap = max(b.y0 - c.y1, c.y0 - b.y1, 0.0)
        if _touches(caption, region, h) and (best is None or gap < best[0]):
            best = (gap, flt)
    return None if best is None else best[1]


def place_floats(flow: list[Draft], floats: Sequence[Float], h: float) -> list[Draft]:
    """``flow`` (body blocks in reading order) with each float's blocks
    inserted where its column reaches it (see the module docstring)."""
    if not floats:
        return flow
    boxes = [_box(d) for d in flow]
    after: dict[int, list[Float]] = {}
    for flt in sorted(floats, key=lambda f: f.box[1]):
        fb = flt.box
        above = [i for i, b in enumerate(boxes) if _x_overlap(b, fb) and b[3] <= fb[1] + h]
        if above:
            after.setdefault(max(above), []).append(flt)
            continue
        below = [i for i, b in enumerate(boxes) if _x_overlap(b, fb) and b[1] >= fb[3] - h]
        if below:
            after.setdefault(min(below) - 1, []).append(flt)
            continue
        higher = [i for i, b in enumerate(boxes) if b[1] < fb[1]]
        after.setdefault(max(higher) if higher else -1, []).append(flt)
    out = [d for f in after.get(-1, []) for d in f.drafts]
    for i, d in enumerate(flow):
        out.append(d)
        out.extend(x for f in after.get(i, []) for x in f.drafts)
    return out


def _x_overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    overlap = min(a[2], b[2]) - max(a[0], b[0])
    return overlap > 0.25 * min(a[2] - a[0], b[2] - b[0])


def _box(d: Draft) -> tuple[float, float, float, float]:
    b = enclosing(d.lines)
    return (b.x0, b.y0, b.x1, b.y1)
