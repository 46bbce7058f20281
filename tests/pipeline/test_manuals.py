"""Pages of the kinds real manuals hold, born-digital and scanned as an
office scanner would (200 dpi, skewed, JPEG), through the real pipeline
(RapidOCR, the CDLA layout model, SLANet-plus): nothing a reader sees is
hidden as a figure or scrambled as a table, contents entries come out one
per line with their leaders, single pages' running heads and folios are
furniture, and a line of running text is not a heading.

The real layout model calls the generated index with leaders and page
numbers a figure, and the one with code-line references (LaTeX's doc
package style) a table, as it does with the TeX manuals' indexes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pypdfium2 as pdfium
import pytest
from rapidfuzz import fuzz

from longdoc.engines.base import PageImage
from longdoc.model import FURNITURE_KINDS, BlockKind, Document
from longdoc.pipeline import ParseOptions
from longdoc.regions.detector import REGION_DPI
from tests.docgen.documents import TWO_COLUMN_TITLE, two_column
from tests.docgen.manuals import ManualPage, contents_page, figure_page, index_page, old_book_page
from tests.docgen.raster import office_scan
from tests.pipeline.helpers import flat, in_order, load_doc, txt

DIGITAL = ParseOptions(ocr="auto", regions=True)
SCAN = ParseOptions(ocr="force", dpi=200, regions=True)


def _parse(pipeline, page: ManualPage, scanned: bool, tmp) -> tuple[ManualPage, object]:
    if scanned:
        page = page.scan(tmp / "scan.pdf")
    return page, pipeline.parse(page.pdf_path, tmp / "out", SCAN if scanned else DIGITAL)


def _blocks(parsed: Document, kind: BlockKind) -> list:
    return [b for p in parsed.pages for b in p.blocks if b.kind is kind]


def _dots(text: str) -> int:
    """Leader dots of an entry (its section number's left out)."""
    first, _, rest = text.partition(" ")
    return rest.count(".") if re.fullmatch(r"[\d.]+", first) else text.count(".")


def _title(entry: str) -> str:
    """An entry's words before its leaders."""
    return re.split(r"\s*\.(?:\s*\.)+", entry)[0]


# --- contents ----------------------------------------------------------------------


@pytest.mark.parametrize("scanned", [False, True], ids=["digital", "scan"])
def test_contents_entries_come_out_one_per_line_with_their_leaders(scanned, tmp_path, ocr_pipeline):
    page, result = _parse(ocr_pipeline, contents_page(tmp_path), scanned, tmp_path)
    (contents,) = _blocks(load_doc(result), BlockKind.LIST)
    lines = contents.text.split("\n")
    assert len(lines) == len(page.entries)
    for got, want in zip(lines, page.entries):
        assert fuzz.ratio(got.replace(" ", ""), want.replace(" ", "")) >= 90, (got, want)
        assert abs(_dots(got) - _dots(want)) <= 1, (got, want)  # the leaders as many as printed
        assert (". ." in got) == (". ." in want)  # spaced as printed
    plain = txt(result)
    assert all(line in plain for line in lines)  # one entry per line in the text too


def test_solid_leaders_are_read_as_printed(tmp_path, ocr_pipeline):
    page, result = _parse(ocr_pipeline, contents_page(tmp_path, leaders="solid"), True, tmp_path)
    lines = [ln for b in load_doc(result).pages[0].blocks for ln in b.text.split("\n")]
    wanted = {_title(e): e for e in page.entries if "..." in e}
    read = {_title(ln): ln for ln in lines if "...." in ln}
    assert len(set(read) & set(wanted)) >= len(wanted) - 2  # OCR misreads a title or two
    for title in set(read) & set(wanted):
        got, want = read[title], wanted[title]
        assert ". ." not in got and abs(_dots(got) - _dots(want)) <= 1, (got, want)


# --- an index the layout model takes for a figure or a table ---------------------------


@contextmanager
def pdfium_page(pdf) -> Iterator[PageImage]:
    """Page 1 of ``pdf`` rendered as the regions stage renders it."""
    doc = pdfium.PdfDocument(str(pdf))
    try:
        page = doc[0]
        width, height = page.get_size()
        pixels = page.render(scale=REGION_DPI / 72).to_numpy()[..., :3].copy()
        yield PageImage(page=1, image=pixels, dpi=REGION_DPI, width_pt=width, height_pt=height)
    finally:
        doc.close()


INDEXES = {"figure": "pages", "table": "code lines"}  # what the layout model takes each for


def test_the_layout_model_takes_the_indexes_for_a_figure_and_a_table(tmp_path, ocr_pipeline):
    """The premise of the next test: the real model's regions over the two
    indexes, born-digital and scanned."""
    detector = ocr_pipeline.host.region_detector()
    for kind, refs in INDEXES.items():
        page = index_page(tmp_path, refs=refs)
        for pdf in (page.pdf_path, page.scan(tmp_path / "scan.pdf").pdf_path):
            with pdfium_page(pdf) as image:
                ((_, regions),) = detector.analyze([image])
            assert kind in {r.kind.value for r in regions}, (refs, pdf.name, regions)


@pytest.mark.parametrize("scanned", [False, True], ids=["digital", "scan"])
@pytest.mark.parametrize("taken_for", INDEXES)
def test_an_index_taken_for_a_figure_or_a_table_is_read_as_text_column_by_column(taken_for, scanned, tmp_path,
                                                                                 ocr_pipeline):
    page, result = _parse(ocr_pipeline, index_page(tmp_path, refs=INDEXES[taken_for]), scanned, tmp_path)
    parsed = load_doc(result)
    assert not _blocks(parsed, BlockKind.TABLE)
    assert not [b for b in _blocks(parsed, BlockKind.FIGURE) if len(b.text) > 40]  # nothing hidden as a figure
    plain = flat(txt(result)).replace("l@", "\\@")  # OCR reads a backslash as "l" now and then
    names = [e.split(" ")[0] for e in page.entries]
    missing = in_order(plain, names)
    assert len(missing) <= 0.1 * len(names), missing


# --- a figure's labels -------------------------------------------------------------------


def test_a_figure_keeps_its_labels_and_a_reader_sees_them(tmp_path, ocr_pipeline):
    page, result = _parse(ocr_pipeline, figure_page(tmp_path), True, tmp_path)
    (figure,) = _blocks(load_doc(result), BlockKind.FIGURE)
    labels = [ln.strip("■ ") for ln in figure.text.split("\n")]
    assert sum(label in labels for label in page.labels) >= len(page.labels) - 2
    md = result.outputs["md"].read_text(encoding="utf-8")
    visible = re.sub(r"<!--.*?-->", "", md, flags=re.DOTALL)
    assert "<!-- figure -->" in md
    assert all(label in visible for label in labels)
    assert all(label in txt(result) for label in labels)
    assert all(words in flat(visible) for words in page.body)  # the paragraphs around it stay text


# --- single pages: running heads, folios, headings ----------------------------------------

BOOK_HEADS = {
    "folio-title-chapter": ("400", "BRITISH HUSBANDRY.", "[Ch. XIX."),
    "one-box": ("400 BRITISH HUSBANDRY. [Ch. XIX.",),
    "chapter-folio": ("CHAPTER 3. METHODS", "27"),
    "roman": ("xii PREFACE",),
}


@pytest.mark.parametrize("head", BOOK_HEADS, ids=list(BOOK_HEADS))
def test_a_running_head_with_the_page_number_is_furniture_on_a_single_scanned_page(head, tmp_path, ocr_pipeline):
    book = old_book_page(tmp_path, head=BOOK_HEADS[head], seed=len(head))
    page, result = _parse(ocr_pipeline, book, True, tmp_path)
    parsed = load_doc(result)
    furniture = flat(" ".join(b.text for p in parsed.pages for b in p.blocks if b.kind in FURNITURE_KINDS))
    plain = flat(txt(result))
    assert fuzz.token_set_ratio(flat(page.furniture[0]), furniture) >= 85, furniture
    assert not any(part in plain for part in BOOK_HEADS[head] if len(part) > 3)
    assert all(words in plain for words in page.body)


def test_a_lone_folio_one_blank_line_under_the_text_is_the_page_number(tmp_path, ocr_pipeline):
    page, result = _parse(ocr_pipeline, old_book_page(tmp_path, foot="62", seed=1), True, tmp_path)
    parsed = load_doc(result)
    assert [b.text for b in _blocks(parsed, BlockKind.PAGE_NUMBER)] == ["62"]
    assert "62" not in txt(result).split()


@pytest.mark.parametrize(("seed", "number"), [("0", 1), ("2", 2)])
def test_a_line_of_running_text_is_not_a_heading_for_its_taller_box(seed, number, tmp_path, ocr_pipeline):
    """Scans where one line's OCR box came out taller than the body's
    ("The information technology group", the first line of a paragraph;
    "projects were approved, and the", in the middle of one)."""
    doc = two_column(tmp_path, pages=2)
    office_scan(doc.pdf_path, tmp_path / "scan.pdf", seed=seed, max_skew=1.0)
    options = ParseOptions(ocr="force", dpi=200, regions=True, pages=str(number))
    parsed = load_doc(ocr_pipeline.parse(tmp_path / "scan.pdf", tmp_path / "out", options))
    headings = [b.text for b in _blocks(parsed, BlockKind.HEADING) + _blocks(parsed, BlockKind.TITLE)]
    assert headings in ([], [TWO_COLUMN_TITLE]), headings
