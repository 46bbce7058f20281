from __future__ import annotations

import io
import zipfile

import pytest
from PIL import Image

from longdoc.errors import EmptyDocument, UnsupportedType
from longdoc.ingest.sniff import HEAD_BYTES, SUPPORTED_MEDIA_TYPES, sniff_media_type
from tests.ingest.asserts import assert_user_error
from tests.ingest.files import text_pdf


def _image_bytes(fmt: str, **save_args) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, fmt, **save_args)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "media_type"),
    [
        ("PNG", "image/png"),
        ("JPEG", "image/jpeg"),
        ("TIFF", "image/tiff"),
        ("BMP", "image/bmp"),
        ("WEBP", "image/webp"),
    ],
)
def test_images_are_recognized_by_content(fmt: str, media_type: str) -> None:
    assert sniff_media_type(_image_bytes(fmt)[:HEAD_BYTES]) == media_type


def test_big_endian_tiff_is_recognized() -> None:
    assert sniff_media_type(b"MM\x00*\x00\x00\x00\x08") == "image/tiff"


def test_pdf_is_recognized_even_after_leading_junk(tmp_path) -> None:
    pdf = text_pdf(tmp_path / "a.pdf", [{"texts": [(20, 40, "hi", 12)]}]).read_bytes()
    assert sniff_media_type(pdf[:HEAD_BYTES]) == "application/pdf"
    assert sniff_media_type(b"\r\n" + b"x" * 500 + pdf[:HEAD_BYTES]) == "application/pdf"


def test_every_supported_type_is_tested() -> None:
    assert set(SUPPORTED_MEDIA_TYPES) == {
        "application/pdf", "image/png", "image/jpeg", "image/tiff", "image/bmp", "image/webp",
    }


def test_empty_input_is_an_empty_document() -> None:
    with pytest.raises(EmptyDocument) as info:
        sniff_media_type(b"")
    assert_user_error(info.value, EmptyDocument, "empty_document")


def _docx_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("head", "named"),
    [
        (_docx_bytes(), "DOCX"),
        (b"<!DOCTYPE html><html><body>hi</body></html>", "HTML"),
        (b"Quarterly report\nRevenue grew by 4%.\n", "plain text"),
        ("Grüße, 你好\n".encode(), "plain text"),
        (b"BMW annual report 2024", "plain text"),  # starts with "BM" but is no bitmap
        (_image_bytes("GIF"), "GIF"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, "Office"),
        (bytes(range(256)) * 4, "binary"),
    ],
)
def test_unsupported_content_says_what_it_looks_like(head: bytes, named: str) -> None:
    with pytest.raises(UnsupportedType) as info:
        sniff_media_type(head)
    assert_user_error(info.value, UnsupportedType, "unsupported_type")
    assert named in info.value.message


def test_the_file_name_plays_no_part() -> None:
    # sniff_media_type only ever sees bytes; an HTML page "named" .pdf is HTML.
    with pytest.raises(UnsupportedType):
        sniff_media_type(b"<html><title>report.pdf</title></html>")
