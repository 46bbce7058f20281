"""Tables the layout model did not see, found from the lines' own grid.

The layout model misses many borderless tables (a financial statement, a
parts list, an options table with no rules), and the body layout then joins
their cells into paragraphs ("Revenue 12,418 11,902 4.3% Cost of sales
…"). A table shows itself without the model: rows of cells side by side,
one under the other, and whitespace running down between its columns.
:func:`find_grid_tables` looks for that among the body's lines:

1. rows: lines sharing a baseline band (:func:`~longdoc.layout.geometry.same_row`);
   a row is *split* when it holds two or more lines apart by at least
   :data:`CELL_GAP_LINES` line heights;
2. runs: consecutive split rows (a lone row between them, a section label
   or a row with one cell, is allowed once in a row), each at most
   :data:`ROW_GAP_LINES` line heights under the one before;
3. columns: the x ranges the split rows' lines cover, merged; the
   whitespace between them (:data:`CHANNEL_LINES` line heights or more)
   runs through every split row of the run;
4. the run is a table when it has :data:`MIN_ROWS` rows or more, two
   columns or more, most split rows fill most columns (:data:`MIN_FILL`),
   its cells are short — at most :data:`MAX_CELL_WORDS` words for the
   median cell — and a column holds numbers (:data:`MIN_NUMERIC` of its
   cells an amount, a count, a percentage) that go up and down, as a
   table's values do (numbers that only rise are a listing's line numbers,
   equation numbers, a contents page's or an index's page numbers). Columns of prose side by side (a two-column
   page, an index, documented code) are not a table; nor are two columns
   whose rows are mostly contents or index entries
   (:func:`~longdoc.layout.contents.entry_row`: a title and its page),
   which layout writes one entry per line. What the layout model does find — tables of words — it
   finds; this catches the tables of figures it misses.

Lines set in a fixed-pitch font (code) and the text a table or figure
region held that its caller reads column by column are not offered.

Each table's cells: a line goes to the column whose range holds its
centre (a line across several columns spans them); cells in row-major
order, each the text of its lines left to right.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from longdoc.layout.contents import CHAR_WIDTH_LINES, entry_row
from longdoc.layout.geometry import LineBox, same_row
from longdoc.model import BBox, TableCell

CELL_GAP_LINES = 0.8
ROW_GAP_LINES = 2.5
CHANNEL_LINES = 0.8
MIN_ROWS = 3
MIN_FILL = 0.6
MAX_CELL_WORDS = 4
MIN_NUMERIC = 0.5
#: a column whose numbers rise on this share of its steps counts lines or pages
RISING = 0.85

_NUMBER = re.compile(r"^[(\-–−+]?[$€£¥]?\s?\d[\d.,\s']*%?\)?[%*]?$|^[-–—]$")


@dataclass
class GridTable:
    """A table found from its lines: the lines and the cells they fill."""

    lines: list[LineBox]
    cells: list[TableCell]


def find_grid_tables(lines: Sequence[LineBox], h: float) -> list[GridTable]:
    """The tables among ``lines`` (see the module docstring); ``h``: the
    page's typical line height. Every line is in at most one table."""
    rows = _rows(lines)
    tables = []
    for run in _runs(rows, h):
        table = _table(run, h)
        if table is not None:
            tables.append(table)
    return tables


def _rows(lines: Sequence[LineBox]) -> list[list[LineBox]]:
    rows: list[list[LineBox]] = []
    for l in sorted(lines, key=lambda l: (l.cy, l.x0)):
        if rows and any(same_row(o, l) for o in rows[-1]):
            rows[-1].append(l)
        else:
            rows.append([l])
    return [sorted(r, key=lambda l: l.x0) for r in rows]


def _split(row: list[LineBox], h: float) -> bool:
    return len(row) >= 2 and all(b.x0 - a.x1 >= CELL_GAP_LINES * h for a, b in zip(row, row[1:]))


def _runs(rows: list[list[LineBox]], h: float) -> list[list[list[LineBox]]]:
    """Runs of split rows close under each other (one lone row allowed between two split ones)."""
    runs: list[list[list[LineBox]]] = []
    current: list[list[LineBox]] = []
    lone = 0
    for row in rows:
        near = current and min(l.y0 for l in row) - max(l.y1 for l in current[-1]) <= ROW_GAP_LINES * h
        if _split(row, h):
            if not near:
                _close(runs, current, lone)
                current = []
            current.append(row)
            lone = 0
        elif near and lone == 0:
            current.append(row)
            lone = 1
        else:
            _close(runs, current, lone)
            current, lone = [], 0
    _close(runs, current, lone)
    return runs


def _close(runs: list[list[list[LineBox]]], current: list[list[LineBox]], lone: int) -> None:
    rows = current[:-1] if lone else current  # a lone row ends no run
    if len(rows) >= MIN_ROWS:
        runs.append(rows)


def _columns(split_rows: list[list[LineBox]], h: float) -> list[tuple[float, float]]:
    spans = sorted((l.x0, l.x1) for row in split_rows for l in row)
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 - columns[-1][1] < CHANNEL_LINES * h:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    return [(a, b) for a, b in columns]


def _table(run: list[list[LineBox]], h: float) -> GridTable | None:
    split_rows = [r for r in run if _split(r, h)]
    columns = _columns(split_rows, h)
    if len(columns) < 2:
        return None
    if len(columns) == 2 and sum(entry_row(r, h, CHAR_WIDTH_LINES * h) for r in split_rows) * 2 >= len(split_rows):
        return None  # contents or index entries (:mod:`~longdoc.layout.contents`): read one per line
    fill = [len({_column_of(l, columns) for l in row}) / len(columns) for row in split_rows]
    if statistics.median(fill) < MIN_FILL:
        return None
    cells = [l for row in split_rows for l in row]
    words = statistics.median(len(l.text.split()) for l in cells)
    if words > MAX_CELL_WORDS:
        return None
    numeric = [c for c in range(len(columns)) if _numeric_share(split_rows, columns, c) >= MIN_NUMERIC]
    if not any(not _counting(split_rows, columns, c) for c in numeric):
        return None
    return GridTable([l for row in run for l in row], _cells(run, columns))


def _column_of(l: LineBox, columns: list[tuple[float, float]]) -> int:
    cx = (l.x0 + l.x1) / 2
    for i, (a, b) in enumerate(columns):
        if a <= cx <= b:
            return i
    return min(range(len(columns)), key=lambda i: min(abs(cx - columns[i][0]), abs(cx - columns[i][1])))


def _numeric_share(rows: list[list[LineBox]], columns: list[tuple[float, float]], col: int) -> float:
    texts = [l.text.strip() for row in rows for l in row if _column_of(l, columns) == col]
    return sum(bool(_NUMBER.match(t)) for t in texts) / len(texts) if texts else 0.0


def _counting(rows: list[list[LineBox]], columns: list[tuple[float, float]], col: int) -> bool:
    """Whether a column's numbers only go up, row after row (:data:`RISING`
    of the steps): line numbers of a listing (1, 2, 3), equation numbers
    ((3.15), (3.16)), the page numbers of a contents page or an index — the
    labels of the lines beside them, where a table's amounts go up and down."""
    values = []
    for row in rows:
        for l in row:
            text = l.text.strip().strip("()[]").replace(",", "")
            if _column_of(l, columns) == col and re.fullmatch(r"\d+(?:\.\d+)?", text):
                values.append(float(text))
    steps = [b - a for a, b in zip(values, values[1:])]
    return len(steps) >= 2 and sum(s >= 0 for s in steps) >= RISING * len(steps)


def _cells(run: list[list[LineBox]], columns: list[tuple[float, float]]) -> list[TableCell]:
    cells: list[TableCell] = []
    for r, row in enumerate(run):
        by_col: dict[int, list[LineBox]] = {}
        spans: dict[int, int] = {}
        for l in row:
            first = _column_of(LineBox(l.idx, l.line, l.x0, l.y0, l.x0 + 1e-3, l.y1), columns)
            last = _column_of(LineBox(l.idx, l.line, l.x1 - 1e-3, l.y0, l.x1, l.y1), columns)
            col = _column_of(l, columns) if first == last else first
            by_col.setdefault(col, []).append(l)
            spans[col] = max(spans.get(col, 1), last - first + 1)
        for col in sorted(by_col):
            inside = sorted(by_col[col], key=lambda l: l.x0)
            box = BBox(x0=min(l.x0 for l in inside), y0=min(l.y0 for l in inside),
                       x1=max(l.x1 for l in inside), y1=max(l.y1 for l in inside))
            cells.append(TableCell(row=r, col=col, col_span=spans[col], text=" ".join(l.text.strip() for l in inside),
                                   bbox=box))
    return cells
