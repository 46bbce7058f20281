"""What is read row by row and what column by column, on generated pages
scanned as an office scanner would (200 dpi, skewed, JPEG), through the
real pipeline (RapidOCR, the CDLA layout model, SLANet-plus): a running
head before the page number on its row whatever the skew, each option of
a usage page followed by its description, an index of ``term, 95``
entries column by column, each equation of a numbered display followed by
its number, each item of a price list by its price.

The real layout model calls a two-column index of single references
text, and a three-column one filling the page a table whose grid fits
its entries (a cell per entry): the second is read as a table, row by
row (:func:`test_an_index_of_single_references_the_model_takes_for_a_table_is_read_column_by_column`).
"""

from __future__ import annotations

import re

import pytest

from longdoc.model import FURNITURE_KINDS, BlockKind
from longdoc.pipeline import ParseOptions
from tests.docgen.manuals import equations_page, index_page, old_book_page, options_page, price_list_page
from tests.docgen.raster import office_scan
from tests.pipeline.helpers import flat, in_order, load_doc, nospace, txt
from tests.pipeline.test_manuals import pdfium_page

SCAN = ParseOptions(ocr="force", dpi=200, regions=True)


# --- a running head and the page number on its row ----------------------------------------

HEAD = ("CHAPTER 3. METHODS", "27")


@pytest.mark.parametrize("seed", [0, 1, 2, 10])  # turned by 0.41, -0.44, 0.55, 0.09 degrees
def test_a_running_head_comes_before_the_page_number_on_its_row_whatever_the_skew(seed, tmp_path, ocr_pipeline):
    """Turned counter-clockwise, the page number's box starts higher than
    the head's: by top edge it came first (seeds 0, 2 and 10)."""
    book = old_book_page(tmp_path, head=HEAD, seed=13)
    office_scan(book.pdf_path, tmp_path / "scan.pdf", seed=seed)
    parsed = load_doc(ocr_pipeline.parse(tmp_path / "scan.pdf", tmp_path / "out", SCAN))
    furniture = [b.text for b in sorted(parsed.pages[0].blocks, key=lambda b: b.order) if b.kind in FURNITURE_KINDS]
    read = flat(" ".join(furniture))
    assert read.replace(" ", "") == "".join(HEAD).replace(" ", ""), furniture


# --- an option list -------------------------------------------------------------------------


def _key(text: str) -> str:
    """Letters and digits only, lower case, the letters OCR mixes up in a
    bold option (``-o``/``-0``, ``-l``/``-I``) made one."""
    return re.sub(r"[^a-z0-9]", "", text.lower()).translate(str.maketrans("0i1", "oll"))


def test_an_option_list_is_read_each_option_before_its_description(tmp_path, ocr_pipeline):
    page = options_page(tmp_path).scan(tmp_path / "scan.pdf")
    result = ocr_pipeline.parse(page.pdf_path, tmp_path / "out", SCAN)
    plain = flat(txt(result))
    assert plain.startswith(page.body[0]) and page.body[1] in plain
    assert plain.index(page.body[1]) > plain.index("exit")  # the paragraph after the options, after them
    # each option, then the start of its description, in the order printed (OCR may misread one)
    items = [_key(" ".join(entry.split()[:5])) for entry in page.entries]
    missing = in_order(_key(plain), items)
    assert len(missing) <= 1, missing


# --- an index of single references -----------------------------------------------------------


@pytest.mark.parametrize("refs", ["comma", "full-width comma"])
def test_a_two_column_index_of_single_references_is_read_column_by_column(refs, tmp_path, ocr_pipeline):
    """The model calls it text; each entry is ``term, 95`` (``字体，45``)."""
    page = index_page(tmp_path, refs=refs, columns=2).scan(tmp_path / "scan.pdf")
    result = ocr_pipeline.parse(page.pdf_path, tmp_path / "out", SCAN)
    assert not [b for p in load_doc(result).pages for b in p.blocks if b.kind is BlockKind.TABLE]
    missing = in_order(nospace(txt(result)), [nospace(e) for e in page.entries])
    assert len(missing) <= 0.1 * len(page.entries), missing


#: pages of an index the real layout model takes for a table: (refs, rows a column)
TABLE_INDEXES = {"comma": 45, "full-width comma": 40}


@pytest.mark.parametrize("refs", TABLE_INDEXES)
def test_an_index_of_single_references_the_model_takes_for_a_table_is_read_column_by_column(refs, tmp_path,
                                                                                             ocr_pipeline):
    page = index_page(tmp_path, refs=refs, columns=3, rows=TABLE_INDEXES[refs]).scan(tmp_path / "scan.pdf")
    with pdfium_page(page.pdf_path) as image:
        ((_, regions),) = ocr_pipeline.host.region_detector().analyze([image])
    assert "table" in {r.kind.value for r in regions}, regions  # the premise
    result = ocr_pipeline.parse(page.pdf_path, tmp_path / "out", SCAN)
    # the structure model's grid fits the entries (a cell each): the entries
    # themselves say it is an index (floats.INDEX_SHARE), not a table
    assert not [b for p in load_doc(result).pages for b in p.blocks if b.kind is BlockKind.TABLE]
    missing = in_order(nospace(txt(result)), [nospace(e) for e in page.entries])
    assert len(missing) <= 0.1 * len(page.entries), missing


# --- labels on the right: equation numbers, prices -----------------------------------------


def _math(text: str) -> str:
    """No spaces, the dashes OCR reads for a minus sign made one."""
    return nospace(text).translate(str.maketrans("−–—", "---"))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_numbered_display_is_read_each_equation_before_its_number(seed, tmp_path, ocr_pipeline):
    """A regression test: on this scan the numbers (``(3.1)``, about 1.5
    line heights wide) are narrower than a column (page.COLUMN_LINES), so
    the XY-cut fuses them with the equations and reads the display row by
    row without the right-label rule (a76529e) as well."""
    page = equations_page(tmp_path).scan(tmp_path / "scan.pdf", seed=seed)
    result = ocr_pipeline.parse(page.pdf_path, tmp_path / "out", SCAN)
    plain = flat(txt(result))
    assert plain.startswith(page.body[0]) and page.body[1] in plain
    missing = in_order(_math(plain), [_math(e) for e in page.entries])
    assert not missing, (missing, plain)


def test_a_price_list_is_read_each_item_before_its_price(tmp_path, ocr_pipeline):
    """The prices (``18.40 EUR``) make a column of their own; before the
    right-label rule (a76529e) all the items were read, then each price as a
    heading of its own."""
    page = price_list_page(tmp_path).scan(tmp_path / "scan.pdf")
    result = ocr_pipeline.parse(page.pdf_path, tmp_path / "out", SCAN)
    plain = flat(txt(result))
    assert plain.startswith(page.body[0]) and page.body[1] in plain
    missing = in_order(nospace(plain), [nospace(e) for e in page.entries])
    assert not missing, (missing, plain)
