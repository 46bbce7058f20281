"""Build ``longdoc/export/data/glyphless.ttf``: the invisible font of the
searchable PDF's text layer (run once; the file is committed).

The font has one glyph (GID 1, advance 500/1000 em) besides .notdef: a
rectangle from the baseline to 1 em, which the text layer never paints (it
is written in render mode 3, invisible) but which gives every character a
box, so viewers highlight a selection over the line it belongs to.
The PDF writer embeds it as a CIDFontType2 with Identity-H encoding, a
CIDToGIDMap sending every CID to GID 1 and a ToUnicode CMap sending every
CID to the same Unicode code point, so any character of the Basic
Multilingual Plane can be written (as its code point), takes the same
width, draws nothing, and copies out as itself. This is the trick
Tesseract's and OCRmyPDF's text layers use. The font is our own, made with
fontTools (MIT; the test extra's fpdf2 brings it).

    .venv/bin/python scripts/make_glyphless_font.py
"""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen

OUT = Path(__file__).resolve().parents[1] / "longdoc" / "export" / "data" / "glyphless.ttf"


def build() -> bytes:
    fb = FontBuilder(1000, isTTF=True)
    names = [".notdef", "blank"]
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({0x20: "blank"})
    pen = TTGlyphPen(None)
    pen.moveTo((0, 0))
    pen.lineTo((0, 1000))
    pen.lineTo((500, 1000))
    pen.lineTo((500, 0))
    pen.closePath()
    box = pen.glyph()
    fb.setupGlyf({".notdef": box, "blank": box})
    fb.setupHorizontalMetrics({".notdef": (500, 0), "blank": (500, 0)})
    fb.setupHorizontalHeader(ascent=1000, descent=0)
    fb.setupNameTable({"familyName": "LongdocGlyphless", "styleName": "Regular",
                       "psName": "LongdocGlyphless-Regular", "version": "Version 1.0",
                       "copyright": "longdoc authors, Apache-2.0"})
    fb.setupOS2(sTypoAscender=1000, sTypoDescender=0, usWinAscent=1000, usWinDescent=0, fsType=0)
    fb.setupPost()
    fb.setupHead(unitsPerEm=1000)
    out = BytesIO()
    fb.save(out)
    return out.getvalue()


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(build())
    print(f"{OUT} ({OUT.stat().st_size} bytes)")
