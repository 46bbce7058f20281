"""Builders for test inputs, good and hostile, written into a folder.

Nothing here is a fake: each function writes a real file the way a user's
tool (or an attacker) would, so the ingest code under test reads it from disk.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from fpdf import FPDF
from PIL import Image

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")


def text_pdf(path: Path, pages: list[dict]) -> Path:
    """A PDF with one page per dict: ``size`` (w, h) in points and ``texts``,
    a list of (x, baseline_y, text, font_size) in points from the top-left."""
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    unicode_font = False
    for spec in pages:
        pdf.add_page(format=spec.get("size", (612, 792)))
        for x, y, text, size in spec.get("texts", []):
            if text.isascii():
                pdf.set_font("helvetica", size=size)
            else:
                if not unicode_font:
                    pdf.add_font("uni", fname=str(DEJAVU))
                    pdf.add_font("cjk", fname=str(CJK_FONT))
                    unicode_font = True
                pdf.set_font("cjk" if _has_cjk(text) else "uni", size=size)
            pdf.text(x, y, text)
    pdf.output(str(path))
    return path


def _has_cjk(text: str) -> bool:
    return any("\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" for ch in text)


def encrypted_pdf(path: Path, *, user_password: str | None) -> Path:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.text(20, 20, "secret")
    pdf.set_encryption(owner_password="owner", user_password=user_password)
    pdf.output(str(path))
    return path


def raw_pdf(path: Path, objects: list[bytes]) -> Path:
    """A hand-assembled PDF: ``objects[i]`` is the body of object i+1, object
    1 is the catalog; a correct xref table and trailer are added."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


def pdf_claiming_pages(path: Path, count: int, *, mediabox: str = "0 0 612 792") -> Path:
    """One real page under a page tree whose /Count claims ``count`` pages."""
    return raw_pdf(path, [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count %d >>" % count,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [%s] >>" % mediabox.encode(),
    ])


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_claiming_size(path: Path, width: int, height: int) -> Path:
    """A tiny PNG whose header claims ``width`` x ``height`` RGB pixels (a
    decompression bomb as far as its header is concerned)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + _png_chunk(b"IEND", b"")
    )
    return path


def tiff_without_frames(path: Path) -> Path:
    """A TIFF header whose first-IFD offset is 0: no frames at all."""
    path.write_bytes(b"II*\x00" + struct.pack("<I", 0) + b"\x00" * 16)
    return path


def tiff_with_ifd_loop(path: Path) -> Path:
    """A one-frame TIFF whose next-IFD pointer points back at itself."""
    Image.new("L", (16, 16), 128).save(path, "TIFF")
    data = bytearray(path.read_bytes())
    ifd = struct.unpack("<I", data[4:8])[0]
    entries = struct.unpack("<H", data[ifd:ifd + 2])[0]
    next_pointer = ifd + 2 + 12 * entries
    data[next_pointer:next_pointer + 4] = struct.pack("<I", ifd)
    path.write_bytes(bytes(data))
    return path


def noise_image(size: tuple[int, int], mode: str = "RGB") -> Image.Image:
    """Incompressible content, so truncating the file cuts real pixel data."""
    return Image.effect_noise(size, 60).convert(mode)


def truncated(path: Path, keep: float) -> Path:
    """Cut ``path`` down to the first ``keep`` fraction of its bytes."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


# --- crafted documents: each costs a reader memory or time out of proportion to its size ---

#: sentences for the good pages around a hostile one (enough text for the text-layer judge)
GOOD_PAGE_LINES = (
    "This page is a plain page of a longer report about a harbour town.",
    "The committee met on a Tuesday and read the minutes of the last meeting.",
    "Nobody objected, and the chair moved on to the budget for the coming year.",
    "The ferry timetable changes in spring, when the evening crossing returns.",
    "Repairs to the north pier are planned for the quiet weeks after the festival.",
    "Questions from the public concerned parking, the library and the market.",
)


def _text_stream(page: int) -> bytes:
    """A page's content stream: GOOD_PAGE_LINES in Helvetica, tagged with the page number."""
    ops = [b"BT /F1 12 Tf 72 720 Td 16 TL"]
    for text in (f"Good page {page} of the crafted document.", *GOOD_PAGE_LINES):
        ops.append(b"(%s) Tj T*" % text.encode("ascii"))
    ops.append(b"ET")
    return b"\n".join(ops)


def _stream(data: bytes, *, flate: bool = False) -> bytes:
    if flate:
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def pdf_with_pages(path: Path, contents: list[bytes], *, count: int | None = None) -> Path:
    """A PDF whose page i has the content stream object ``contents[i]``
    (a full stream object, see :func:`_stream`), Helvetica as /F1, and a
    page tree claiming ``count`` pages (default: as many as there are)."""
    n = len(contents)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n if count is None else count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, content in enumerate(contents):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i))
        objects.append(content)
    return raw_pdf(path, objects)


def good_page(page: int) -> bytes:
    return _stream(_text_stream(page))


def stream_bomb_page(mib: int) -> bytes:
    """A content stream that inflates to ``mib`` MiB of spaces (about
    1/1000 of that compressed), then one line of text."""
    packer = zlib.compressobj(9)
    block = b" " * (1 << 20)
    parts = [packer.compress(block) for _ in range(mib)]
    parts.append(packer.compress(b"BT /F1 12 Tf 72 720 Td (inflated) Tj ET") + packer.flush())
    return _stream(b"".join(parts), flate=True)


def slow_page(rects: int) -> bytes:
    """A small content stream of ``rects`` tiny filled rectangles: seconds of
    parsing for a reader (pdfium: ~1 s per million here)."""
    ops = b"".join(b"%d %d 3 3 re f\n" % ((i * 37) % 600, (i * 91) % 780) for i in range(rects))
    return _stream(zlib.compress(ops), flate=True)
