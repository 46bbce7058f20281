"""Real OCR on rendered pages of generated documents with exact ground truth:
text, reading order, furniture and page-break joins as a reader sees them."""

from __future__ import annotations

import pytest

from evaluation.metrics import cer, order_ok
from longdoc.model import BlockKind, DocumentStatus, TextSource
from longdoc.pipeline import ParseOptions
from tests.docgen import chinese_report, english_report, rasterize, side_note, to_tiff, two_column
from tests.pipeline.helpers import flat, load_doc, nospace, txt

FORCE = ParseOptions(ocr="force", dpi=200, page_chunk_size=2, chunk_overlap=1)


@pytest.fixture(scope="module")
def english(tmp_path_factory, ocr_pipeline):
    tmp = tmp_path_factory.mktemp("en")
    doc = rasterize(english_report(tmp, pages=4), 200, tmp / "scan.pdf")
    return doc, ocr_pipeline.parse(doc.pdf_path, tmp / "out", FORCE)


def test_english_scan_reads_at_most_1_percent_cer(english):
    doc, result = english
    assert result.status is DocumentStatus.SUCCEEDED
    assert cer(flat(txt(result)), flat(doc.main_text)) <= 0.01


def test_english_scan_pages_are_ocr_and_all_present_once(english):
    doc, result = english
    parsed = load_doc(result)
    assert [p.number for p in parsed.pages] == [1, 2, 3, 4]
    assert all(p.text_source is TextSource.OCR and p.engine == "rapidocr" for p in parsed.pages)


def test_running_header_footer_and_page_numbers_leave_main_text(english):
    doc, result = english
    text = txt(result)
    parsed = load_doc(result)
    for number, furniture in enumerate(doc.furniture, start=1):
        page = parsed.pages[number - 1]
        kinds = {b.kind for b in page.blocks}
        assert kinds & {BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER}, f"page {number}"
        for item in furniture:
            assert item not in text, f"furniture {item!r} leaked into the text"


def test_paragraph_and_list_continue_over_page_breaks(english):
    doc, result = english
    text = flat(txt(result))
    for before, after in doc.order_checks:
        assert order_ok(text, before, after, max_diffs=2), (before, after)
    assert "continuation" in text and "continu- ation" not in text
    joined = [b for p in load_doc(result).pages for b in p.blocks if len(b.source_pages) > 1]
    assert joined, "no block records being continued over a page break"


def test_chinese_scan_reads_at_most_1_percent_cer(tmp_path, ocr_pipeline):
    doc = rasterize(chinese_report(tmp_path, pages=2), 200, tmp_path / "zh.pdf")
    result = ocr_pipeline.parse(doc.pdf_path, tmp_path / "out", FORCE)
    assert cer(nospace(txt(result)), nospace(doc.main_text)) <= 0.01
    for page_furniture in doc.furniture:
        for item in page_furniture:
            assert nospace(item) not in nospace(txt(result))


def test_two_columns_come_out_column_by_column(tmp_path, ocr_pipeline):
    doc = rasterize(two_column(tmp_path, pages=2), 200, tmp_path / "cols.pdf")
    result = ocr_pipeline.parse(doc.pdf_path, tmp_path / "out", FORCE)
    text = flat(txt(result))
    assert cer(text, flat(doc.main_text)) <= 0.02
    for before, after in doc.order_checks:
        assert order_ok(text, before, after, max_diffs=2), (before, after)


def test_side_note_follows_its_paragraph_without_splitting_it(tmp_path, ocr_pipeline):
    doc = rasterize(side_note(tmp_path), 200, tmp_path / "note.pdf")
    result = ocr_pipeline.parse(doc.pdf_path, tmp_path / "out", FORCE)
    text = flat(txt(result))
    for before, after in doc.order_checks:
        assert order_ok(text, before, after, max_diffs=2), (before, after)
    kinds = [b.kind for b in load_doc(result).pages[0].blocks]
    assert BlockKind.SIDENOTE in kinds


def test_multipage_tiff_is_parsed_page_by_page(tmp_path, ocr_pipeline):
    doc = to_tiff(english_report(tmp_path, pages=3), 150, tmp_path / "scan.tiff")
    result = ocr_pipeline.parse(doc.pdf_path, tmp_path / "out", ParseOptions(ocr="auto", page_chunk_size=2, chunk_overlap=1))
    parsed = load_doc(result)
    assert parsed.source.media_type == "image/tiff"
    assert [p.number for p in parsed.pages] == [1, 2, 3]
    assert cer(flat(txt(result)), flat(doc.main_text)) <= 0.02
