"""Each page's confidence and flags, and the review rule, on the document
model's own types (:mod:`longdoc.pipeline.review`), and the one flag the
fake engine can show through the CLI (``downscaled``). Real OCR through the
CLI: tests/export/test_review.py; through the API: tests/api/test_review.py."""

from __future__ import annotations

import json

import pytest

from longdoc.model import BBox, Block, BlockKind, ErrorInfo, Line, Page, PageFlag, PageStatus, TextSource
from longdoc.pipeline.review import with_review
from tests.docgen import english_report, rasterize
from tests.export.test_page_labels import cli

BOX = BBox(x0=72, y0=72, x1=300, y1=86)


def line(text: str, confidence: float, page: int = 1) -> Line:
    return Line(text=text, bbox=BOX, confidence=confidence, page=page)


def ocr_page(*lines: Line, **fields) -> Page:
    return Page(number=1, width=595, height=842, text_source=TextSource.OCR, engine="rapidocr",
                lines=list(lines), **fields)


def laid_out(*lines: Line, **fields) -> Page:
    """The page as layout leaves it: its lines inside a paragraph block."""
    block = Block(id="p1-b0", kind=BlockKind.PARAGRAPH, bbox=BOX, order=0, text=" ".join(l.text for l in lines),
                  lines=list(lines), source_pages=[1])
    return ocr_page(**fields).model_copy(update={"blocks": [block]})


def test_confidence_is_the_mean_of_the_lines_weighted_by_characters():
    page = with_review(ocr_page(line("a" * 90, 0.9), line("bbbbbbbbbb", 0.5)), 0.85)
    assert page.confidence == pytest.approx((90 * 0.9 + 10 * 0.5) / 100)      # 0.86, not the plain mean 0.7
    assert page.flags == []
    # the same lines laid out into blocks give the same figure
    assert with_review(laid_out(line("a" * 90, 0.9), line("bbbbbbbbbb", 0.5)), 0.85).confidence == page.confidence


def test_below_review_below_is_low_confidence_and_a_page_to_review():
    page = ocr_page(line("a" * 90, 0.9), line("b" * 10, 0.5))                # 0.86
    strict = with_review(page, 0.9)
    assert strict.flags == [PageFlag.LOW_CONFIDENCE] and strict.needs_review()
    lenient = with_review(page, 0.86)
    assert lenient.flags == [] and not lenient.needs_review()


def test_a_text_layer_page_has_no_confidence():
    page = Page(number=1, width=595, height=842, text_source=TextSource.TEXT_LAYER, engine="text_layer",
                lines=[line("Born digital.", 1.0)])
    assert with_review(page, 0.99).confidence is None
    assert with_review(page, 0.99).flags == []


def test_a_model_engine_page_of_blocks_has_no_confidence_and_is_not_blank():
    block = Block(id="p1-b0", kind=BlockKind.PARAGRAPH, bbox=BOX, order=0, text="From the model.", source_pages=[1])
    page = with_review(ocr_page().model_copy(update={"blocks": [block]}), 0.85)
    assert page.confidence is None and page.flags == []


def test_flags_from_what_the_page_records_in_their_stable_order():
    page = ocr_page(line("Turned and shrunk.", 0.95), rotation=90, downscaled=True,
                    produced_by="fallback:rapidocr", flags=[PageFlag.REPETITION])
    flagged = with_review(page, 0.99)
    assert [f.value for f in flagged.flags] == ["fallback", "repetition", "low_confidence", "rotated", "downscaled"]
    assert flagged.needs_review()


def test_rotated_downscaled_and_blank_alone_are_no_reason_to_review():
    page = with_review(ocr_page(line("Upright now.", 0.99), rotation=270, downscaled=True), 0.85)
    assert page.flags == [PageFlag.ROTATED, PageFlag.DOWNSCALED] and not page.needs_review()
    blank = with_review(ocr_page(line("   ", 0.3)), 0.85)
    assert blank.flags == [PageFlag.BLANK] and blank.confidence is None and not blank.needs_review()


def test_a_failed_page_has_neither():
    failed = Page(number=1, width=0, height=0, status=PageStatus.FAILED, produced_by="fallback:rapidocr",
                  flags=[PageFlag.TRUNCATED], error=ErrorInfo(code="engine_failed", message="no"))
    page = with_review(failed, 0.85)
    assert page.flags == [] and page.confidence is None and not page.needs_review()


def test_derived_flags_are_recomputed_and_engine_flags_kept():
    """Assembly sets them again: a stale low_confidence goes when the bar
    changes, what the engine saw stays; a page already right is returned as is."""
    page = with_review(ocr_page(line("Read twice.", 0.8), flags=[PageFlag.TRUNCATED]), 0.85)
    assert page.flags == [PageFlag.TRUNCATED, PageFlag.LOW_CONFIDENCE]
    again = with_review(page, 0.5)
    assert again.flags == [PageFlag.TRUNCATED]
    assert with_review(again, 0.5) is again


def test_an_old_page_without_the_fields_loads_and_gets_them():
    stored = ocr_page(line("Checkpointed long ago.", 0.6)).model_dump(mode="json")
    del stored["confidence"], stored["flags"]
    page = Page.model_validate(stored)
    assert page.confidence is None and page.flags == []
    assert with_review(page, 0.85).flags == [PageFlag.LOW_CONFIDENCE]


def test_through_the_cli_a_page_rendered_below_the_asked_dpi_is_flagged_downscaled(tmp_path):
    """``limits.max_render_pixels`` under what an A4 page at 200 dpi needs
    (3.9 M pixels): the page is rendered lower and says so; the fake engine
    reads every line at confidence 1.0."""
    scan = rasterize(english_report(tmp_path, pages=3), 100, tmp_path / "scan.pdf").pdf_path
    config = tmp_path / "small.yaml"
    config.write_text("limits:\n  max_render_pixels: 2000000\n")
    flags = {}
    for name, extra in (("small", ["--config", config]), ("default", [])):
        proc = cli("parse", scan, "-o", tmp_path / name, "--format", "json", "-q", "--engine", "fake",
                   "--no-regions", "--ocr", "force", "--dpi", "200", "--pages", "1", *extra)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads((tmp_path / name / "scan.json").read_text(encoding="utf-8"))
        (page,) = doc["pages"]
        assert page["confidence"] == 1.0 and doc["review_pages"] == []
        flags[name] = (page["flags"], page["downscaled"], page["render_dpi"] < 200)
    assert flags == {"small": (["downscaled"], True, True), "default": ([], False, False)}
