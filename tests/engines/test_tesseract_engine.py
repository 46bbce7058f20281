"""Tesseract engine: real OCR through the CLI; skipped where it is not installed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from longdoc.engines.base import PageImage
from longdoc.engines.paged import PageRecognizer
from longdoc.engines.tesseract import TesseractEngine, parse_tsv
from longdoc.errors import EngineUnavailable
from tests.engines.pages import cer, chinese_page, english_page, english_strip

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="`tesseract` is not on PATH (apt-get install tesseract-ocr tesseract-ocr-chi-sim)",
)


def text_of(rec) -> str:
    return "\n".join(line.text for line in rec.lines)


@pytest.fixture(scope="module")
def engine():
    if shutil.which("tesseract") is None:
        pytest.skip("`tesseract` is not on PATH (apt-get install tesseract-ocr tesseract-ocr-chi-sim)")
    with TesseractEngine(workers=2) as e:
        yield e


@needs_tesseract
def test_english_and_chinese_pages_in_order_with_boxes(engine):
    assert isinstance(engine, PageRecognizer)
    assert engine.version.startswith("tesseract-") and engine.version.endswith("/eng+chi_sim")
    english, chinese = english_page(1), chinese_page(2)
    strips = [english_strip(n) for n in (3, 4)]
    samples = [english, chinese, *strips]
    results = list(engine.recognize(s.image for s in samples))
    assert [r.page for r in results] == [1, 2, 3, 4]
    for rec, sample in zip(results, samples):
        assert rec.error is None, rec.error
        limit = 0.10 if sample is chinese else 0.01
        assert cer(text_of(rec), sample.text) <= limit, text_of(rec)
        assert all(0.0 <= line.confidence <= 1.0 and line.page == rec.page for line in rec.lines)
    for drawn in english.lines:
        line = min(results[0].lines, key=lambda l: Levenshtein.distance(l.text, drawn.text))
        assert abs(line.bbox.x0 - drawn.bbox.x0) <= 4.0 and abs(line.bbox.x1 - drawn.bbox.x1) <= 4.0
        assert abs(line.bbox.cy - drawn.bbox.cy) <= 4.0


@needs_tesseract
def test_input_is_pulled_lazily(engine):
    image = english_strip(5, n_lines=1).image
    pulled = 0

    def pages():
        nonlocal pulled
        for n in range(1, 7):
            pulled += 1
            yield PageImage(page=n, image=image.image, dpi=image.dpi, width_pt=image.width_pt, height_pt=image.height_pt)

    ahead = [pulled - i for i, _ in enumerate(engine.recognize(pages()))]
    assert len(ahead) == 6 and max(ahead) <= engine.max_in_flight


@needs_tesseract
def test_bad_image_fails_only_its_page(engine):
    good = english_strip(1)
    bad = PageImage(page=2, image=np.zeros((0, 5, 3), np.uint8), dpi=200, width_pt=1, height_pt=1)
    ok, failed = engine.recognize([good.image, bad])
    assert ok.error is None and cer(text_of(ok), good.text) <= 0.01
    assert failed.error is not None and failed.error.code == "engine_failed" and failed.error.page == 2


@needs_tesseract
def test_page_over_the_time_limit_fails_with_the_limit_named():
    good = english_strip(1)
    with TesseractEngine(workers=1, page_timeout_seconds=0.001) as engine:
        (rec,) = engine.recognize([good.image])
    assert rec.error is not None and rec.error.code == "engine_failed"
    assert "0.001 s" in rec.error.message


@needs_tesseract
def test_missing_language_names_the_package_to_install():
    engine = TesseractEngine(workers=1, languages="eng+zzz_nope")
    with pytest.raises(EngineUnavailable) as info:
        engine.load()
    assert "zzz_nope" in info.value.message
    assert "apt-get install tesseract-ocr tesseract-ocr-zzz-nope" in info.value.hint


def test_missing_program_names_the_debian_packages():
    engine = TesseractEngine(workers=1, binary="longdoc-no-such-tesseract")
    with pytest.raises(EngineUnavailable) as info:
        engine.load()
    assert "apt-get install tesseract-ocr tesseract-ocr-chi-sim" in info.value.hint
    assert info.value.code == "engine_unavailable"


def test_tsv_words_group_into_lines_and_chinese_joins_without_spaces():
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "4\t1\t1\t1\t1\t0\t100\t200\t300\t40\t-1\t",
        "5\t1\t1\t1\t1\t1\t100\t200\t100\t40\t90\tHello",
        "5\t1\t1\t1\t1\t2\t220\t205\t180\t35\t70\tworld",
        "5\t1\t1\t1\t2\t1\t100\t300\t40\t40\t80\t长",
        "5\t1\t1\t1\t2\t2\t140\t300\t40\t40\t60\t文",
        "5\t1\t1\t1\t2\t3\t180\t300\t40\t40\t95\t  ",
        "5\t1\t2\t1\t1\t1\t100\t400\t60\t40\t50\tPDF",
        "5\t1\t2\t1\t1\t2\t170\t400\t40\t40\t50\t文档",
    ]
    page = PageImage(page=3, image=np.zeros((1, 1, 3), np.uint8), dpi=144, width_pt=500, height_pt=500)
    lines = parse_tsv("\n".join([header, *rows]), page)
    assert [l.text for l in lines] == ["Hello world", "长文", "PDF 文档"]
    first = lines[0]
    assert (first.bbox.x0, first.bbox.y0, first.bbox.x1, first.bbox.y1) == (50.0, 100.0, 200.0, 120.0)
    assert first.confidence == pytest.approx(0.80)
    assert all(l.page == 3 for l in lines)
