"""Table cells filled with the page's words (the structure model gives the grid)."""

from __future__ import annotations

from longdoc.layout.geometry import LineBox
from longdoc.layout.tables import fill_cells, grid_fit, table_text, words
from longdoc.model import BBox, Line, TableCell

from .synth import CHAR_W, line

X = [100.0, 200.0, 300.0, 400.0]  # column starts; columns are 90 pt wide
ROW_TOP, PITCH = 200.0, 20.0


def _grid(rows: int, drift: float = 0.0, spans: dict[tuple[int, int], tuple[int, int]] | None = None) -> list[TableCell]:
    """The structure model's cells: boxes drift upwards by ``drift`` pt per row."""
    spans = spans or {}
    covered = {(r + i, c + k) for (r, c), (rs, cs) in spans.items() for i in range(rs) for k in range(cs)
               if (i, k) != (0, 0)}
    cells = []
    for r in range(rows):
        for c in range(len(X)):
            if (r, c) in covered:
                continue
            rs, cs = spans.get((r, c), (1, 1))
            y0 = ROW_TOP + r * PITCH - r * drift
            cells.append(TableCell(row=r, col=c, row_span=rs, col_span=cs,
                                   bbox=BBox(x0=X[c], y0=y0, x1=X[c + cs - 1] + 90, y1=y0 + rs * PITCH - 4)))
    return cells


def _boxes(lines: list[Line]) -> list[LineBox]:
    return [LineBox.of(i, l) for i, l in enumerate(lines)]


def _texts(cells: list[TableCell]) -> dict[tuple[int, int], str]:
    return {(c.row, c.col): c.text for c in cells}


def test_words_go_to_their_cells_even_when_the_model_boxes_drift():
    rows = [[f"r{r}c{c}" for c in range(4)] for r in range(12)]
    lines = [line(text, X[c] + 4, ROW_TOP + r * PITCH + 3) for r, row in enumerate(rows) for c, text in enumerate(row)]
    filled = fill_cells(_grid(12, drift=0.6), _boxes(lines))  # the last row's box is 6.6 pt too high
    assert _texts(filled) == {(r, c): rows[r][c] for r in range(12) for c in range(4)}


def test_a_line_running_across_narrow_cells_is_cut_into_its_words():
    one = "12.5 1,204 -3.1% 77"
    # one text line from x=104 spanning all four columns (a narrow-gap table read as one segment)
    ln = Line(text=one, bbox=BBox(x0=104.0, y0=ROW_TOP + 3, x1=104.0 + 300 + CHAR_W * 3, y1=ROW_TOP + 13),
              confidence=1.0, page=1)
    parts = words(LineBox.of(0, ln))
    assert [w.text for w in parts] == one.split()
    assert all(a.x1 <= b.x0 for a, b in zip(parts, parts[1:]))


def test_spanning_cells_take_the_words_of_every_position_they_cover_and_no_word_is_lost():
    spans = {(0, 1): (1, 2), (0, 0): (2, 1)}
    lines = [
        line("Method", X[0] + 4, ROW_TOP + 13),  # centred over two rows
        line("Score", X[1] + 60, ROW_TOP + 3),  # centred over two columns
        line("Time", X[3] + 4, ROW_TOP + 3),
        line("simple", X[1] + 4, ROW_TOP + PITCH + 3), line("complex", X[2] + 4, ROW_TOP + PITCH + 3),
        line("OTSL", X[0] + 4, ROW_TOP + 2 * PITCH + 3), line("0.96", X[1] + 4, ROW_TOP + 2 * PITCH + 3),
        line("0.93", X[2] + 4, ROW_TOP + 2 * PITCH + 3), line("2.7", X[3] + 4, ROW_TOP + 2 * PITCH + 3),
    ]
    filled = fill_cells(_grid(3, spans=spans), _boxes(lines))
    texts = _texts(filled)
    assert texts[(0, 0)] == "Method" and texts[(0, 1)] == "Score"
    assert texts[(1, 1)] == "simple" and texts[(2, 3)] == "2.7"
    assert sorted(" ".join(c.text for c in filled).split()) == sorted(l.text for l in lines)


def test_a_cell_of_two_lines_keeps_them_in_reading_order():
    lines = [line("first half", X[0] + 4, ROW_TOP + 1), line("second half", X[0] + 4, ROW_TOP + 9),
             line("x", X[1] + 4, ROW_TOP + 5)]
    cells = [TableCell(row=0, col=c, bbox=BBox(x0=X[c], y0=ROW_TOP, x1=X[c] + 90, y1=ROW_TOP + 18)) for c in range(2)]
    cells += [TableCell(row=1, col=c, bbox=BBox(x0=X[c], y0=ROW_TOP + 20, x1=X[c] + 90, y1=ROW_TOP + 38))
              for c in range(2)]
    texts = _texts(fill_cells(cells, _boxes(lines)))
    assert texts[(0, 0)] == "first half second half"


def test_table_text_is_one_line_per_row_with_tabs():
    cells = [TableCell(row=0, col=0, text="a"), TableCell(row=0, col=1, text="b"), TableCell(row=1, col=0, text="1"),
             TableCell(row=1, col=1, text="2")]
    assert table_text(cells) == "a\tb\n1\t2"


def test_a_grid_that_fits_its_words_is_trusted_one_that_cuts_through_them_is_not():
    rows = [[f"r{r}c{c}" for c in range(4)] for r in range(6)]
    cells = [line(text, X[c] + 4, ROW_TOP + r * PITCH + 3) for r, row in enumerate(rows) for c, text in enumerate(row)]
    assert grid_fit(_grid(6), _boxes(cells), 10.0).trusted()
    # two columns of index entries whose names run across a column boundary of the four-column grid
    entries = [line(f"\\\\@dottedtocline{r} {100 + r}, {200 + r}", X[2 * c] + 50, ROW_TOP + r * PITCH + 3)
               for r in range(6) for c in range(2)]
    fit = grid_fit(_grid(6), _boxes(entries), 10.0)
    assert fit.straddling > 0.5 and not fit.trusted()
    assert not grid_fit(_grid(6), [], 10.0).trusted()  # a grid holding no word fits nothing
