"""open_document on good and hostile inputs: every bad input becomes its
typed error (class, code, hint); nothing crashes, hangs or balloons."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from longdoc.config import LimitSettings
from longdoc.errors import (
    CorruptFile,
    EmptyDocument,
    EncryptedPdf,
    ImageTooLarge,
    PageRenderFailed,
    TooManyPages,
    UnreadablePath,
    UnsupportedType,
    UploadTooLarge,
)
from longdoc.ingest.image import ImageSource
from longdoc.ingest.open import open_document
from longdoc.ingest.pdf import PdfSource
from tests.ingest.asserts import assert_user_error
from tests.ingest.files import (
    encrypted_pdf,
    noise_image,
    pdf_claiming_pages,
    png_claiming_size,
    raw_pdf,
    text_pdf,
    tiff_with_ifd_loop,
    tiff_without_frames,
    truncated,
)


def _open_fails(path, limits, error_class, code):
    with pytest.raises(error_class) as info:
        open_document(path, limits)
    assert_user_error(info.value, error_class, code)
    return info.value


def test_a_pdf_opens_as_a_pdf_source_whatever_its_name(tmp_path, limits) -> None:
    path = text_pdf(tmp_path / "scan.png", [{"texts": [(20, 40, "hello", 12)]}] * 3)
    with open_document(str(path), limits) as source:
        assert isinstance(source, PdfSource)
        assert source.page_count == 3


def test_an_image_opens_as_an_image_source_whatever_its_name(tmp_path, limits) -> None:
    path = tmp_path / "report.pdf"
    Image.new("RGB", (40, 30)).save(path, "PNG")
    with open_document(path, limits) as source:
        assert isinstance(source, ImageSource)
        assert source.media_type == "image/png"


# -- the path ----------------------------------------------------------------


def test_missing_path(tmp_path, limits) -> None:
    error = _open_fails(tmp_path / "nope.pdf", limits, UnreadablePath, "unreadable_path")
    assert "does not exist" in error.message


def test_directory(tmp_path, limits) -> None:
    error = _open_fails(tmp_path, limits, UnreadablePath, "unreadable_path")
    assert "directory" in error.message


def test_fifo_is_refused_without_blocking(tmp_path, limits) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _open_fails(fifo, limits, UnreadablePath, "unreadable_path")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_permission_denied(tmp_path, limits) -> None:
    path = text_pdf(tmp_path / "locked.pdf", [{"texts": []}])
    path.chmod(0)
    try:
        error = _open_fails(path, limits, UnreadablePath, "unreadable_path")
        assert "permission" in error.message
    finally:
        path.chmod(0o600)


# -- type and content --------------------------------------------------------


def test_zero_byte_file(tmp_path, limits) -> None:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    _open_fails(path, limits, EmptyDocument, "empty_document")


def test_docx_named_pdf(tmp_path, limits) -> None:
    path = tmp_path / "letter.pdf"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    error = _open_fails(path, limits, UnsupportedType, "unsupported_type")
    assert "DOCX" in error.message


def test_html_page(tmp_path, limits) -> None:
    path = tmp_path / "page.pdf"
    path.write_text("<!doctype html><html><body>Not a PDF</body></html>")
    assert "HTML" in _open_fails(path, limits, UnsupportedType, "unsupported_type").message


def test_random_bytes_behind_a_pdf_header(tmp_path, limits) -> None:
    path = tmp_path / "junk.pdf"
    path.write_bytes(b"%PDF-1.7\n" + os.urandom(20_000))
    _open_fails(path, limits, CorruptFile, "corrupt_file")


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.1])
def test_truncated_pdf(tmp_path, limits, keep) -> None:
    pages = [{"texts": [(20, 40, f"page {i}", 12)]} for i in range(5)]
    path = text_pdf(tmp_path / "cut.pdf", pages)
    truncated(path, keep)
    _open_fails(path, limits, CorruptFile, "corrupt_file")


def test_password_protected_pdf(tmp_path, limits) -> None:
    path = encrypted_pdf(tmp_path / "locked.pdf", user_password="letmein")
    error = _open_fails(path, limits, EncryptedPdf, "encrypted_pdf")
    assert "password" in error.message
    assert "decrypt" in error.hint


def test_owner_password_only_pdf_opens(tmp_path, limits) -> None:
    path = encrypted_pdf(tmp_path / "restricted.pdf", user_password=None)
    with open_document(path, limits) as source:
        assert [line.text for line in source.text_layer(1)] == ["secret"]


@pytest.mark.parametrize(
    "pages_object",
    [b"<< /Type /Pages /Kids [] /Count 0 >>", b"<< /Type /Pages /Kids [] >>"],
)
def test_pdf_without_pages(tmp_path, limits, pages_object) -> None:
    path = raw_pdf(tmp_path / "nopages.pdf", [b"<< /Type /Catalog /Pages 2 0 R >>", pages_object])
    _open_fails(path, limits, EmptyDocument, "empty_document")


def test_pdf_claiming_a_billion_pages_opens_with_its_real_page(tmp_path, limits) -> None:
    path = pdf_claiming_pages(tmp_path / "liar.pdf", 10**9)
    with open_document(path, limits) as source:
        assert source.page_count == 1
        assert source.render(1, 72).image.size == (612, 792)


def test_pdf_claiming_too_many_pages_is_refused_with_both_numbers(tmp_path) -> None:
    path = pdf_claiming_pages(tmp_path / "liar.pdf", 999_999)
    error = _open_fails(path, LimitSettings(max_pages=2000), TooManyPages, "too_many_pages")
    assert "999999" in error.message and "2000" in error.message


def test_pages_a_pdf_only_claims_fail_one_by_one(tmp_path) -> None:
    path = pdf_claiming_pages(tmp_path / "liar.pdf", 5000)
    with open_document(path, LimitSettings(max_pages=10_000)) as source:
        assert source.page_count == 5000
        assert source.render(1, 72).image.size == (612, 792)
        with pytest.raises(PageRenderFailed):
            source.render(4321, 72)


def test_too_many_pdf_pages(tmp_path) -> None:
    path = text_pdf(tmp_path / "three.pdf", [{"texts": []}] * 3)
    error = _open_fails(path, LimitSettings(max_pages=2), TooManyPages, "too_many_pages")
    assert "3 pages" in error.message and "limit is 2" in error.message


def test_too_many_tiff_frames_are_not_all_counted(tmp_path) -> None:
    frames = [Image.new("1", (8, 8)) for _ in range(6)]
    path = tmp_path / "many.tif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    error = _open_fails(path, LimitSettings(max_pages=3), TooManyPages, "too_many_pages")
    assert "more than 3" in error.message


def test_upload_too_large(tmp_path) -> None:
    path = tmp_path / "big.pdf"
    path.write_bytes(b"%PDF-1.7\n" + b"0" * (1024 * 1024 + 10))
    error = _open_fails(path, LimitSettings(max_upload_mb=1), UploadTooLarge, "upload_too_large")
    assert "1 MB" in error.message


# -- images ------------------------------------------------------------------


def test_png_header_claiming_ten_billion_pixels(tmp_path, limits) -> None:
    path = png_claiming_size(tmp_path / "bomb.png", 100_000, 100_000)
    _open_fails(path, limits, ImageTooLarge, "image_too_large")


def test_png_over_the_configured_pixel_limit_is_refused_before_decoding(tmp_path) -> None:
    # 9000x9000 = 81 Mpx: under Pillow's own bomb threshold, over ours. The
    # file holds almost no pixel data, so only the header check can refuse it.
    path = png_claiming_size(tmp_path / "big.png", 9000, 9000)
    limits = LimitSettings(max_pixels=60_000_000)
    error = _open_fails(path, limits, ImageTooLarge, "image_too_large")
    assert "9000x9000" in error.message


def test_tiff_frame_over_the_pixel_limit(tmp_path) -> None:
    frames = [Image.new("1", (10, 10)), Image.new("1", (400, 400))]
    path = tmp_path / "mixed.tif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    error = _open_fails(path, LimitSettings(max_pixels=100_000), ImageTooLarge, "image_too_large")
    assert "page 2" in error.message


@pytest.mark.parametrize(
    ("fmt", "ext"), [("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp"), ("BMP", "bmp"), ("TIFF", "tif")]
)
def test_truncated_images(tmp_path, limits, fmt, ext) -> None:
    path = tmp_path / f"cut.{ext}"
    noise_image((300, 300)).save(path, fmt)
    truncated(path, 0.6)
    _open_fails(path, limits, CorruptFile, "corrupt_file")


def test_tiff_without_frames(tmp_path, limits) -> None:
    _open_fails(tiff_without_frames(tmp_path / "none.tif"), limits, CorruptFile, "corrupt_file")


def test_tiff_whose_frames_loop_has_one_page(tmp_path, limits) -> None:
    with open_document(tiff_with_ifd_loop(tmp_path / "loop.tif"), limits) as source:
        assert source.page_count == 1
        assert source.render(1, 72).image.size == (16, 16)


def test_image_bytes_behind_a_valid_signature(tmp_path, limits) -> None:
    path = tmp_path / "fake.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(5000))
    _open_fails(path, limits, CorruptFile, "corrupt_file")


def test_unreadable_later_tiff_frame_fails_only_its_page(tmp_path, limits) -> None:
    path = tmp_path / "partly.tif"
    frames = [Image.new("L", (64, 64), 0), noise_image((256, 256), "L")]
    frames[0].save(path, save_all=True, append_images=frames[1:])
    with Image.open(path) as image:
        image.seek(1)  # both frame headers precede this frame's pixel data
        strip_offset = image.tag_v2[273][0]
    truncated(path, (strip_offset + 100) / path.stat().st_size)  # cut inside it
    with open_document(path, limits) as source:
        assert source.page_count == 2
        assert source.render(1, 72).image.size == (64, 64)
        with pytest.raises(PageRenderFailed) as info:
            source.render(2, 72)
    assert_user_error(info.value, PageRenderFailed, "page_render_failed")


def test_permission_problems_are_unreadable_paths(tmp_path, limits, monkeypatch) -> None:
    # Running as root, chmod cannot take read access away; fake the refusal.
    path = text_pdf(tmp_path / "locked.pdf", [{"texts": []}])
    real_open = Path.open

    def refuse(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    error = _open_fails(path, limits, UnreadablePath, "unreadable_path")
    assert "permission denied" in error.message
