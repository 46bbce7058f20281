"""ocr=auto|force|off on born-digital and mixed documents; page ranges."""

from __future__ import annotations

from evaluation.metrics import cer
from longdoc.model import TextSource
from longdoc.pipeline import ParseOptions, Pipeline
from tests.conftest import make_settings
from tests.docgen import english_report, long_textlayer, rasterize
from tests.pipeline.fakes import NoEngineFake
from tests.pipeline.helpers import flat, load_doc, txt


def test_auto_uses_the_text_layer_and_never_starts_ocr(tmp_path):
    doc = english_report(tmp_path, pages=4)
    with Pipeline(make_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(doc.pdf_path, tmp_path / "out", ParseOptions(ocr="auto", page_chunk_size=2, chunk_overlap=1))
    parsed = load_doc(result)
    assert all(p.text_source is TextSource.TEXT_LAYER and p.ocr_reason == "text_layer_ok" for p in parsed.pages)
    assert cer(flat(txt(result)), flat(doc.main_text)) <= 0.002


def test_auto_sends_only_scanned_pages_to_ocr(tmp_path, ocr_pipeline):
    """Sample with 3 born-digital pages then 2 scanned pages."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "longdoc" / "samples" / "sample.pdf"
    result = ocr_pipeline.parse(sample, tmp_path / "out", ParseOptions(ocr="auto", page_chunk_size=2, chunk_overlap=1))
    pages = load_doc(result).pages
    assert [p.text_source for p in pages] == [TextSource.TEXT_LAYER] * 3 + [TextSource.OCR] * 2
    assert [p.ocr_reason for p in pages][3:] == ["no_text", "no_text"]


def test_ocr_off_keeps_scanned_pages_empty_and_says_why(tmp_path):
    doc = rasterize(english_report(tmp_path, pages=3), 100, tmp_path / "scan.pdf")
    with Pipeline(make_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(doc.pdf_path, tmp_path / "out", ParseOptions(ocr="off"))
    pages = load_doc(result).pages
    assert [p.ocr_reason for p in pages] == ["ocr_off:no_text"] * 3
    assert all(not p.blocks for p in pages)


def test_page_range_selects_exactly_those_pages(tmp_path):
    doc = long_textlayer(tmp_path, pages=40)
    with Pipeline(make_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(doc.pdf_path, tmp_path / "out",
                                ParseOptions(pages="3-5,17,40", page_chunk_size=2, chunk_overlap=1))
    parsed = load_doc(result)
    assert [p.number for p in parsed.pages] == [3, 4, 5, 17, 40]
    assert parsed.source.selected_pages == [3, 4, 5, 17, 40] and parsed.source.page_count == 40
    text = txt(result)
    for n in (3, 4, 5, 17, 40):
        assert f"Record {n}." in text
    assert "Record 6." not in text and "Record 1." not in text


def test_long_document_every_page_once_in_order(tmp_path):
    doc = long_textlayer(tmp_path, pages=150)
    with Pipeline(make_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(doc.pdf_path, tmp_path / "out", ParseOptions(page_chunk_size=7, chunk_overlap=3))
    parsed = load_doc(result)
    assert [p.number for p in parsed.pages] == list(range(1, 151))
    text = txt(result)
    positions = [text.find(f"Record {n}.") for n in range(1, 151)]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    assert all(text.count(f"Record {n}.") == 1 for n in range(1, 151))
    for page_furniture in doc.furniture[:5]:
        for item in page_furniture:
            assert item not in text
