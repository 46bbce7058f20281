"""The invisible text layer of the searchable PDF: what it says and where.

A recognized page becomes, in the PDF's own user space, one text object per
line in reading order (``3 Tr``: neither filled nor stroked), written with
the glyph-less font (``data/glyphless.ttf``: one empty glyph, 0.5 em wide,
1 em tall) as 2-byte codes equal to the characters' code points, so the
ToUnicode map gives back the text on copy and search. Each line's text
matrix stretches its string over the line's box, along the line's baseline,
however the page is turned: the result's boxes (points, top-left origin,
on the page as read upright) go through the page's turn back to how it is
displayed, then through ``/Rotate`` and the crop box into user space.

Pure functions over plain numbers: nothing here opens a document.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

FONT_FILE = Path(__file__).with_name("data") / "glyphless.ttf"
FONT_NAME = "LongdocGlyphless"
GLYPH_WIDTH = 0.5  # em
NOT_IN_BMP = 0xFFFD

Matrix = tuple[float, float, float, float, float, float]   # PDF order: a b c d e f


def multiply(m: Matrix, n: Matrix) -> Matrix:
    """``m`` then ``n`` (row vectors, as PDF's ``cm``)."""
    a, b, c, d, e, f = m
    A, B, C, D, E, F = n
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return x * a + y * c + e, x * b + y * d + f


def unturn(degrees: int, width: float, height: float) -> Matrix:
    """Top-left-origin coordinates on a page turned ``degrees`` clockwise
    (of size ``width`` × ``height`` after the turn) back to the page before
    it was turned."""
    turn = degrees % 360
    if turn == 0:
        return (1, 0, 0, 1, 0, 0)
    if turn == 90:       # turned: (x', y') = (H0 - y, x) with H0 = width
        return (0, -1, 1, 0, 0, width)
    if turn == 180:
        return (-1, 0, 0, -1, width, height)
    if turn == 270:      # turned: (x', y') = (y, W0 - x) with W0 = height
        return (0, 1, -1, 0, height, 0)
    raise ValueError(f"rotation must be a multiple of 90, not {degrees}")


@dataclass(frozen=True)
class PageGeometry:
    """Where a displayed page sits in PDF user space: its crop box
    ``(x0, y0, x1, y1)`` and its ``/Rotate`` (clockwise degrees)."""

    crop: tuple[float, float, float, float]
    rotate: int = 0

    @property
    def displayed_size(self) -> tuple[float, float]:
        width, height = self.crop[2] - self.crop[0], self.crop[3] - self.crop[1]
        return (height, width) if self.rotate % 180 else (width, height)

    def from_result(self, rotation: int) -> Matrix:
        """The matrix from a result page's coordinates (points, top-left
        origin, upright after the result's own ``rotation``) to user space."""
        dw, dh = self.displayed_size
        upright = (dh, dw) if rotation % 180 else (dw, dh)
        to_displayed = unturn(rotation, *upright)
        to_unrotated = unturn(self.rotate, dw, dh)
        x0, y0, x1, y1 = self.crop
        to_user = (1, 0, 0, -1, x0, y1)     # y down from the crop box's top → PDF's y up
        return multiply(multiply(to_displayed, to_unrotated), to_user)


def encode(text: str) -> bytes:
    """``text`` as the layer's 2-byte codes (a character outside the Basic
    Multilingual Plane, or a lone surrogate, becomes U+FFFD)."""
    out = bytearray()
    for ch in unicodedata.normalize("NFC", text):
        code = ord(ch)
        if code > 0xFFFF or 0xD800 <= code <= 0xDFFF:
            code = NOT_IN_BMP
        out += code.to_bytes(2, "big")
    return bytes(out)


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def line_text(text: str) -> str:
    """What a line writes: its text with a trailing space, so extractors
    that ignore positions do not join it to the next line's first word
    (none after CJK, which joins across lines without one)."""
    text = " ".join(text.split())
    if not text or _is_cjk(text[-1]):
        return text
    return text + " "


def line_operators(text: str, box: tuple[float, float, float, float], to_user: Matrix, font: str) -> bytes:
    """The text object of one line: ``text`` stretched over ``box`` (result
    coordinates), baseline on the box's bottom edge, in user space."""
    written = line_text(text)
    if not written:
        return b""
    x0, y0, x1, y1 = box
    ox, oy = apply(to_user, x0, y1)           # baseline start
    ex, ey = apply(to_user, x1, y1)           # baseline end
    tx, ty = apply(to_user, x0, y0)           # top of the line above its start
    advance = GLYPH_WIDTH * len(written)
    a, b = (ex - ox) / advance, (ey - oy) / advance
    c, d = tx - ox, ty - oy
    if abs(a * d - b * c) < 1e-9:             # an empty box: nothing to place
        return b""
    tm = " ".join(f"{v:.4f}".rstrip("0").rstrip(".") or "0" for v in (a, b, c, d, ox, oy))
    return f"BT 3 Tr /{font} 1 Tf {tm} Tm <".encode() + encode(written).hex().encode() + b"> Tj ET\n"


def to_unicode_cmap() -> bytes:
    """A ToUnicode CMap sending every 2-byte code to the same code point."""
    ranges = "\n".join(f"<{hi:02X}00> <{hi:02X}FF> <{hi:02X}00>" for hi in range(256) if not 0xD8 <= hi <= 0xDF)
    count = 256 - 8
    head = ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n")
    body = ""
    for start in range(0, count, 100):            # at most 100 entries per block
        chunk = ranges.split("\n")[start:start + 100]
        body += f"{len(chunk)} beginbfrange\n" + "\n".join(chunk) + "\nendbfrange\n"
    tail = "endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    return (head + body + tail).encode()
