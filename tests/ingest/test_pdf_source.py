from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pypdfium2 as pdfium
import pytest

from longdoc.errors import PageRenderFailed
from longdoc.ingest.pdf import PdfSource
from longdoc.ingest.source import DocumentSource
from tests.ingest.asserts import assert_user_error
from tests.ingest.files import pdf_claiming_pages, raw_pdf, text_pdf


@pytest.fixture
def two_pages(tmp_path):
    return text_pdf(tmp_path / "two.pdf", [
        {
            "size": (300, 400),
            "texts": [(30, 50, "Top line here", 20), (30, 370, "Bottom line", 10)],
        },
        {"size": (500, 200), "texts": [(40, 100, "Second page", 12)]},
    ])


def test_facts_of_a_pdf(two_pages) -> None:
    with PdfSource(two_pages) as source:
        assert isinstance(source, DocumentSource)
        assert source.media_type == "application/pdf"
        assert source.name == "two.pdf"
        assert source.page_count == 2
        assert source.sha256 == hashlib.sha256(two_pages.read_bytes()).hexdigest()
        assert source.page_size(1) == pytest.approx((300, 400))
        assert source.page_size(2) == pytest.approx((500, 200))


def test_render_gives_rgb_at_the_requested_dpi(two_pages) -> None:
    with PdfSource(two_pages) as source:
        rendered = source.render(1, 144)
    assert rendered.image.mode == "RGB"
    assert rendered.dpi == 144
    assert rendered.image.size == (600, 800)
    pixels = np.asarray(rendered.image)
    assert pixels.min() < 100  # the text was drawn
    assert (pixels[0:40] == 255).all()  # the white margin above it


def test_render_over_the_pixel_limit_uses_the_largest_dpi_that_fits(two_pages) -> None:
    with PdfSource(two_pages, max_pixels=100_000) as source:
        rendered = source.render(1, 300)  # 1250 x 1667 px asked
    width, height = rendered.image.size
    assert width * height <= 100_000
    assert width * height > 0.97 * 100_000
    assert rendered.dpi < 300
    assert width == pytest.approx(300 * rendered.dpi / 72, abs=1)


def test_each_render_returns_an_image_the_caller_owns(two_pages) -> None:
    with PdfSource(two_pages) as source:
        first = source.render(1, 72)
        first.image.paste((255, 0, 0), (0, 0, 300, 400))
        second = source.render(1, 72)
    assert np.asarray(second.image).min() < 100
    assert second.image.getpixel((0, 0)) == (255, 255, 255)


def test_text_layer_has_the_exact_text_in_top_left_coordinates(two_pages) -> None:
    with PdfSource(two_pages) as source:
        lines = source.text_layer(1)
    assert [line.text for line in lines] == ["Top line here", "Bottom line"]
    top, bottom = lines
    assert all(line.page == 1 and line.confidence == 1.0 for line in lines)
    # baseline at y=50 from the top: the box straddles it, near the top
    assert 25 < top.bbox.y0 < 50 < top.bbox.y1 < 60
    assert top.bbox.x0 == pytest.approx(30, abs=1)
    assert 350 < bottom.bbox.y0 < 370 < bottom.bbox.y1 < 380
    assert top.bbox.width > bottom.bbox.width


def test_text_layer_of_a_page_without_text_is_empty(tmp_path) -> None:
    path = text_pdf(tmp_path / "blank.pdf", [{"texts": []}])
    with PdfSource(path) as source:
        assert source.text_layer(1) == []


@pytest.mark.parametrize(
    "text",
    ["Grüße aus Köln – Straße", "你好世界，长文档不用空格", "Ελληνικά και русский"],
)
def test_text_layer_keeps_non_latin_text(tmp_path, text: str) -> None:
    path = text_pdf(tmp_path / "uni.pdf", [{"texts": [(30, 60, text, 14)]}])
    with PdfSource(path) as source:
        assert [line.text for line in source.text_layer(1)] == [text]


def test_columns_on_one_baseline_become_separate_segments(tmp_path) -> None:
    texts = [(30, 60, "left column", 10), (320, 60, "right column", 10)]
    path = text_pdf(tmp_path / "cols.pdf", [{"texts": texts}])
    with PdfSource(path) as source:
        lines = source.text_layer(1)
    assert [line.text for line in lines] == ["left column", "right column"]
    assert lines[0].bbox.x1 < 320 <= lines[1].bbox.x0 + 1


def _rotated_copy(src, dst, rotation: int) -> None:
    document = pdfium.PdfDocument(src)
    page = document[0]
    page.set_rotation(rotation)
    page.set_cropbox(10, 20, 290, 390)  # an offset crop box too
    page.close()
    document.save(dst)
    document.close()


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_text_boxes_sit_on_the_rendered_glyphs_of_rotated_pages(
    two_pages, tmp_path, rotation: int
) -> None:
    path = tmp_path / f"rot{rotation}.pdf"
    _rotated_copy(two_pages, path, rotation)
    with PdfSource(path) as source:
        width, height = source.page_size(1)
        lines = source.text_layer(1)
        image = source.render(1, 72).image
    expected = (280, 370) if rotation in (0, 180) else (370, 280)
    assert (width, height) == pytest.approx(expected)
    assert image.size == expected
    ink = np.asarray(image.convert("L")) < 128
    inside = np.zeros_like(ink)
    for line in lines:
        b = line.bbox
        assert 0 <= b.x0 < b.x1 <= width and 0 <= b.y0 < b.y1 <= height
        inside[int(b.y0):int(np.ceil(b.y1)) + 1, int(b.x0):int(np.ceil(b.x1)) + 1] = True
    assert sorted(line.text for line in lines) == ["Bottom line", "Top line here"]
    assert ink.sum() > 100
    assert (ink & ~inside).sum() == 0  # every dark pixel lies in a text box


def test_text_outside_the_crop_box_is_dropped(two_pages, tmp_path) -> None:
    document = pdfium.PdfDocument(two_pages)
    page = document[0]
    page.set_cropbox(0, 0, 300, 200)  # keep the bottom half: "Bottom line" only
    page.close()
    document.save(tmp_path / "cropped.pdf")
    document.close()
    with PdfSource(tmp_path / "cropped.pdf") as source:
        assert [line.text for line in source.text_layer(1)] == ["Bottom line"]


def test_a_huge_page_renders_within_the_pixel_limit(tmp_path) -> None:
    path = pdf_claiming_pages(tmp_path / "huge.pdf", 1, mediabox="0 0 14400 14400")
    with PdfSource(path, max_pixels=1_000_000) as source:
        rendered = source.render(1, 300)
    assert rendered.image.width * rendered.image.height <= 1_000_000
    assert rendered.dpi == pytest.approx(72 * 1000 / 14400, rel=0.01)
    assert rendered.downscaled


def test_a_page_within_the_pixel_limit_is_not_downscaled(two_pages) -> None:
    with PdfSource(two_pages, max_pixels=1_000_000) as source:
        rendered = source.render(1, 150)
    assert rendered.dpi == 150 and not rendered.downscaled


def test_a_page_pdfium_cannot_load_fails_alone(tmp_path) -> None:
    path = raw_pdf(tmp_path / "bad_kid.pdf", [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 9 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
    ])
    with PdfSource(path) as source:
        assert source.page_count == 2
        assert source.render(1, 72).image.size == (200, 200)
        with pytest.raises(PageRenderFailed) as info:
            source.render(2, 72)
        assert_user_error(info.value, PageRenderFailed, "page_render_failed")
        assert info.value.context["page"] == 2
        with pytest.raises(PageRenderFailed):
            source.text_layer(2)


def test_concurrent_renders_from_threads_agree(two_pages) -> None:
    with PdfSource(two_pages) as source:
        reference = np.asarray(source.render(1, 100).image)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: np.asarray(source.render(1, 100).image), range(8)))
    assert all(np.array_equal(reference, result) for result in results)


def test_misuse_raises(two_pages) -> None:
    source = PdfSource(two_pages)
    with pytest.raises(ValueError):
        source.render(3, 72)
    with pytest.raises(ValueError):
        source.page_size(0)
    with pytest.raises(ValueError):
        source.render(1, 0)
    source.close()
    source.close()  # idempotent
    with pytest.raises(ValueError):
        source.render(1, 72)
