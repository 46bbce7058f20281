"""A table's cells filled with the page's own words.

The table-structure model gives a grid (each cell's row, column, spans and
a box); the page's lines (text layer or OCR) give the words. The model's
boxes drift (a few points per row down a long table), so they are not
matched box to box. Instead:

- the grid is stretched vertically so its first row's top and last row's
  bottom meet the words' top and bottom (removing the drift), unless that
  would stretch it by more than :data:`MAX_STRETCH` (an empty first or
  last row);
- each line is cut into words at its spaces, each word with its share of
  the line's width (:func:`words`): a line may run across cells when their
  gap is narrow;
- a word goes to the grid row whose centre is nearest its own and to the
  column whose span holds its centre (the nearest column otherwise); the
  cell covering that (row, column), spans included, takes it;
- a cell's text is its words in reading order (top to bottom, left to right).

Every word ends up in exactly one cell, so nothing of the table's text is
lost; a grid position no cell covers takes its word into the row's nearest
cell.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from longdoc.layout.geometry import LineBox
from longdoc.model import BBox, TableCell


#: the grid is stretched onto the words only by this much (drift); beyond,
#: its first or last row is empty and the boxes are taken as they are
MAX_STRETCH = (0.85, 1.15)


@dataclass(frozen=True)
class Word:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    line: int  # index of its line (reading order inside a cell)

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def fill_cells(cells: Sequence[TableCell], lines: Sequence[LineBox]) -> list[TableCell]:
    """``cells`` (from the structure model, without text) with the words of
    ``lines`` in them; cells in row-major order."""
    grid = sorted(cells, key=lambda c: (c.row, c.col))
    if not grid:
        return []
    found = [w for n, line in enumerate(sorted(lines, key=lambda l: (l.y0, l.x0))) for w in words(line, n)]
    texts: dict[int, list[Word]] = {i: [] for i in range(len(grid))}
    if found:
        rows = _row_centres(grid, found)
        cols = _col_spans(grid)
        owner = _occupancy(grid)
        for word in found:
            row = min(range(len(rows)), key=lambda r: abs(rows[r] - word.cy))
            col = _column(cols, word.cx)
            texts[owner.get((row, col), _nearest_in_row(grid, row, word.cx))].append(word)
    return [
        cell.model_copy(update={"text": " ".join(w.text for w in sorted(texts[i], key=lambda w: (w.line, w.x0)))})
        for i, cell in enumerate(grid)
    ]


def words(line: LineBox, n: int = 0) -> list[Word]:
    """The line cut at its spaces, each word with its share of the line's
    box by typical glyph widths."""
    text = line.text
    parts = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    if not parts:
        return []
    edges = [0.0]
    for c in text:
        edges.append(edges[-1] + _glyph_width(c))
    scale = (line.x1 - line.x0) / max(edges[-1], 1e-9)
    return [Word(word, line.x0 + edges[a] * scale, line.y0, line.x0 + edges[b] * scale, line.y1, n)
            for word, a, b in parts]


def _glyph_width(c: str) -> float:
    """Rough advance of a glyph in ems."""
    if c.isspace():
        return 0.28
    if c in "il.,:;|!'`()[]fjtI":
        return 0.3
    if c in "mwMW@%":
        return 0.85
    if ord(c) >= 0x2E80:  # CJK and other full-width scripts
        return 1.0
    return 0.68 if c.isupper() else 0.55


def _row_centres(grid: Sequence[TableCell], found: Sequence[Word]) -> list[float]:
    """Each grid row's centre, the grid stretched onto the words' extent."""
    n_rows = max(c.row + c.row_span for c in grid)
    tops: list[list[float]] = [[] for _ in range(n_rows)]
    bottoms: list[list[float]] = [[] for _ in range(n_rows)]
    for c in grid:
        if c.bbox is None:
            continue
        step = (c.bbox.y1 - c.bbox.y0) / c.row_span
        for k in range(c.row_span):
            tops[c.row + k].append(c.bbox.y0 + k * step)
            bottoms[c.row + k].append(c.bbox.y0 + (k + 1) * step)
    known = [r for r in range(n_rows) if tops[r]]
    if not known:  # no boxes: rows spread evenly over the words
        lo, hi = min(w.y0 for w in found), max(w.y1 for w in found)
        return [lo + (r + 0.5) * (hi - lo) / n_rows for r in range(n_rows)]
    centres = {r: (median(tops[r]) + median(bottoms[r])) / 2 for r in known}
    for r in range(n_rows):  # rows without a box of their own: between their neighbours
        if r not in centres:
            below = [k for k in known if k > r]
            above = [k for k in known if k < r]
            pitch = (centres[known[-1]] - centres[known[0]]) / max(1, known[-1] - known[0]) or 1.0
            centres[r] = centres[above[-1]] + (r - above[-1]) * pitch if above else centres[below[0]] - (below[0] - r) * pitch
    grid_top, grid_bottom = median(tops[known[0]]), median(bottoms[known[-1]])
    text_top, text_bottom = min(w.y0 for w in found), max(w.y1 for w in found)
    scale = (text_bottom - text_top) / (grid_bottom - grid_top) if grid_bottom > grid_top else 0.0
    if not MAX_STRETCH[0] <= scale <= MAX_STRETCH[1]:  # an empty first or last row, not drift
        return [centres[r] for r in range(n_rows)]
    return [text_top + (centres[r] - grid_top) * scale for r in range(n_rows)]


def _col_spans(grid: Sequence[TableCell]) -> list[tuple[float, float]]:
    """Each grid column's (x0, x1), from the cells of one column (shares of
    spanning cells where a column has none of its own)."""
    n_cols = max(c.col + c.col_span for c in grid)
    own: list[list[tuple[float, float]]] = [[] for _ in range(n_cols)]
    shared: list[list[tuple[float, float]]] = [[] for _ in range(n_cols)]
    for c in grid:
        if c.bbox is None:
            continue
        step = (c.bbox.x1 - c.bbox.x0) / c.col_span
        for k in range(c.col_span):
            span = (c.bbox.x0 + k * step, c.bbox.x0 + (k + 1) * step)
            (own if c.col_span == 1 else shared)[c.col + k].append(span)
    spans: list[tuple[float, float]] = []
    for j in range(n_cols):
        pool = own[j] or shared[j]
        if pool:
            spans.append((median(s[0] for s in pool), median(s[1] for s in pool)))
        else:
            prev = spans[-1] if spans else (0.0, 0.0)
            spans.append((prev[1], prev[1]))
    return spans


def _column(spans: Sequence[tuple[float, float]], x: float) -> int:
    inside = [j for j, (a, b) in enumerate(spans) if a <= x <= b]
    if inside:
        return inside[0]
    return min(range(len(spans)), key=lambda j: min(abs(spans[j][0] - x), abs(spans[j][1] - x)))


def _occupancy(grid: Sequence[TableCell]) -> dict[tuple[int, int], int]:
    """(row, col) → index of the cell covering it."""
    owner: dict[tuple[int, int], int] = {}
    for i, c in enumerate(grid):
        for r in range(c.row, c.row + c.row_span):
            for k in range(c.col, c.col + c.col_span):
                owner.setdefault((r, k), i)
    return owner


def _nearest_in_row(grid: Sequence[TableCell], row: int, x: float) -> int:
    def distance(i: int) -> tuple[float, float]:
        c = grid[i]
        rows_away = 0 if c.row <= row < c.row + c.row_span else min(abs(c.row - row), abs(c.row + c.row_span - 1 - row))
        box = c.bbox or BBox(x0=x, y0=0, x1=x, y1=0)
        return (rows_away, 0.0 if box.x0 <= x <= box.x1 else min(abs(box.x0 - x), abs(box.x1 - x)))

    return min(range(len(grid)), key=distance)


def table_text(cells: Sequence[TableCell]) -> str:
    """Plain text of a table: one line per row, cells separated by tabs
    (a spanning cell's text once, at its top-left position)."""
    rows: dict[int, list[TableCell]] = {}
    for c in cells:
        rows.setdefault(c.row, []).append(c)
    return "\n".join("\t".join(c.text for c in sorted(rows[r], key=lambda c: c.col)) for r in sorted(rows))
