"""OCR-style boxes: padded past the type, and merged across a column gutter.

RapidOCR's detector pads each box by a few points on every side (a 10 pt
gutter can close up entirely) and sometimes boxes a line of each column as
one. The layout must still read the columns one after the other.
"""

import json
from pathlib import Path

import pytest
from rapidfuzz.distance import Levenshtein

from longdoc.layout import find_furniture, layout_page
from longdoc.model import BBox, BlockKind, Line, Page, Region, RegionKind

from .synth import FULL, LEFT, PARAGRAPHS, RIGHT, Column, journal_page, line, page_of, raster

PAD_X, PAD_Y = 5.0, 2.2  # what RapidOCR adds around 10 pt type at 200 dpi


def _padded(lines: list[Line]) -> list[Line]:
    return [
        l.model_copy(update={"bbox": BBox(x0=l.bbox.x0 - PAD_X, y0=l.bbox.y0 - PAD_Y,
                                          x1=l.bbox.x1 + PAD_X, y1=l.bbox.y1 + PAD_Y)})
        for l in lines
    ]


def _merge_rows(left: list[Line], right: list[Line], rows: set[int]) -> list[Line]:
    """Box the n-th line of each column as one line for n in ``rows``."""
    out = []
    for n, (a, b) in enumerate(zip(left, right)):
        if n in rows:
            out.append(Line(text=f"{a.text} {b.text}", bbox=a.bbox.union(b.bbox), confidence=0.9, page=a.page))
        else:
            out += [a, b]
    return out + left[len(right):] + right[len(left):]


def _texts(rec):
    blocks = layout_page(rec, find_furniture(rec, []))
    page = rec.model_copy(update={"blocks": blocks, "lines": []})
    return [b.text for b in page.main_blocks()]


def _columns(top=90.0):
    left, right = Column(LEFT, top), Column(RIGHT, top)
    for t in PARAGRAPHS[0:3]:
        left.paragraph(t)
    for t in PARAGRAPHS[3:6]:
        right.paragraph(t)
    return left, right


def test_padded_boxes_that_close_the_gutter_still_read_column_by_column():
    for n in (1, 2, 3):
        rec, expected = journal_page(n, seed=n)
        padded = page_of(_padded(rec.lines), n)
        assert _texts(padded) == _texts(rec)


@pytest.mark.parametrize("rows", [{1}, {2, 5}, {0, 4, 7}, {6, 7, 8}])
def test_lines_merged_across_the_gutter_are_split_back(rows):
    """The split falls at the space nearest to where the gutter should be
    in the text, judged from the columns' character density: a short word
    at the seam may land on the wrong side (and a split first line loses
    its indent, so two paragraphs may run together), nothing worse."""
    left, right = _columns()
    merged = _merge_rows(left.lines, right.lines, rows)
    texts = _texts(page_of(raster(_padded(merged))))
    words = " ".join(texts).split()
    assert sorted(words) == sorted(" ".join(PARAGRAPHS[0:6]).split())
    assert Levenshtein.distance(words, " ".join(PARAGRAPHS[0:6]).split()) <= 2 * len(rows)


def test_full_width_text_set_apart_from_the_columns_is_not_split():
    intro = Column(FULL, 90.0)
    intro.paragraph(PARAGRAPHS[7], indent=0.0)
    left, right = _columns(top=intro.y + 14.0)
    rec = page_of(raster(_padded([*intro.lines, *left.lines, *right.lines])))
    assert _texts(rec) == [PARAGRAPHS[7], *PARAGRAPHS[0:6]]


def test_small_table_in_a_page_of_prose_is_left_alone():
    col = Column(FULL, 90.0)
    col.paragraph(PARAGRAPHS[0])
    col.paragraph(PARAGRAPHS[1])
    rows = []
    for name, value in [("Austria", "8.9"), ("Belgium", "11.5"), ("Denmark", "5.8")]:
        rows += [line(name, 72.0, col.y), line(value, 400.0, col.y)]
        col.y += 12.5
    col.paragraph(PARAGRAPHS[2], gap=6.0)
    rec = page_of(raster(_padded([*col.lines, *rows])))
    texts = _texts(rec)
    assert texts[:2] == PARAGRAPHS[0:2] and texts[-1] == PARAGRAPHS[2]
    # the prose keeps its paragraphs; the table between them is read row by row (a table of
    # figures, found from its lines' grid: each name with its value)
    assert texts[2:-1] == ["Austria\t8.9\nBelgium\t11.5\nDenmark\t5.8"]


#: RapidOCR's lines (ONNX Runtime) of a scanned three-column index page (tests/docgen/manuals.py
#: index_page, office_scan seed 7): text and box (points); an entry's page numbers are often a box of
#: their own, and wrapped numbers start under the middle of their entry. The layout model found the
#: columns a figure (their lines are read as text in columns, INDEX_REGION)
INDEX_PAGE = Path(__file__).parent / "data" / "index_page_rapidocr.json"
INDEX_REGION = Region(kind=RegionKind.FIGURE, bbox=BBox(x0=63.0, y0=115.4, x1=531.9, y1=465.3), score=0.86)


def _index_page(dx: float) -> Page:
    """The recorded index page with every box's right edge moved ``dx`` points."""
    rows = json.loads(INDEX_PAGE.read_text(encoding="utf-8"))
    return Page(number=1, width=595.28, height=841.89, regions=[INDEX_REGION], lines=[
        Line(text=text, bbox=BBox(x0=x0, y0=y0, x1=x1 + dx, y1=y1), confidence=0.95, page=1)
        for text, x0, y0, x1, y1 in rows])


@pytest.mark.parametrize("dx", [-1.7, -0.85, 0.0, 0.85, 1.7])
def test_an_index_is_read_column_by_column_however_its_boxes_end(dx):
    """The three columns' gaps are the gutters, not the gap between the
    middle column's entries and their page numbers, which more lines sit
    on each side of (with 26 entries across it): on the old rule (most
    lines on the smaller side) that cut won, split the middle column's
    entries from their numbers and read the page in 21 blocks, or not, as
    a box's edge moved by a pixel between two runtimes."""
    rec = _index_page(dx)
    page = rec.model_copy(update={"blocks": layout_page(rec, find_furniture(rec, [])), "lines": []})
    kinds = [b.kind for b in page.main_blocks()]
    assert kinds == [BlockKind.TITLE, BlockKind.LIST]
    entries = page.main_blocks()[1].text.split("\n")
    firsts = [e.split(" ")[0] for e in entries]
    # each column's first entry after the last one of the column before it
    assert firsts.index("\\@botlist") < firsts.index("\\@dbldeferlist") < firsts.index("\\@midlist") \
        < firsts.index("\\@tempa")
    assert "\\@eha .. 412, 565, 711, 861, 869,957" in entries
