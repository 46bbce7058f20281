"""What is read row by row and what column by column, on synthetic pages:
a running head and the page number on its row (whatever the scan's skew),
an option list (flags beside their descriptions), an index of ``term, 95``
entries the layout model took for a table (read column by column), labels
on the right of the rows they label (a display's equation numbers, a price
list's prices) each read after its row."""

from __future__ import annotations

import pytest

from longdoc.layout import find_furniture, layout_page
from longdoc.model import BBox, BlockKind, Region, RegionKind, TableCell
from tests.pipeline.helpers import in_order

from .synth import CHAR_W, FULL, PARAGRAPHS, PITCH, Column, line, page_of, raster

# --- a running head and the page number on one row ---------------------------------------

HEAD, FOLIO = "CHAPTER 3. METHODS", "27"


def _book_page(skew: float, number: int = 27):
    """A running head at the left, the page number at the right edge of the
    same row, a body under them; the scan turned by ``skew`` degrees (a
    positive skew lifts the right end of a row: the page number's box
    starts higher than the head's)."""
    rise = skew * 3.1416 / 180  # points up per point to the right
    head = line(HEAD, 72.0, 40.0)
    folio_x = 540.0 - CHAR_W * len(str(number))
    folio = line(str(number), folio_x, 40.0 - rise * (folio_x - 72.0))
    col = Column(FULL, 70.0)
    for text in PARAGRAPHS[:3]:
        col.paragraph(text, gap=6.0)
    return page_of(raster([head, folio, *col.lines]), number)


@pytest.mark.parametrize("skew", [-0.6, -0.3, 0.0, 0.3, 0.6])
def test_a_running_head_comes_before_the_page_number_on_its_row_whatever_the_skew(skew):
    rec = _book_page(skew)
    furniture = find_furniture(rec, [_book_page(skew, n) for n in (25, 26, 28, 29)])
    assert sorted(furniture.values()) == sorted([BlockKind.HEADER, BlockKind.PAGE_NUMBER])
    blocks = sorted(layout_page(rec, furniture), key=lambda b: b.order)
    assert [b.text for b in blocks[:2]] == [HEAD, FOLIO]


# --- an option list ------------------------------------------------------------------------

#: (flag, description lines): one-line and two-line descriptions, each
#: starting on its flag's row
OPTIONS = [
    ("-p", ["print each page as it is read"]),
    ("--quiet", ["say nothing but errors"]),
    ("-o FILE", ["write the text to FILE instead of the", "standard output"]),
    ("--dpi N", ["render scanned pages at N dots per inch"]),
    ("-l LANG", ["the language of the text, as an ISO 639", "code; several joined by a plus sign"]),
    ("--force", ["read every page again, even those read"]),
    ("-v", ["tell what each stage does"]),
    ("--pages R", ["only the pages in the range R, such as", "3-7 or 2,4,9"]),
    ("-h", ["show this help and exit"]),
]


def _labelled_page(items: list[tuple[str, list[str]]], text_x: float):
    """A paragraph, the items (labels at x=72, their text's lines at
    ``text_x``, on the text's pitch), a paragraph; and the items' lines."""
    col = Column(FULL, 90.0)
    col.paragraph(PARAGRAPHS[0])
    y = col.y + 8.0
    lines = []
    for label, text_lines in items:
        lines.append(line(label, 72.0, y))
        for k, text in enumerate(text_lines):
            lines.append(line(text, text_x, y + k * PITCH))
        y += len(text_lines) * PITCH
    col.y = y + 8.0
    col.paragraph(PARAGRAPHS[1])
    return page_of(raster([*col.lines, *lines])), lines


def _options_page():
    """A paragraph, the options (flags at x=72, descriptions at x=180), a paragraph."""
    return _labelled_page(OPTIONS, 180.0)[0]


def test_an_option_list_is_read_each_flag_before_its_description():
    blocks = sorted(layout_page(_options_page(), {}), key=lambda b: b.order)
    text = "\n".join(b.text for b in blocks)
    assert blocks[0].text.startswith("Alpha paragraph") and blocks[-1].text.startswith("Bravo paragraph")
    items = [f"{flag} {' '.join(desc)}" for flag, desc in OPTIONS]
    flat = " ".join(text.split())
    at = 0
    for item in items:  # each flag, then its whole description, in the order printed
        found = flat.find(item, at)
        assert found >= 0, (item, flat)
        at = found + len(item)


#: terms and definitions long enough to be running text (60+ characters a line)
TERMS_DEFINED = [
    ("(empty)", ["the empty string, which stands for no colour at all"]),
    ("(minus)", ["a non-empty string consisting of one or more minus signs in a row",
                 "read as the complement of the colour"]),
    ("(int)", ["an integer number with an optional sign, in decimal digits"]),
    ("(num)", ["a non-negative integer number written in decimal digits only"]),
    ("(dec)", ["a real number written with a decimal point and an optional sign",
               "between minus and plus one hundred"]),
    ("(pct)", ["a real number from the interval from zero to one hundred inclusive"]),
]


def test_a_definition_list_the_layout_model_took_for_a_picture_is_read_row_by_row():
    """The layout model calls a definition list (each term beside a long
    definition) a figure: its definitions are running text, back in the
    body and known to be in columns, yet the terms label the definitions'
    rows, so each term is read before its definition (xcolor's table of
    arguments, hyperref's list of options, read by a real scan)."""
    page, lines = _labelled_page(TERMS_DEFINED, 130.0)
    top, bottom = min(l.bbox.y0 for l in lines), max(l.bbox.y1 for l in lines)
    region = Region(kind=RegionKind.FIGURE, bbox=BBox(x0=66.0, y0=top - 2, x1=545.0, y1=bottom + 2), score=0.8)
    page = page.model_copy(update={"regions": [region]})
    blocks = sorted(layout_page(page, {}), key=lambda b: b.order)
    flat = " ".join(" ".join(b.text for b in blocks).split())
    at = 0
    for item in (f"{term} {' '.join(definition)}" for term, definition in TERMS_DEFINED):
        found = flat.find(item, at)
        assert found >= 0, (item, flat)
        at = found + len(item)


# --- an index the layout model took for a table ------------------------------------------

TERMS = ["abbreviations", "accents", "alignment", "appendix", "arrays", "bibliography", "boxes", "captions",
         "chapters", "citations", "columns", "commands", "counters", "dashes", "dates", "encodings", "equations",
         "figures", "floats", "fonts", "footnotes", "glossaries", "headings", "hyphenation"]

TERMS_ZH = ["版式", "标点", "标题", "表格", "参考文献", "插图", "尺寸", "长度", "抄录", "词汇表", "单位", "导言区",
            "定理", "断行", "段落", "对齐", "分栏", "浮动体", "符号", "附录", "公式", "行距", "汉字", "宏包"]


def _index_page(comma: str = ", ", terms: list[str] = TERMS):
    """"Index", then two columns of ``term, 95`` entries (one page number
    after a comma), inside a TABLE region whose grid does not fit them: a
    column of cells per index column, each cell holding four entries (the
    structure model's grid over an index, its rows not the index's rows)."""
    title = line("Index", 72.0, 70.0, size=17.0)
    half = len(terms) // 2
    lines, top = [], 100.0
    for c, column in enumerate((terms[:half], terms[half:])):
        for r, term in enumerate(column):
            lines.append(line(f"{term}{comma}{12 + 7 * (r + half * c)}", 72.0 + 240.0 * c, top + r * PITCH))
    per_cell = 4
    cells = [TableCell(row=r, col=c, bbox=BBox(x0=68.0 + 240.0 * c, y0=top - 2 + r * per_cell * PITCH,
                                               x1=300.0 + 240.0 * c, y1=top - 2 + (r + 1) * per_cell * PITCH))
             for r in range((half + per_cell - 1) // per_cell) for c in range(2)]
    region = Region(kind=RegionKind.TABLE, bbox=BBox(x0=66.0, y0=top - 4, x1=545.0, y1=top + half * PITCH + 2),
                    score=0.9, cells=cells)
    return page_of(raster([title, *lines])).model_copy(update={"regions": [region]}), lines


@pytest.mark.parametrize("comma", [", ", "，"], ids=["latin", "full-width"])
def test_an_index_of_single_references_taken_for_a_table_is_read_column_by_column(comma):
    terms = TERMS if comma == ", " else TERMS_ZH
    page, entries = _index_page(comma, terms)
    blocks = sorted(layout_page(page, {}), key=lambda b: b.order)
    assert not [b for b in blocks if b.kind is BlockKind.TABLE]
    flat = " ".join(" ".join(b.text for b in blocks).split())
    at = 0
    for entry in entries:  # column by column: the whole left column, then the right one
        found = flat.find(entry.text, at)
        assert found >= 0, (entry.text, flat)
        at = found + len(entry.text)


# --- what stays column by column --------------------------------------------------------


@pytest.mark.parametrize("side", ["left", "right"])
def test_a_sidebar_of_short_lines_beside_a_paragraph_is_not_read_into_it(side):
    """A narrow column of short lines ("In this issue", a pull quote) beside
    running text, between two full-width paragraphs, shares the text's rows
    as labels share their descriptions' rows: it is still read apart from
    the paragraph, never woven into it (the paragraph's lines above the
    sidebar's rows are full ones; a description starts after the short
    last line of the one before)."""
    top = Column(FULL, 80.0)
    top.paragraph(PARAGRAPHS[2])
    y = top.y + 10.0
    sidebar = ["In this issue", "Budget 2027", "New roads", "Parks", "Letters", "Events"]
    side_x, span = (72.0, (200.0, 540.0)) if side == "left" else (470.0, (72.0, 410.0))
    bar = [line(t, side_x, y + k * PITCH) for k, t in enumerate(sidebar)]
    col = Column(span, y)
    text = " ".join([PARAGRAPHS[0], PARAGRAPHS[1], PARAGRAPHS[3]])
    col.paragraph(text, indent=0.0)
    bottom = Column(FULL, col.y + 10.0)
    bottom.paragraph(PARAGRAPHS[4])
    blocks = layout_page(page_of(raster([*top.lines, *bar, *col.lines, *bottom.lines])), {})
    texts = [" ".join(b.text.split()) for b in sorted(blocks, key=lambda b: b.order)]
    assert text in texts, texts


# --- labels on the right: equation numbers, prices --------------------------------------


def _rows_page(rows: list[tuple[str, str]], *, left: float | None, right: float = 540.0, jot: float = 0.0):
    """A paragraph, then ``rows`` of (text, label): each text at ``left``
    (centred on the text width when None), its label flush with ``right``
    on the same row, rows ``PITCH + jot`` apart, then a paragraph."""
    col = Column(FULL, 90.0)
    col.paragraph(PARAGRAPHS[0])
    y = col.y + 8.0
    lines = []
    for text, label in rows:
        x = left if left is not None else (FULL[0] + FULL[1] - CHAR_W * len(text)) / 2
        lines += [line(text, x, y), line(label, right - CHAR_W * len(label), y)]
        y += PITCH + jot
    col.y = y + 8.0
    col.paragraph(PARAGRAPHS[1])
    return page_of(raster([*col.lines, *lines]))


def _read(page) -> str:
    blocks = sorted(layout_page(page, {}), key=lambda b: b.order)
    assert blocks[0].text.startswith("Alpha paragraph") and blocks[-1].text.startswith("Bravo paragraph")
    return " ".join(" ".join(b.text for b in blocks).split())


#: a display solving a system step by step (lines of differing widths), numbered
#: as in chapter 12: the numbers' column is wider than three line heights, a
#: column of its own (narrower, it is fused with the equations' and read row by
#: row in any case: the second case)
DISPLAY = ["x + y + z = 12", "x - y = 4", "z = 2", "2x + y - z = 14"]
WIDE_NUMBERS = ["(12.10)", "(12.11)", "(12.12)", "(12.13)"]
#: equations of about one width (each within LABEL_FULL_SHARE of the widest)
EVEN_DISPLAY = ["a + b = c", "d - e = f", "g = h"]


@pytest.mark.parametrize("equations, numbers", [
    (DISPLAY, WIDE_NUMBERS),
    (EVEN_DISPLAY, ["(1)", "(2)", "(3)"]),
    pytest.param(EVEN_DISPLAY, WIDE_NUMBERS[:3], marks=pytest.mark.xfail(strict=True, reason=(
        "order._labels_of: the numbers are wider than LABEL_WIDTH_SHARE of equations this short (9 characters), "
        "so they are no labels and are read after all the equations"))),
], ids=["wide numbers", "narrow numbers", "wide numbers, even equations"])
def test_a_numbered_display_is_read_each_equation_before_its_number(equations, numbers):
    """A paragraph, a display of centred equations each numbered at the
    right margin, a paragraph: each number right after its equation (not
    all the equations, then "(12.10) (12.11) ...")."""
    rows = list(zip(equations, numbers))
    flat = _read(_rows_page(rows, left=None, jot=3.0))
    missing = in_order(flat, [f"{eq} {number}" for eq, number in rows])
    assert not missing, (missing, flat)


#: a menu: dishes at the left margin, prices flush right (not amounts a
#: grid table takes: ``_NUMBER`` has no currency after the figure)
MENU = [("Tomato soup with bread", "6,50 €"), ("Green salad", "5,80 €"), ("Grilled trout with potatoes", "18,40 €"),
        ("Mushroom risotto", "14,90 €"), ("Roast chicken, vegetables", "16,20 €"), ("Apple pie", "5,50 €"),
        ("Cheese plate", "9,80 €")]
#: dishes of about one length (each within LABEL_FULL_SHARE of the longest)
EVEN_MENU = [("Tomato soup with bread", "6,50 €"), ("Green salad with cheese", "5,80 €"),
             ("Grilled trout, potatoes", "18,40 €"), ("Mushroom risotto, herbs", "14,90 €"),
             ("Roast chicken, vegetables", "16,20 €"), ("Apple pie with cream", "5,50 €"),
             ("Cheese plate and grapes", "9,80 €")]
#: short dish names: the prices are wider than half the dishes' column
SHORT_MENU = [("Espresso", "2.80 EUR"), ("Cappuccino", "3.40 EUR"), ("Flat white", "3.20 EUR"),
              ("Hot chocolate", "3.90 EUR"), ("Green tea", "2.60 EUR"), ("Croissant", "2.20 EUR")]


@pytest.mark.parametrize("rows", [
    MENU,
    [(dish, "$" + price.rstrip(" €").replace(",", ".")) for dish, price in MENU],  # a grid table: row by row too
    EVEN_MENU,  # not prose running on across the prices' rows (order.PROSE_WORDS)
    pytest.param(SHORT_MENU, marks=pytest.mark.xfail(strict=True, reason=(
        "order._labels_of: the prices are wider than LABEL_WIDTH_SHARE of the dishes' column, so they are "
        "no labels and are read after all the dishes (each price a block of its own)"))),
], ids=["euro", "dollar", "even dishes", "short dishes"])
def test_a_price_list_is_read_each_item_before_its_price(rows):
    flat = _read(_rows_page(rows, left=72.0))
    missing = in_order(flat, [f"{item} {price}" for item, price in rows])
    assert not missing, (missing, flat)
