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

A grid that does not fit its words is not trusted (:func:`grid_fit`,
:meth:`Fit.trusted`): the layout model sometimes takes a page of two or
three columns of short lines (an index) for one table, and the structure
model's grid over it has columns that neither hold the words they are
given nor line up with the text, so :func:`table_text` would read them
scrambled. Measured on the grid filled with the words (figures from the
test tables — bordered, borderless, spanning, over a page break — and the
tables of the booktabs and xcolor manuals, born-digital and scanned,
against generated and real TeX indexes taken for tables):

- **straddling**: the share of lines with a word running across a column
  boundary that no spanning cell covers in its row; more than
  :data:`MAX_STRADDLING` fails (real tables: 0–0.06; indexes: 0.12–0.39);
- **outside**: the share of words whose centre lies outside, across (by
  more than half a line height), the box of the cell that took them; more
  than :data:`MAX_OUTSIDE` fails (real tables: 0–0.02; indexes: 0–0.31);
- **stacked**: the share of lines that sit in cells holding
  :data:`MANY_ROWS` rows of text or more (a column of text in one cell);
  more than :data:`MAX_STACKED` fails (real tables: 0; indexes: 0–0.1);
- **empty**: the share of grid positions no word went to; more than
  :data:`MAX_EMPTY` fails (real tables: 0–0.17; indexes: 0.05–0.25).

The last two are safeguards for grids worse than those measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from longdoc.layout.geometry import LineBox
from longdoc.model import BBox, TableCell

#: the grid is stretched onto the words only by this much (drift); beyond,
#: its first or last row is empty and the boxes are taken as they are
MAX_STRETCH = (0.85, 1.15)
#: a grid is not trusted when more than these shares of its words, lines or
#: positions misfit (see the module docstring)
MAX_OUTSIDE = 0.1
MAX_STRADDLING = 0.1
MAX_STACKED = 0.5
MAX_EMPTY = 0.6
#: a cell holding this many rows of text is a column of text, not a cell
MANY_ROWS = 4


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


@dataclass(frozen=True)
class Placed:
    """A word and where it went: the grid position (row, col) it falls on
    and the index (in row-major order) of the cell that took it."""

    word: Word
    row: int
    col: int
    cell: int


def fill_cells(cells: Sequence[TableCell], lines: Sequence[LineBox]) -> list[TableCell]:
    """``cells`` (from the structure model, without text) with the words of
    ``lines`` in them; cells in row-major order."""
    grid = sorted(cells, key=lambda c: (c.row, c.col))
    texts: dict[int, list[Word]] = {i: [] for i in range(len(grid))}
    for p in place_words(grid, lines):
        texts[p.cell].append(p.word)
    return [
        cell.model_copy(update={"text": " ".join(w.text for w in sorted(texts[i], key=lambda w: (w.line, w.x0)))})
        for i, cell in enumerate(grid)
    ]


def place_words(grid: Sequence[TableCell], lines: Sequence[LineBox]) -> list[Placed]:
    """Every word of ``lines`` placed on ``grid`` (cells sorted by row and
    column), as the module docstring says; ``[]`` for an empty grid."""
    found = [w for n, line in enumerate(sorted(lines, key=lambda l: (l.y0, l.x0))) for w in words(line, n)]
    if not grid or not found:
        return []
    rows = _row_centres(grid, found)
    cols = _col_spans(grid)
    owner = _occupancy(grid)
    placed = []
    for word in found:
        row = min(range(len(rows)), key=lambda r: abs(rows[r] - word.cy))
        col = _column(cols, word.cx)
        placed.append(Placed(word, row, col, owner.get((row, col), _nearest_in_row(grid, row, word.cx))))
    return placed


@dataclass(frozen=True)
class Fit:
    """How a grid fits the words it holds: the shares of the module
    docstring, each 0..1."""

    outside: float
    straddling: float
    stacked: float
    empty: float

    def trusted(self) -> bool:
        """Whether every share is within its limit."""
        return (self.outside <= MAX_OUTSIDE and self.straddling <= MAX_STRADDLING and self.stacked <= MAX_STACKED
                and self.empty <= MAX_EMPTY)


def grid_fit(cells: Sequence[TableCell], lines: Sequence[LineBox], line_height: float) -> Fit:
    """How ``cells`` (the structure model's grid) fit the words of
    ``lines`` (see the module docstring); a grid holding no word fits
    nothing (every share 1)."""
    grid = sorted(cells, key=lambda c: (c.row, c.col))
    placed = place_words(grid, lines)
    if not placed:
        return Fit(1.0, 1.0, 1.0, 1.0)
    slack = line_height / 2
    n_lines = len({p.word.line for p in placed})
    owner = _occupancy(grid)
    used = {pos for pos, i in owner.items() if i in {p.cell for p in placed}}
    return Fit(outside=sum(not _within(grid[p.cell].bbox, p.word.cx, slack) for p in placed) / len(placed),
               straddling=len(_straddling(grid, placed, slack / 2)) / n_lines,
               stacked=_stacked(placed, slack) / n_lines,
               empty=1 - len(used) / max(1, len(owner)))


def _straddling(grid: Sequence[TableCell], placed: Sequence[Placed], slack: float) -> set[int]:
    """The lines with a word running more than ``slack`` across a column
    boundary on both sides, where no cell of its row spans that boundary."""
    owner = _occupancy(grid)
    cols = _col_spans(grid)
    bounds = [(a[1] + b[0]) / 2 for a, b in zip(cols, cols[1:])]
    return {p.word.line for p in placed for j, x in enumerate(bounds)
            if p.word.x0 < x - slack and p.word.x1 > x + slack and owner.get((p.row, j)) != owner.get((p.row, j + 1))}


def _stacked(placed: Sequence[Placed], apart: float) -> int:
    """How many lines sit in cells holding :data:`MANY_ROWS` rows of text
    or more (lines more than ``apart`` apart are two rows)."""
    held: dict[int, dict[int, float]] = {}  # cell -> its lines -> their centre heights
    for p in placed:
        held.setdefault(p.cell, {})[p.word.line] = p.word.cy
    return sum(len(ls) for ls in held.values() if _row_count(ls.values(), apart) >= MANY_ROWS)


def _within(box: BBox | None, x: float, slack: float) -> bool:
    return box is not None and box.x0 - slack <= x <= box.x1 + slack


def _row_count(heights: Iterable[float], apart: float) -> int:
    """How many rows of text lines at these centre heights make (centres
    more than ``apart`` from the row above start a new one)."""
    ys = sorted(heights)
    return sum(1 for a, b in zip([float("-inf"), *ys], ys) if b - a > apart)


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
