"""A table the layout model does not see still comes out as a table
(failure class 4 of issue 21): a born-digital financial statement whose
rows are single text-layer lines, its columns apart by less than pdfium's
own split. Before, the region models were skipped for running text and
its rows came out as one paragraph ("Revenue 12,418 11,902 4.3% Cost of
sales …")."""

from __future__ import annotations

import pytest

from longdoc.layout.geometry import LineBox
from longdoc.layout.grid_tables import find_grid_tables
from longdoc.model import BBox, BlockKind, Line
from longdoc.pipeline import ParseOptions
from tests.docgen.statements import statement
from tests.pipeline.helpers import load_doc


@pytest.fixture(scope="module")
def parsed(tmp_path_factory, ocr_pipeline):
    tmp = tmp_path_factory.mktemp("statement")
    doc = statement(tmp)
    result = ocr_pipeline.parse(doc.pdf_path, tmp / "out", ParseOptions(ocr="auto", formats=("json", "md")))
    return doc, load_doc(result), (tmp / "out" / "statement.md").read_text(encoding="utf-8")


def test_a_statement_written_row_by_row_is_a_table_with_its_cells(parsed):
    doc, parsed_doc, _ = parsed
    tables = [b for b in parsed_doc.pages[0].blocks if b.kind is BlockKind.TABLE]
    assert len(tables) == 1
    grid = {(c.row, c.col): c.text for c in tables[0].cells}
    rows = max(r for r, _ in grid) + 1
    got = [tuple(grid.get((r, c), "") for c in range(4)) for r in range(rows)]
    assert got == [tuple(row) for row in doc.rows]


def test_the_statement_is_a_pipe_table_in_markdown(parsed):
    _, _, md = parsed
    assert "| Revenue | 12,418 | 11,902 | 4.3% |" in md
    assert "Revenue 12,418 11,902 4.3% Cost of sales" not in md


def _line(text: str, x0: float, y: float, width: float | None = None) -> LineBox:
    w = width if width is not None else 5.0 * len(text)
    return LineBox.of(0, Line(text=text, bbox=BBox(x0=x0, y0=y, x1=x0 + w, y1=y + 10), confidence=1.0, page=1))


def _rows(*rows: tuple[tuple[str, float], ...]) -> list[LineBox]:
    out = []
    for n, row in enumerate(rows):
        out += [_line(text, x, 100 + 14 * n) for text, x in row]
    return [LineBox(i, l.line, l.x0, l.y0, l.x1, l.y1) for i, l in enumerate(out)]


def test_two_columns_of_prose_are_no_table():
    rows = [(("the river ran past the mill and the", 50), ("on the far side of the valley the", 320))] * 6
    assert find_grid_tables(_rows(*rows), 10.0) == []


def test_numbered_lines_of_code_are_no_table():
    rows = [((str(n), 50), (f"\\def\\macro{n}{{value}}", 80)) for n in range(102, 110)]
    assert find_grid_tables(_rows(*rows), 10.0) == []


def test_contents_entries_are_no_table():
    rows = [((f"{n}.1 Section title number {n} . . . . . .", 50), (str(10 * n), 400)) for n in range(1, 8)]
    assert find_grid_tables(_rows(*rows), 10.0) == []


def test_a_table_of_figures_is_a_table():
    rows = [(("Revenue", 50), ("12,418", 250), ("11,902", 330)), (("Cost", 50), ("(7,311)", 250), ("(7,045)", 330)),
            (("Profit", 50), ("5,107", 250), ("4,857", 330)), (("Tax", 50), ("(980)", 250), ("(901)", 330))]
    (table,) = find_grid_tables(_rows(*rows), 10.0)
    assert {(c.row, c.col, c.text) for c in table.cells} >= {(0, 0, "Revenue"), (0, 2, "11,902"), (3, 1, "(980)")}
