"""Tell a document's type from its first bytes (never from its name).

:func:`sniff_media_type` looks at the magic bytes at the start of a file and
answers one of :data:`SUPPORTED_MEDIA_TYPES`. Anything else raises
:class:`~longdoc.errors.UnsupportedType`, naming what the bytes look like
when that is recognizable (a ZIP/Office file, HTML, plain text, GIF…), so the
user learns what they actually sent.

A 0-byte file raises :class:`~longdoc.errors.EmptyDocument` (it has no pages;
there is nothing "corrupt" about it). Callers pass at least
:data:`HEAD_BYTES` bytes from the start of the file when the file is that long.
"""

from __future__ import annotations

from longdoc.errors import EmptyDocument, UnsupportedType

#: How many leading bytes callers should read for :func:`sniff_media_type`.
HEAD_BYTES = 4096

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
BMP = "image/bmp"
WEBP = "image/webp"

SUPPORTED_MEDIA_TYPES: tuple[str, ...] = (PDF, PNG, JPEG, TIFF, BMP, WEBP)

#: PDF readers (pdfium included) accept a header preceded by up to 1 KiB of junk.
_PDF_HEADER_WINDOW = 1024

#: Sizes of the BMP info header variants (BITMAPCOREHEADER … BITMAPV5HEADER).
_BMP_DIB_HEADER_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})

_TIFF_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF


def sniff_media_type(head: bytes) -> str:
    """Media type of a document from its leading bytes.

    ``head``: the first bytes of the file (ideally :data:`HEAD_BYTES` of them).
    Returns one of :data:`SUPPORTED_MEDIA_TYPES`.
    Raises :class:`EmptyDocument` for an empty input and
    :class:`UnsupportedType` for anything else.
    """
    if not head:
        raise EmptyDocument("The file is empty (0 bytes).")
    media_type = _match_supported(head)
    if media_type is not None:
        return media_type
    looks_like = describe_unsupported(head)
    raise UnsupportedType(
        f"Unsupported file type: the content looks like {looks_like}.",
        looks_like=looks_like,
    )


def _match_supported(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith(_TIFF_MAGICS):
        return TIFF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if _is_bmp(head):
        return BMP
    if b"%PDF-" in head[: _PDF_HEADER_WINDOW + 5]:
        return PDF
    return None


def _is_bmp(head: bytes) -> bool:
    # "BM" alone is too weak (any text starting "BM..."): require a known
    # DIB header size at offset 14.
    if len(head) < 18 or not head.startswith(b"BM"):
        return False
    return int.from_bytes(head[14:18], "little") in _BMP_DIB_HEADER_SIZES


# Signatures of common things people send by mistake: (prefix, description).
_KNOWN_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Microsoft Office file (DOC/XLS/PPT)"),
    (b"{\\rtf", "an RTF document"),
    (b"%!PS", "a PostScript file"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "a JPEG 2000 image"),
    (b"\xff\x4f\xff\x51", "a JPEG 2000 codestream"),
    (b"\x00\x00\x01\x00", "a Windows icon"),
    (b"8BPS", "a Photoshop document"),
    (b"AT&TFORM", "a DjVu document"),
)


def describe_unsupported(head: bytes) -> str:
    """A short human description of what unsupported bytes look like."""
    for prefix, description in _KNOWN_SIGNATURES:
        if head.startswith(prefix):
            return description
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _describe_zip(head)
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"heic", b"heix", b"mif1", b"msf1", b"avif"):
            return "a HEIC/AVIF image"
        return "an MP4/QuickTime media file"
    text = _as_text(head)
    if text is None:
        return "binary data of an unknown format"
    lowered = text.lstrip("\ufeff \t\r\n").lower()
    if lowered.startswith(("<!doctype html", "<html")) or "<html" in lowered[:512]:
        return "an HTML page"
    if lowered.startswith("<svg") or "<svg" in lowered[:512]:
        return "an SVG image"
    if lowered.startswith("<?xml") or lowered.startswith("<"):
        return "an XML document"
    if lowered.startswith(("{", "[")):
        return "JSON or other structured text"
    return "plain text"


def _describe_zip(head: bytes) -> str:
    if b"word/" in head:
        return "a ZIP archive (a Word DOCX document)"
    if b"xl/" in head:
        return "a ZIP archive (an Excel XLSX workbook)"
    if b"ppt/" in head:
        return "a ZIP archive (a PowerPoint PPTX presentation)"
    if b"application/epub+zip" in head:
        return "a ZIP archive (an EPUB e-book)"
    if b"application/vnd.oasis.opendocument" in head:
        return "a ZIP archive (an OpenDocument file)"
    if b"[Content_Types].xml" in head:
        return "a ZIP archive (an Office Open XML document, e.g. DOCX)"
    return "a ZIP archive"


def _as_text(head: bytes) -> str | None:
    """``head`` decoded as text when it plausibly is text, else None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = head.decode("utf-16", errors="replace")
    else:
        text = head.decode("utf-8", errors="replace")
    # The head may cut a multi-byte character in two at its end.
    text = text[:-3] + text[-3:].rstrip("\ufffd")
    if not text:
        return None
    good = sum((ch.isprintable() and ch != "\ufffd") or ch in "\t\r\n\f" for ch in text)
    return text if good / len(text) > 0.95 else None
