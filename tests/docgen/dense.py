"""Dense scanned pages with exact truth: the speed bench's set (``bench/vs_ocrmypdf.py``).

- English: the licence texts Debian ships in ``/usr/share/common-licenses``
  (GPL-3, Apache-2.0, MPL-2.0…), set in DejaVu Sans 10 pt on A4;
- Chinese: generated manual-style prose (:class:`~tests.docgen.prose.ChineseProse`),
  WenQuanYi Micro Hei 11 pt;
- :func:`scan`: every page rendered at 200 dpi in grey, turned by a random
  angle within ±0.6°, stored as JPEG (quality 85) in an image-only PDF.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pypdfium2 as pdfium
from fpdf import FPDF
from PIL import Image

from tests.docgen.prose import ChineseProse

LICENCES = ("GPL-3", "Apache-2.0", "MPL-2.0", "GPL-2", "LGPL-2.1", "Artistic", "GFDL-1.3", "BSD")
SANS = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
CJK = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
A4 = (595.28, 841.89)
MARGIN = 56.0
DPI = 200
MAX_SKEW = 0.6


def english_paragraphs() -> list[str]:
    paragraphs: list[str] = []
    for name in LICENCES:
        path = Path("/usr/share/common-licenses") / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            paragraphs += [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return paragraphs


def chinese_paragraphs(n: int) -> list[str]:
    prose = ChineseProse(seed=7)
    return ["".join(prose.sentences(6)) for _ in range(n)]


def wrap(pdf: FPDF, paragraphs: list[str], width: float, cjk: bool) -> list[str]:
    """Lines as set, a blank line between paragraphs."""
    lines: list[str] = []
    for paragraph in paragraphs:
        units = list(paragraph) if cjk else paragraph.split()
        line = ""
        for unit in units:
            candidate = line + unit if cjk or not line else f"{line} {unit}"
            if line and pdf.get_string_width(candidate) > width:
                lines.append(line)
                line = unit
            else:
                line = candidate
        if line:
            lines += [line, ""]
    return lines


def typeset(out: Path, english: int, chinese: int) -> list[tuple[str, str]]:
    """A born-digital PDF of the pages; returns (language, truth) per page."""
    pdf = FPDF(unit="pt", format=A4)
    pdf.set_auto_page_break(False)
    pdf.add_font("sans", fname=str(SANS))
    pdf.add_font("cjk", fname=str(CJK))
    width = A4[0] - 2 * MARGIN
    truths: list[tuple[str, str]] = []
    for language, count, font, size, leading, source in (
        ("en", english, "sans", 10, 12.5, english_paragraphs()),
        ("zh", chinese, "cjk", 11, 16.0, chinese_paragraphs(60)),
    ):
        pdf.set_font(font, size=size)
        lines = wrap(pdf, source, width, cjk=language == "zh")
        per_page = int((A4[1] - 2 * MARGIN) // leading)
        for page in range(count):
            chunk = lines[page * per_page:(page + 1) * per_page]
            if not chunk:
                raise SystemExit(f"not enough {language} text for {count} pages")
            pdf.add_page()
            pdf.set_font(font, size=size)
            for i, line in enumerate(chunk):
                pdf.text(MARGIN, MARGIN + (i + 1) * leading, line)
            truths.append((language, "\n".join(line for line in chunk if line)))
    pdf.output(str(out))
    return truths


def scan(born: Path, out: Path, seed: int = 0) -> None:
    """An image-only PDF: 200 dpi grey JPEG pages, each turned by a small angle."""
    rng = random.Random(seed)
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    doc = pdfium.PdfDocument(str(born))
    for index in range(len(doc)):
        page = doc[index]
        image = page.render(scale=DPI / 72, grayscale=True).to_pil().convert("L")
        image = image.rotate(rng.uniform(-MAX_SKEW, MAX_SKEW), resample=Image.BICUBIC, fillcolor=255)
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=85)
        pdf.add_page(format=A4)
        pdf.image(buf, x=0, y=0, w=A4[0], h=A4[1])
        page.close()
    doc.close()
    pdf.output(str(out))
